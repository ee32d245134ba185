from cinder.common import constants
from cinder import exception

from cinder_driver.tests.unit import k2_fakes

CONNECTOR = k2_fakes.CONNECTOR


class ISCSIAttachTestCase(k2_fakes.AdapterTestCase):

    def test_new_host_and_connection_info(self):
        self.client.find.return_value = None
        self.client.create.side_effect = [{'id': 3}, {'id': 1},
                                          {'id': 8, 'lun': 4}]
        vol = self.volume()
        info = self.adapter.initialize_connection(vol, CONNECTOR)
        calls = [c.args[0] for c in self.client.create.call_args_list]
        self.assertEqual(['hosts', 'host_iqns', 'mappings'], calls)
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
        self.client.create.side_effect = [
            k2_fakes.exists(), {'id': 8, 'lun': 2},
            {'id': 9, 'lun': 3}]
        self.client.search.return_value = [{'id': 1, 'host':
                                            {'ref': '/hosts/3'}}]
        self.adapter.initialize_connection(self.volume(), CONNECTOR)
        self.adapter.initialize_connection(self.volume(), CONNECTOR)
        self.client.search.assert_called_once_with(
            'host_iqns', iqn__in=CONNECTOR['initiator'])
        self.assertEqual(['hosts', 'mappings', 'mappings'],
                         [c.args[0] for c in
                          self.client.create.call_args_list])

    def test_existing_host_name_gets_the_new_initiator(self):
        self.client.search.return_value = []
        self.client.find.return_value = {'id': 3, 'name': 'compute-1'}
        self.client.create.side_effect = [k2_fakes.exists(),
                                          {'id': 1}, {'id': 8, 'lun': 1}]
        self.adapter.initialize_connection(self.volume(), CONNECTOR)
        iqn_call = self.client.create.call_args_list[1]
        self.assertEqual(('host_iqns', {'iqn': CONNECTOR['initiator'],
                                        'host': {'ref': '/hosts/3'}}),
                         iqn_call.args)

    def test_initiator_of_another_host_wins(self):
        self.client.create.side_effect = [
            {'id': 5}, k2_fakes.exists(),
            {'id': 8, 'lun': 1}]
        self.client.search.return_value = [{'id': 1, 'host':
                                            {'ref': '/hosts/3'}}]
        self.adapter.initialize_connection(self.volume(), CONNECTOR)
        self.client.delete.assert_called_once_with('hosts', 5)
        self.assertEqual({'ref': '/hosts/3'},
                         self.client.create.call_args_list[2].args[1][
                             'host'])

    def test_already_mapped_returns_existing_lun(self):
        self.adapter._hosts[('host_iqns', (CONNECTOR['initiator'],))] = 3
        self.client.create.side_effect = k2_fakes.exists('mapped')
        self.client.find.return_value = {'id': 8, 'lun': 6}
        info = self.adapter.initialize_connection(self.volume(), CONNECTOR)
        self.assertEqual(6, info['data']['target_lun'])

    def test_missing_initiator(self):
        self.assertRaises(exception.InvalidConnectorException,
                          self.adapter.initialize_connection, self.volume(),
                          {'host': 'h'})
        self.client.create.assert_not_called()

    def test_detach_known_host(self):
        self.adapter._hosts[('host_iqns', (CONNECTOR['initiator'],))] = 3
        self.client.search.return_value = [{'id': 8}]
        self.assertFalse(self.adapter.terminate_connection(self.volume(),
                                                           CONNECTOR))
        self.client.search.assert_called_once_with(
            'mappings', **{'volume.ref': '/volumes/9',
                           'host.ref': '/hosts/3'})
        self.client.delete.assert_called_once_with('mappings', 8)

    def test_detach_unknown_host_is_success(self):
        self.client.search.return_value = []
        self.adapter.terminate_connection(self.volume(), CONNECTOR)
        self.client.delete.assert_not_called()
        self.client.create.assert_not_called()

    def test_force_detach_removes_every_mapping_of_the_volume(self):
        self.client.search.return_value = [{'id': 8}, {'id': 11}]
        self.adapter.terminate_connection(self.volume(), None)
        self.client.search.assert_called_once_with(
            'mappings', **{'volume.ref': '/volumes/9'})
        self.assertEqual(2, self.client.delete.call_count)


class FCAttachTestCase(k2_fakes.AdapterTestCase):

    PROTOCOL = constants.FC

    def test_fc_connection_info(self):
        self.client.create.side_effect = [
            k2_fakes.exists(), {'id': 8, 'lun': 2}]
        self.client.search.return_value = [{'id': 1, 'host':
                                            {'ref': '/hosts/3'}}]
        info = self.adapter.initialize_connection(self.volume(), CONNECTOR)
        self.client.search.assert_called_once_with(
            'host_fc_ports', pwwn__in='10:00:00:90:fa:00:00:01')
        self.assertEqual({'10000090fa000001': self.adapter.fc_targets},
                         info['data']['initiator_target_map'])
        self.assertEqual('fibre_channel', info['driver_volume_type'])

    def test_detach_reports_idle_host(self):
        self.adapter._hosts[('host_fc_ports',
                             ('10:00:00:90:fa:00:00:01',))] = 3
        self.client.search.side_effect = [[{'id': 8}], []]
        self.assertTrue(self.adapter.terminate_connection(self.volume(),
                                                          CONNECTOR))


class CHAPTestCase(k2_fakes.AdapterTestCase):

    def setUp(self):
        super().setUp()
        self.override_config('use_chap_auth', True, group=self.GROUP)

    def test_new_host_gets_a_profile_and_credentials(self):
        self.client.find.return_value = None
        self.client.create.side_effect = [{'id': 5}, {'id': 3}, {'id': 1},
                                          {'id': 8, 'lun': 2}]
        info = self.adapter.initialize_connection(self.volume(), CONNECTOR)
        kinds = [c.args[0] for c in self.client.create.call_args_list]
        self.assertEqual(['host_auth_profiles', 'hosts', 'host_iqns',
                          'mappings'], kinds)
        profile = self.client.create.call_args_list[0].args[1]
        host = self.client.create.call_args_list[1].args[1]
        self.assertEqual({'ref': '/host_auth_profiles/5'},
                         host['host_auth_profile'])
        data = info['data']
        self.assertEqual(('CHAP', profile['username'], profile['secret']),
                         (data['auth_method'], data['auth_username'],
                          data['auth_password']))

    def test_derived_secret_is_per_host_and_keyed(self):
        a = self.adapter._chap('compute-1')
        self.assertEqual(a, self.adapter._chap('compute-1'))
        self.assertNotEqual(a[1], self.adapter._chap('compute-2')[1])
        self.override_config('san_password', 'other', group=self.GROUP)
        self.assertNotEqual(a[1], self.adapter._chap('compute-1')[1])
        self.assertNotIn('pw', a[1])

    def test_configured_credentials_win(self):
        self.override_config('chap_username', 'u', group=self.GROUP)
        self.override_config('chap_password', 'secret-of-12', group=self.GROUP)
        self.assertEqual(('u', 'secret-of-12'), self.adapter._chap('h'))

    def test_off_by_default(self):
        self.override_config('use_chap_auth', False, group=self.GROUP)
        self.assertIsNone(self.adapter._chap('h'))
