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

"""Two live reference arrays paired for replication, a driver on them."""

import os
import time

import fixtures

from cinder_driver.tests.functional import k2_driver_base
from reference_array.tests import array_fixture
from reference_array.tests import iscsi_client

CONNECTOR = k2_driver_base.CONNECTOR
MIB = 1024 * 1024
SYNC_TIMEOUT = 60


class K2ReplicationBase(k2_driver_base.K2DriverTestCase):

    def setUp(self):
        self.peer = None
        super().setUp()

    def make_driver(self, driver_kwargs=None, **overrides):
        if self.peer is None:
            self.peer = self.useFixture(array_fixture.ReferenceArray(
                args=['--capacity-gib', '256']))
            self.array.pair_with(self.peer)
            self.peer.pair_with(self.array)
        device = {'backend_id': 'secondary',
                  'san_ip': self.peer.k2_host,
                  'san_api_port': str(self.peer.k2_port),
                  'san_login': self.peer.info['user'],
                  'san_password': self.peer.info['password'],
                  'driver_ssl_cert_path': self.peer.info['ca_cert']}
        overrides.setdefault('replication_device', [device])
        overrides.setdefault('k2_replication_timeout', SYNC_TIMEOUT)
        return super().make_driver(driver_kwargs, **overrides)

    def replicated_type(self):
        return self.volume_type(replication_enabled='<is> True')

    def session(self, array, vol):
        return self.session_named(array, 'crs-%s' % vol.name_id)

    def session_named(self, array, name):
        return array.k2_client().find('replication/sessions', name=name)

    def sync(self, vol, name=None):
        """Ask the primary for a cycle now and wait until it is done
        (the session of ``vol``, or the one called ``name``).
        """
        k2 = self.array.k2_client()
        deadline = time.monotonic() + SYNC_TIMEOUT
        # A cycle already shipping may predate what the test just did.
        before = self.session_named(self.array,
                                    name or 'crs-%s' % vol.name_id)
        while before['current_snapshot_id'] is not None:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
            before = k2.get('replication/sessions', before['id'])
        k2.update('replication/sessions', before['id'], {'state': 'in_sync'})
        while time.monotonic() < deadline:
            now = k2.get('replication/sessions', before['id'])
            if now['generation_number'] > before['generation_number'] and \
                    now['current_snapshot_id'] is None:
                return now
            time.sleep(0.1)
        self.fail('no replication cycle finished in %ss' % SYNC_TIMEOUT)

    def lun(self, driver, vol, array):
        """The LUN the driver hands out, reached on ``array``'s portal.

        Test arrays listen on random iSCSI ports, which K2's net_ips
        cannot tell; the target IQN says which array answered.
        """
        info = driver.initialize_connection(vol, CONNECTOR)
        self.assertEqual(array.info['iqn'], info['data']['target_iqn'])
        return iscsi_client.url(array.info['iscsi_portal'],
                                array.info['iqn'], info['data']['target_lun'],
                                CONNECTOR['initiator'])

    def data(self, name, size=4 * MIB):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, name)
        with open(path, 'wb') as f:
            f.write(os.urandom(size))
        return path

    def assert_reads(self, target, path):
        result, expected, got = iscsi_client.read_back(target, path)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual(expected, got)

    def stall(self, name):
        """Stop the peer, have session ``name`` try a cycle and wait
        until it reports why it failed; the backend's replication_status.
        """
        self.peer.stop()
        k2 = self.array.k2_client()
        session = self.session_named(self.array, name)
        k2.update('replication/sessions', session['id'], {'state': 'in_sync'})
        deadline = time.monotonic() + SYNC_TIMEOUT
        while not k2.get('replication/sessions',
                         session['id'])['state_reason']:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.1)
        self.driver.adapter._stats = None
        return self.driver.get_volume_stats(
            refresh=True)['replication_status']
