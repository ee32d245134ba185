"""An adapter wired to a mock K2 client, for unit tests."""

from unittest import mock

from cinder.common import constants
from cinder import context
from cinder.tests.unit import fake_snapshot
from cinder.tests.unit import fake_volume
from cinder.tests.unit import test
from cinder.volume import configuration
from cinder.volume import driver as volume_driver
from oslo_utils import uuidutils

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import options as common_options
from cinder_driver.k2 import adapter
from cinder_driver.k2 import options as k2_options
from cinder_driver.k2 import rest

CONNECTOR = {'host': 'compute-1',
             'initiator': 'iqn.1993-08.org.debian:01:c1',
             'wwpns': ['10000090FA000001']}


def api_error(status, text='refused', kind=None):
    cls = kind or {404: flash_exception.ObjectNotFound}.get(
        status, flash_exception.ArrayAPIError)
    return cls(message='K2 test: X /x failed: %s' % text, status=status,
               error_code=text)


def exists(text='exists'):
    """A refused create (K2: HTTP 400)."""
    return api_error(400, text, flash_exception.ObjectExists)


def busy(text='in use'):
    """A refused delete (K2: HTTP 400)."""
    return api_error(400, text, flash_exception.ObjectBusy)


class AdapterTestCase(test.TestCase):

    PROTOCOL = constants.ISCSI
    GROUP = 'k2-unit'

    def setUp(self):
        super().setUp()
        self.ctx = context.get_admin_context()
        conf = configuration.Configuration(volume_driver.volume_opts,
                                           config_group=self.GROUP)
        from cinder.volume.drivers.san import san
        for opts in (san.san_opts, common_options.rest_opts,
                     k2_options.k2_opts):
            conf.append_config_values(opts)
        for key, value in (('san_ip', '192.0.2.10'), ('san_login', 'admin'),
                           ('san_password', 'pw'),
                           ('volume_backend_name', 'k2-unit')):
            self.override_config(key, value, group=self.GROUP)
        self.conf = conf
        self.adapter = adapter.K2Adapter(conf, self.PROTOCOL, '1.0.0')
        self.client = mock.Mock(spec=rest.K2Rest)
        self.client.http = mock.Mock(array_name='K2 test')
        # Lost answers are the client's business (test_k2_client): here a
        # unique create is a create.
        self.client.create_unique.side_effect = (
            lambda resource, body, **key: self.client.create(resource, body))
        self.adapter.client = self.client
        self.adapter.capabilities = {'volume_source': True}
        self.adapter.target_iqn = 'iqn.2026-11.io.example:k2'
        self.adapter.portals = ['192.0.2.21:3260', '192.0.2.22:3260']
        self.adapter.fc_targets = ['50024f4000000100', '50024f4000000101']
        self.adapter.retention_policy = {'ref': '/retention_policies/1'}

    def volume(self, provider_id='7/9', size=1, **specs):
        vol = fake_volume.fake_volume_obj(
            self.ctx, id=uuidutils.generate_uuid(), size=size,
            provider_id=provider_id)
        vol.volume_type = fake_volume.fake_volume_type_obj(
            self.ctx, id=uuidutils.generate_uuid(), extra_specs=specs)
        return vol

    def snapshot(self, vol, provider_id='3/4'):
        snap = fake_snapshot.fake_snapshot_obj(
            self.ctx, id=uuidutils.generate_uuid(), volume_id=vol.id,
            provider_id=provider_id)
        snap.volume = vol
        return snap
