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

from unittest import mock

from cinder.common import constants
from cinder import exception

from cinder_driver.tests.unit import k2_fakes

CONNECTOR = k2_fakes.CONNECTOR
IQN = CONNECTOR['initiator']
WWPN = '10:00:00:90:fa:00:00:01'


class ISCSIAttachTestCase(k2_fakes.AdapterTestCase):

    def test_new_host_and_connection_info(self):
        self.client.create_host.return_value = 3
        self.client.map_volume.return_value = 4
        vol = self.volume()
        info = self.adapter.initialize_connection(vol, CONNECTOR)
        self.client.create_host.assert_called_once_with('compute-1', None)
        self.client.add_initiator.assert_called_once_with('iscsi', 3, IQN)
        self.client.map_volume.assert_called_once_with(3, 9)
        self.assertEqual({
            'driver_volume_type': 'iscsi',
            'data': {'target_discovered': False,
                     'target_iqn': 'iqn.2026-11.io.example:k2',
                     'target_portal': '192.0.2.21:3260', 'target_lun': 4,
                     'target_iqns': ['iqn.2026-11.io.example:k2'] * 2,
                     'target_portals': ['192.0.2.21:3260',
                                        '192.0.2.22:3260'],
                     'target_luns': [4, 4], 'volume_id': vol.id,
                     'discard': True}}, info)

    def test_known_host_found_by_initiator_is_cached(self):
        # Its name is taken: the host is then found by initiator.
        self.client.create_host.side_effect = k2_fakes.exists()
        self.client.host_of_initiators.return_value = 3
        self.client.map_volume.side_effect = [2, 3]
        self.adapter.initialize_connection(self.volume(), CONNECTOR)
        self.adapter.initialize_connection(self.volume(), CONNECTOR)
        self.client.host_of_initiators.assert_called_once_with('iscsi',
                                                               [IQN])
        self.client.create_host.assert_called_once()
        self.assertEqual([mock.call(3, 9)] * 2,
                         self.client.map_volume.call_args_list)

    def test_existing_host_name_gets_the_new_initiator(self):
        self.client.create_host.side_effect = k2_fakes.exists()
        self.client.host_of_initiators.return_value = None
        self.client.host_by_name.return_value = 3
        self.adapter.initialize_connection(self.volume(), CONNECTOR)
        self.client.add_initiator.assert_called_once_with('iscsi', 3, IQN)
        self.client.map_volume.assert_called_once_with(3, 9)

    def test_refused_host_without_namesake_is_an_error(self):
        self.client.create_host.side_effect = k2_fakes.exists()
        self.client.host_of_initiators.return_value = None
        self.client.host_by_name.return_value = None
        self.assertRaises(exception.VolumeBackendAPIException,
                          self.adapter.initialize_connection, self.volume(),
                          CONNECTOR)
        self.client.map_volume.assert_not_called()

    def test_initiator_of_another_host_wins(self):
        self.client.create_host.return_value = 5
        self.client.add_initiator.side_effect = k2_fakes.exists()
        self.client.host_of_initiators.return_value = 3
        self.adapter.initialize_connection(self.volume(), CONNECTOR)
        self.client.delete_host.assert_called_once_with(5)
        self.client.map_volume.assert_called_once_with(3, 9)

    def test_host_removed_on_the_array_is_made_again(self):
        self.adapter.hosts._hosts[(IQN,)] = 3
        self.client.map_volume.side_effect = [k2_fakes.api_error(404), 6]
        self.client.create_host.return_value = 8
        info = self.adapter.initialize_connection(self.volume(), CONNECTOR)
        self.assertEqual(6, info['data']['target_lun'])
        self.assertEqual([mock.call(3, 9), mock.call(8, 9)],
                         self.client.map_volume.call_args_list)

    def test_missing_initiator(self):
        self.assertRaises(exception.InvalidConnectorException,
                          self.adapter.initialize_connection, self.volume(),
                          {'host': 'h'})
        self.client.create_host.assert_not_called()

    def test_detach_known_host(self):
        self.adapter.hosts._hosts[(IQN,)] = 3
        mappings = [k2_fakes.mapping_record(8)]
        self.client.mappings_of.return_value = mappings
        self.assertIsNone(self.adapter.terminate_connection(self.volume(),
                                                            CONNECTOR))
        self.client.mappings_of.assert_called_once_with(volume_id=9,
                                                        host_id=3)
        self.client.unmap.assert_called_once_with(mappings)

    def test_detach_unknown_host_is_success(self):
        self.client.host_of_initiators.return_value = None
        self.adapter.terminate_connection(self.volume(), CONNECTOR)
        self.client.unmap.assert_not_called()
        self.client.create_host.assert_not_called()

    def test_force_detach_removes_every_mapping_of_the_volume(self):
        mappings = [k2_fakes.mapping_record(8),
                    k2_fakes.mapping_record(11, host_id=4)]
        self.client.mappings_of.return_value = mappings
        self.adapter.terminate_connection(self.volume(), None)
        self.client.mappings_of.assert_called_once_with(volume_id=9)
        self.client.unmap.assert_called_once_with(mappings)


