# Copyright 2026 The cinder-flash Authors
#
#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.

"""A LINSTOR adapter wired to a mock client, for unit tests."""

from unittest import mock

from cinder import context
from cinder import objects as cinder_objects
from cinder.tests.unit import test
from cinder.volume import configuration
from cinder.volume import driver as volume_driver

from cinder_driver.common import options as common_options
from cinder_driver.linstor import adapter
from cinder_driver.linstor import client
from cinder_driver.linstor import options as linstor_options
from cinder_driver.tests import objects

GROUP = 'linstor-unit'


def rc(code, message='done', kind='ok'):
    mask = {'ok': 0, 'error': 0xC000000000000000,
            'warn': 0x8000000000000000}[kind]
    value = mask | code
    if value >= 1 << 63:
        value -= 1 << 64
    return {'ret_code': value, 'message': message}


def refusal(code, message='refused', status=500, before=()):
    """LINSTOR's refusal with an error entry of that code.

    ``before``: entries the answer holds ahead of the error.
    """
    return client.LinstorRefusal(
        array='LINSTOR test', method='X', path='/x', reason=message,
        status=status, entries=list(before) + [rc(code, message, 'error')])


def make_conf(test_case, **overrides):
    conf = configuration.Configuration(volume_driver.volume_opts,
                                       config_group=GROUP)
    # backup_opts: registered by the driver's base class, which a test
    # may override before making a driver.
    for opts in (common_options.rest_opts, linstor_options.linstor_opts,
                 volume_driver.backup_opts):
        conf.append_config_values(opts)
    options = {'linstor_uris': ['linstor://192.0.2.30'],
               'linstor_local_node': 'cinder-1',
               'volume_backend_name': GROUP}
    options.update(overrides)
    for key, value in options.items():
        test_case.override_config(key, value, group=GROUP)
    return conf


class LinstorTestCase(test.TestCase):
    """Cinder objects on a backend whose default pool is POOL."""

    POOL = 'DfltStorPool'

    def setUp(self):
        super().setUp()
        self.ctx = context.get_admin_context()

    def vtype(self, **specs):
        return objects.volume_type(self.ctx, **specs)

    def volume(self, size=1, vtype=None, pool=None, provider_id=None,
               **updates):
        vol = objects.volume(self.ctx, size, vtype, provider_id,
                             host='cinder@%s#%s' % (GROUP, pool or
                                                    self.POOL), **updates)
        vol.volume_attachment = cinder_objects.VolumeAttachmentList(
            objects=[])
        return vol

    def snapshot(self, vol):
        return objects.snapshot(self.ctx, vol)

    def rd(self, vol):
        return 'volume-%s' % vol.name_id


class AdapterTestCase(LinstorTestCase):
    """The adapter with a mock client."""

    def setUp(self):
        super().setUp()
        self.conf = make_conf(self)
        self.adapter = adapter.LinstorAdapter(self.conf, 'DRBD', '1.0.0')
        self.client = mock.Mock(spec=client.LinstorClient)
        self.client.name = 'LINSTOR test'
        self.client.resource_group.return_value = None
        self.adapter.client = self.client
        self.adapter.local_node = 'cinder-1'
        self.adapter._sleep = lambda seconds: None


class ControllerTestCase(LinstorTestCase):
    """The adapter and its real client against a faked controller."""

    POOL = 'filethin'

    def setUp(self):
        super().setUp()
        from cinder_driver.tests.unit import linstor_controller
        self.conf = make_conf(self, linstor_storage_pool=self.POOL,
                              flash_rest_retries=4)
        self.adapter = adapter.LinstorAdapter(self.conf, 'DRBD', '1.1.0')
        self.adapter.do_setup()
        self.adapter._sleep = lambda seconds: None
        self.slept = []
        for session in self.adapter.client.sessions:
            session._sleep = self.slept.append
        self.linstor = linstor_controller.mount(self.adapter.client)

    def rg(self, vtype):
        return self.adapter.rg_name(vtype, self.POOL)

    def sent(self, method=None):
        """'METHOD path' of the requests so far (of one method)."""
        return [r for r in self.linstor.requests()
                if method is None or r.startswith(method + ' ')]
