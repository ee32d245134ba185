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

"""K2 driver: attach and detach over iSCSI and FC on a live array."""

import copy

from cinder.tests.unit import fake_constants  # noqa: F401

from cinder_driver.k2 import driver as k2_driver
from cinder_driver.tests.functional import k2_driver_base

CONNECTOR = k2_driver_base.CONNECTOR


class K2ISCSIAttachTestCase(k2_driver_base.K2DriverTestCase):

    def _mappings(self, vol):
        return self.array.k2_client().search('mappings', **{
            'volume.ref': '/volumes/%s' % vol.provider_id.split('/')[1]})

    def test_first_attach_then_cached(self):
        vol = self.create()
        info, sent = self.count(self.driver.initialize_connection, vol,
                                CONNECTOR)
        # New host: create host and IQN, map.
        self.assertEqual(['POST /api/v2/hosts', 'POST /api/v2/host_iqns',
                          'POST /api/v2/mappings'], sent)
        data = info['data']
        self.assertEqual('iscsi', info['driver_volume_type'])
        state = self.array.k2_client().system_state()
        self.assertEqual(state['iscsi_qualified_target_name'],
                         data['target_iqn'])
        self.assertEqual('127.0.0.1:3260', data['target_portal'])
        self.assertEqual([data['target_lun']], data['target_luns'])
        self.assertEqual(1, len(self._mappings(vol)))
        vol2 = self.create()
        info2, sent = self.count(self.driver.initialize_connection, vol2,
                                 CONNECTOR)
        self.assertEqual(['POST /api/v2/mappings'], sent)
        self.assertNotEqual(data['target_lun'], info2['data']['target_lun'])

    def test_known_host_after_restart_attaches_in_three_calls(self):
        vol = self.create()
        self.driver.initialize_connection(vol, CONNECTOR)
        fresh = self.make_driver()
        vol2 = self.create()
        _info, sent = self.count(fresh.initialize_connection, vol2,
                                 CONNECTOR)
        # Its name is taken; found by initiator; mapped.
        self.assertEqual(3, len(sent), sent)
        self.assertEqual(1, len(self.array.k2_client().search('hosts')))

    def test_attach_already_mapped_returns_existing_lun(self):
        vol = self.create()
        first = self.driver.initialize_connection(vol, CONNECTOR)
        again = self.driver.initialize_connection(vol, CONNECTOR)
        self.assertEqual(first['data']['target_lun'],
                         again['data']['target_lun'])
        self.assertEqual(1, len(self._mappings(vol)))

    def test_detach_round_trips_and_idempotence(self):
        vol = self.create()
        self.driver.initialize_connection(vol, CONNECTOR)
        _r, sent = self.count(self.driver.terminate_connection, vol,
                              CONNECTOR)
        self.assertLessEqual(len(sent), 2)
        self.assertEqual([], self._mappings(vol))
        # Already unmapped: still success.
        self.driver.terminate_connection(vol, CONNECTOR)

    def test_force_detach_removes_only_this_volumes_mappings(self):
        vol, other = self.create(), self.create()
        second = dict(CONNECTOR, host='compute-2',
                      initiator='iqn.1993-08.org.debian:01:compute2')
        for conn in (CONNECTOR, second):
            self.driver.initialize_connection(vol, conn)
        self.driver.initialize_connection(other, CONNECTOR)
        self.driver.terminate_connection(vol, None)
        self.assertEqual([], self._mappings(vol))
        self.assertEqual(1, len(self._mappings(other)))

    def test_multiattach_to_two_hosts(self):
        vol = self.create()
        second = dict(CONNECTOR, host='compute-2',
                      initiator='iqn.1993-08.org.debian:01:compute2')
        self.driver.initialize_connection(vol, CONNECTOR)
        self.driver.initialize_connection(vol, second)
        self.assertEqual(2, len(self._mappings(vol)))
        self.driver.terminate_connection(vol, second)
        remaining = self._mappings(vol)
        self.assertEqual(1, len(remaining))

    def test_long_host_names_stay_distinct(self):
        base = 'compute-node-in-a-very-long-rack-name-'
        vol = self.create()
        for n in (1, 2):
            conn = dict(CONNECTOR, host=base + str(n),
                        initiator='iqn.1993-08.org.debian:01:long%d' % n)
            self.driver.initialize_connection(vol, conn)
        names = [h['name'] for h in self.array.k2_client().search('hosts')]
        self.assertEqual(2, len(set(names)))
        self.assertTrue(all(len(n) <= 32 for n in names))

    def test_connector_without_initiator(self):
        from cinder import exception
        vol = self.create()
        conn = copy.deepcopy(CONNECTOR)
        del conn['initiator']
        self.assertRaises(exception.InvalidConnectorException,
                          self.driver.initialize_connection, vol, conn)
        self.assertEqual([], self.array.k2_client().search('hosts'))

    def test_portal_filter(self):
        drv = self.make_driver(k2_iscsi_portals=['127.0.0.1:3261'])
        vol = self.create()
        info = drv.initialize_connection(vol, CONNECTOR)
        self.assertEqual(['127.0.0.1:3261'], info['data']['target_portals'])


class K2FCAttachTestCase(k2_driver_base.K2DriverTestCase):

    DRIVER = k2_driver.K2FCDriver

    def test_fc_attach_detach_with_zones(self):
        vol = self.create()
        added, removed = [], []
        self.mock_object(k2_driver.fczm_utils, 'add_fc_zone', added.append)
        self.mock_object(k2_driver.fczm_utils, 'remove_fc_zone',
                         removed.append)
        info = self.driver.initialize_connection(vol, CONNECTOR)
        data = info['data']
        self.assertEqual('fibre_channel', info['driver_volume_type'])
        ports = self.array.k2_client().search('system/fc_ports')
        targets = sorted(p['pwwn'].replace(':', '') for p in ports)
        self.assertEqual(targets, sorted(data['target_wwn']))
        self.assertEqual(set(CONNECTOR['wwpns']),
                         set(data['initiator_target_map']))
        self.assertEqual([info], added)
        pwwns = {p['pwwn'] for p in
                 self.array.k2_client().search('host_fc_ports')}
        self.assertIn('10:00:00:90:fa:00:00:01', pwwns)
        vol2 = self.create()
        self.driver.initialize_connection(vol2, CONNECTOR)
        self.driver.terminate_connection(vol, CONNECTOR)
        # The host still has vol2: its zones stay.
        self.assertEqual([], removed)
        self.driver.terminate_connection(vol2, CONNECTOR)
        self.assertEqual(1, len(removed))
        self.assertEqual(set(CONNECTOR['wwpns']),
                         set(removed[0]['data']['initiator_target_map']))