class FCAttachTestCase(k2_fakes.AdapterTestCase):

    PROTOCOL = constants.FC

    def test_fc_connection_info(self):
        self.client.create_host.side_effect = k2_fakes.exists()
        self.client.host_of_initiators.return_value = 3
        self.client.map_volume.return_value = 2
        info = self.adapter.initialize_connection(self.volume(), CONNECTOR)
        self.client.host_of_initiators.assert_called_once_with('fc', [WWPN])
        self.assertEqual({'10000090fa000001': self.adapter.fc_targets},
                         info['data']['initiator_target_map'])
        self.assertEqual('fibre_channel', info['driver_volume_type'])
        self.assertEqual(2, info['data']['target_lun'])

    def test_detach_reports_idle_host(self):
        self.adapter.hosts._hosts[(WWPN,)] = 3
        self.client.mappings_of.side_effect = [
            [k2_fakes.mapping_record(8)], []]
        info = self.adapter.terminate_connection(self.volume(), CONNECTOR)
        self.assertEqual(self.adapter.fc_targets, info['data']['target_wwn'])
        self.assertEqual(mock.call(host_id=3),
                         self.client.mappings_of.call_args_list[1])

    def test_fc_hosts_log_in_without_chap(self):
        self.override_config('use_chap_auth', True, group=self.GROUP)
        self.assertIsNone(self.adapter.chap('compute-1'))

    def test_detach_keeps_zones_of_a_busy_host(self):
        self.adapter.hosts._hosts[(WWPN,)] = 3
        self.client.mappings_of.side_effect = [
            [k2_fakes.mapping_record(8)], [k2_fakes.mapping_record(9)]]
        info = self.adapter.terminate_connection(self.volume(), CONNECTOR)
        self.assertEqual({}, info['data'])


class CHAPTestCase(k2_fakes.AdapterTestCase):

    def setUp(self):
        super().setUp()
        self.override_config('use_chap_auth', True, group=self.GROUP)

    def test_new_host_gets_a_profile_and_credentials(self):
        self.client.ensure_auth_profile.return_value = 5
        self.client.create_host.return_value = 3
        self.client.map_volume.return_value = 2
        info = self.adapter.initialize_connection(self.volume(), CONNECTOR)
        name, user, secret = self.client.ensure_auth_profile.call_args.args
        self.client.create_host.assert_called_once_with('compute-1', 5)
        data = info['data']
        self.assertEqual(('CHAP', user, secret),
                         (data['auth_method'], data['auth_username'],
                          data['auth_password']))

    def test_known_host_gets_the_profile(self):
        self.client.ensure_auth_profile.return_value = 5
        self.client.create_host.side_effect = k2_fakes.exists()
        self.client.host_of_initiators.return_value = 3
        self.adapter.initialize_connection(self.volume(), CONNECTOR)
        self.client.set_host_auth_profile.assert_called_once_with(3, 5)

    def test_derived_secret_is_per_host_and_keyed(self):
        a = self.adapter.chap('compute-1')
        self.assertEqual(a, self.adapter.chap('compute-1'))
        self.assertNotEqual(a[1], self.adapter.chap('compute-2')[1])
        self.override_config('san_password', 'other', group=self.GROUP)
        self.assertNotEqual(a[1], self.adapter.chap('compute-1')[1])
        self.assertNotIn('pw', a[1])

    def test_configured_credentials_win(self):
        self.override_config('chap_username', 'u', group=self.GROUP)
        self.override_config('chap_password', 'secret-of-12', group=self.GROUP)
        self.assertEqual(('u', 'secret-of-12'), self.adapter.chap('h'))

    def test_off_by_default(self):
        self.override_config('use_chap_auth', False, group=self.GROUP)
        self.assertIsNone(self.adapter.chap('h'))
