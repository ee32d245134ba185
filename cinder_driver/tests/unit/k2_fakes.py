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

"""An adapter wired to a mock typed K2 client, for unit tests."""

from unittest import mock

from cinder.common import constants
from cinder import context
from cinder.tests.unit import fake_snapshot
from cinder.tests.unit import fake_volume
from cinder.tests.unit import test
from cinder.volume import configuration
from cinder.volume import driver as volume_driver
from cinder.volume.drivers.san import san
from oslo_utils import uuidutils

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import options as common_options
from cinder_driver.k2 import client
from cinder_driver.k2 import driver as k2_driver
from cinder_driver.k2 import options as k2_options
from cinder_driver.k2 import protocols
from cinder_driver.k2 import records
from cinder_driver.k2 import replication

CONNECTOR = {'host': 'compute-1',
             'initiator': 'iqn.1993-08.org.debian:01:c1',
             'wwpns': ['10000090FA000001']}
REPLICATION_DEVICE = {'backend_id': 'dr', 'san_ip': '192.0.2.50',
                      'san_login': 'admin', 'san_password': 'pw2'}
ADAPTERS = {constants.ISCSI: protocols.K2ISCSIAdapter,
            constants.FC: protocols.K2FCAdapter}


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


def mock_client(name='K2 test'):
    fake = mock.Mock(spec=client.K2Client)
    fake.name = name
    fake.http = mock.Mock(array_name=name)
    return fake


def volume_record(volume_id, name='cv-x', group_id=7, size=1024 * 1024,
                  description=''):
    return records.Volume(volume_id, name, size, group_id, description)


def group_record(group_id, name='cvg-x', is_dedup=True, volumes_count=1,
                 snapshots_count=0, replicated=False):
    return records.VolumeGroup(group_id, name, is_dedup, volumes_count,
                               snapshots_count, replicated)


def mapping_record(mapping_id, lun=1, host_id=3, target='/volumes/9'):
    return records.Mapping(mapping_id, lun, host_id, target)


def make_conf(test_case, group):
    conf = configuration.Configuration(volume_driver.volume_opts,
                                       config_group=group)
    for opts in (san.san_opts, common_options.rest_opts, k2_options.k2_opts):
        conf.append_config_values(opts)
    for key, value in (('san_ip', '192.0.2.10'), ('san_login', 'admin'),
                       ('san_password', 'pw'),
                       ('volume_backend_name', 'k2-unit')):
        test_case.override_config(key, value, group=group)
    return conf


class AdapterTestCase(test.TestCase):

    PROTOCOL = constants.ISCSI
    GROUP = 'k2-unit'

    def setUp(self):
        super().setUp()
        self.ctx = context.get_admin_context()
        self.conf = make_conf(self, self.GROUP)
        self.client = mock_client()
        self.adapter = self.make_adapter(self.client)

    def make_adapter(self, k2, array_id=None, replication=None):
        made = ADAPTERS[self.PROTOCOL](self.conf, k2, '1.0.0',
                                       array_id=array_id,
                                       replication=replication)
        made.capabilities = {'volume_source': True}
        made.retention_policy_id = 1
        if self.PROTOCOL == constants.ISCSI:
            made.target_iqn = 'iqn.2026-11.io.example:k2'
            made.portals = ['192.0.2.21:3260', '192.0.2.22:3260']
        else:
            made.fc_targets = ['50024f4000000100', '50024f4000000101']
        return made

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


def session(session_id, name, state='in_sync', reason='', generation=0,
            current=None, group_id=None):
    return records.Session(session_id, name, state, reason, generation,
                           current, group_id)


class ReplicatedAdapterTestCase(AdapterTestCase):
    """A driver with a primary and a replication target, both mocked."""

    def setUp(self):
        super().setUp()
        self.override_config('replication_device', [REPLICATION_DEVICE],
                             group=self.GROUP)
        self.secondary = mock_client('K2 dr')
        self.manager = replication.ReplicationManager(
            self.conf, replication.parse_device(self.conf), self.client,
            self.secondary)
        self.manager._peers = {id(self.client): 1}
        self.driver = k2_driver.K2ISCSIDriver(configuration=self.conf,
                                              host='cinder@k2-unit')
        self.driver.replication = self.manager
        self.driver.adapters = {
            'default': self.make_adapter(self.client,
                                         replication=self.manager),
            'dr': self.make_adapter(self.secondary, array_id='dr',
                                    replication=self.manager)}
        for made in self.driver.adapters.values():
            made.load = mock.Mock()
        self.adapter = self.driver.adapters['default']
        self.client.source_sessions.return_value = []

    def serve_stats(self):
        self.client.capacity.return_value = records.Capacity(10, 5, 1, 1, 1)
        self.client.performance.return_value = {
            'read_iops_avg': 0, 'write_iops_avg': 0, 'throughput_avg': 0,
            'latency_avg': 0}
