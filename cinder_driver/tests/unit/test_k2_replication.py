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

"""K2 adapter: replication_device parsing, replicated volumes, failover."""

from unittest import mock

from cinder import exception
from cinder.objects import fields
import ddt

from cinder_driver.common import exception as flash_exception
from cinder_driver.k2 import driver as k2_driver
from cinder_driver.k2 import replication
from cinder_driver.tests.unit import k2_fakes

DEVICE = k2_fakes.REPLICATION_DEVICE


@ddt.ddt
class DeviceTestCase(k2_fakes.AdapterTestCase):

    def parse(self, *devices):
        self.override_config('replication_device', list(devices),
                             group=self.GROUP)
        return replication.parse_device(self.conf)

    def test_no_device(self):
        self.assertIsNone(replication.parse_device(self.conf))

    def test_our_form(self):
        dev = self.parse(dict(DEVICE, san_api_port='8443', rpo='300'))
        self.assertEqual(('dr', '192.0.2.50', 8443, 300, True),
                         (dev['backend_id'], dev['san_ip'], dev['port'],
                          dev['rpo'], dev['verify']))

    def test_in_tree_form(self):
        dev = self.parse({'backend_id': '192.0.2.60:8443', 'login': 'a',
                          'password': 'b'})
        self.assertEqual(('192.0.2.60', 8443, 'a', 'b', 60),
                         (dev['san_ip'], dev['port'], dev['login'],
                          dev['password'], dev['rpo']))

    def test_certificate_and_verification(self):
        dev = self.parse(dict(DEVICE, driver_ssl_cert_path='/etc/dr.pem'))
        self.assertEqual('/etc/dr.pem', dev['verify'])
        dev = self.parse(dict(DEVICE, driver_ssl_cert_verify='False'))
        self.assertIs(False, dev['verify'])

    @ddt.data(({'rpo': '90'}, 'rpo'), ({'rpo': 'soon'}, 'rpo'),
              ({'colour': 'red'}, 'colour'),
              ({'backend_id': 'default'}, 'backend_id'),
              ({'san_login': ''}, 'san_login'),
              ({'san_api_port': '70000'}, 'san_api_port'),
              ({'driver_ssl_cert_verify': 'maybe'},
               'driver_ssl_cert_verify'))
    @ddt.unpack
    def test_bad_values_are_named(self, change, named):
        e = self.assertRaises(flash_exception.InvalidBackendConfig,
                              self.parse, dict(DEVICE, **change))
        self.assertIn(named, str(e))

    def test_one_target_only(self):
        e = self.assertRaises(flash_exception.InvalidBackendConfig,
                              self.parse, DEVICE, dict(DEVICE,
                                                       backend_id='dr2'))
        self.assertIn('dr2', str(e))


session = k2_fakes.session


class ReplicatedTestCase(k2_fakes.ReplicatedAdapterTestCase):

    def replicated(self, provider_id='7/9', replication_status=None):
        vol = self.volume(provider_id, replication_enabled='<is> True')
        vol.replication_status = replication_status
        return vol

    def test_create_starts_a_session(self):
        self.client.create_volume_group.return_value = 7
        self.client.create_volume.return_value = 9
        self.client.create_session.return_value = 5
        vol = self.replicated(provider_id=None)
        update = self.adapter.create_volume(vol)
        self.assertEqual('7/9', update['provider_id'])
        self.assertEqual(fields.ReplicationStatus.ENABLED,
                         update['replication_status'])
        self.client.create_session.assert_called_once_with(
            'crs-%s' % vol.name_id, 1, 7, 'cvg-%s' % vol.name_id, 60)
        self.client.add_peer_volume.assert_called_once_with(
            5, 9, 'cv-%s' % vol.name_id)
        self.client.set_session_state.assert_called_once_with(5, 'in_sync')

    def test_failed_start_undoes_everything(self):
        self.client.create_volume_group.return_value = 7
        self.client.create_volume.return_value = 9
        self.client.create_session.return_value = 5
        self.client.add_peer_volume.side_effect = k2_fakes.api_error(500)
        self.client.session_by_name.return_value = session(5, 'crs')
        self.secondary.session_by_name.return_value = None
        self.secondary.volume_by_name.return_value = None
        self.secondary.volume_group_by_name.return_value = None
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.create_volume,
                          self.replicated(provider_id=None))
        # The peer was asked for a copy it may hold: looked for there too.
        self.secondary.session_by_name.assert_called_once_with(mock.ANY)
        self.client.delete_session.assert_called_once_with(5)
        self.client.delete_volume.assert_called_once_with(9)
        self.client.delete_volume_group.assert_called_once_with(7)

    def test_no_replicated_create_while_failed_over(self):
        self.driver.failover_completed(self.ctx, 'dr')
        self.secondary.create_volume_group.return_value = 1
        self.secondary.create_volume.return_value = 2
        self.assertRaises(exception.VolumeBackendAPIException,
                          self.driver.create_volume,
                          self.replicated(provider_id=None))
        self.secondary.delete_volume.assert_called_once_with(2)
        self.secondary.delete_volume_group.assert_called_once_with(1)
        self.secondary.create_session.assert_not_called()

    def test_stats_carry_the_target_at_both_levels(self):
        self.serve_stats()
        stats = self.driver.get_volume_stats(True)
        for level in (stats, stats['pools'][0]):
            self.assertIs(True, level['replication_enabled'])
            self.assertEqual(['dr'], level['replication_targets'])

    def test_failover_moves_replicated_and_errors_the_rest(self):
        vol = self.replicated(
            replication_status=fields.ReplicationStatus.ENABLED)
        plain = self.volume()
        self.secondary.sessions_by_names.return_value = {
            'crs-%s' % vol.name_id: session(3, 'crs-%s' % vol.name_id)}
        self.secondary.volumes_by_names.return_value = {
            'cv-%s' % vol.name_id: k2_fakes.volume_record(
                4, 'cv-%s' % vol.name_id, group_id=2)}
        active, updates, _g = self.driver.failover(self.ctx, [vol, plain],
                                                   None)
        self.assertEqual('dr', active)
        self.secondary.set_session_state.assert_called_once_with(
            3, 'failed_over')
        by_id = {u['volume_id']: u['updates'] for u in updates}
        self.assertEqual({'replication_status': 'failed-over',
                          'provider_id': '2/4@dr'}, by_id[vol.id])
        self.assertEqual({'status': 'error'}, by_id[plain.id])
        # Not switched until failover_completed (active/active).
        self.assertIs(self.client, self.driver.adapter.client)
        self.driver.failover_completed(self.ctx, active)
        self.assertIs(self.secondary, self.driver.adapter.client)
        self.driver.adapter.load.assert_called_once_with()

    def test_failover_changes_only_the_active_adapter(self):
        # Each adapter's caches belong to its array: nothing is cleared by
        # hand, and a failback finds the primary's host ids as they were.
        primary = self.driver.adapter
        primary.hosts._hosts[('iqn.x',)] = 3
        self.driver.failover_completed(self.ctx, 'dr')
        self.assertIsNot(primary, self.driver.adapter)
        self.assertEqual({}, self.driver.adapter.hosts._hosts)
        self.driver.failover_completed(self.ctx, 'default')
        self.assertIs(primary, self.driver.adapter)
        self.assertEqual({('iqn.x',): 3}, primary.hosts._hosts)

    def test_failover_of_a_volume_without_replica(self):
        vol = self.replicated(
            replication_status=fields.ReplicationStatus.ENABLED)
        self.secondary.sessions_by_names.return_value = {}
        self.secondary.volumes_by_names.return_value = {}
        _active, updates, _g = self.driver.failover(self.ctx, [vol], 'dr')
        self.assertEqual('error', updates[0]['updates']['status'])

    def test_failover_targets(self):
        self.assertRaises(exception.InvalidReplicationTarget,
                          self.driver.failover, self.ctx, [], 'elsewhere')
        self.assertRaises(exception.InvalidReplicationTarget,
                          self.driver.failover, self.ctx, [], 'default')
        self.driver.failover_completed(self.ctx, 'dr')
        self.assertRaises(exception.InvalidReplicationTarget,
                          self.driver.failover, self.ctx, [], 'dr')

    def test_failback_needs_the_primary(self):
        self.driver.failover_completed(self.ctx, 'dr')
        self.client.system_state.side_effect = k2_fakes.api_error(503)
        self.assertRaises(exception.UnableToFailOver,
                          self.driver.failover, self.ctx, [], 'default')

    def test_failback_copies_back_then_switches(self):
        self.override_config('k2_replication_timeout', 10, group=self.GROUP)
        self.driver.failover_completed(self.ctx, 'dr')
        vol = self.replicated(
            replication_status=fields.ReplicationStatus.FAILED_OVER)
        name = 'crs-%s' % vol.name_id
        self.secondary.sessions_by_names.return_value = {
            name: session(3, name, generation=4)}
        self.secondary.session.return_value = session(3, name, generation=9)
        self.secondary.volumes_by_names.return_value = {}
        self.client.sessions_by_names.return_value = {name: session(8, name)}
        self.client.volumes_by_names.return_value = {
            'cv-%s' % vol.name_id: k2_fakes.volume_record(
                1, 'cv-%s' % vol.name_id, group_id=5)}
        active, updates, _g = self.driver.failover_host(self.ctx, [vol],
                                                        'default')
        self.assertEqual('default', active)
        self.secondary.set_session_state.assert_called_once_with(
            3, 'in_sync')
        self.assertEqual([mock.call(8, 'failed_over'),
                          mock.call(8, 'in_sync')],
                         self.client.set_session_state.call_args_list)
        self.assertEqual({'replication_status': 'enabled',
                          'provider_id': '5/1'}, updates[0]['updates'])
        self.assertIs(self.client, self.driver.adapter.client)

    def test_error_status_from_sessions(self):
        self.client.source_sessions.return_value = [
            session(1, 'a', group_id=1),
            session(2, 'b', reason='peer unreachable', group_id=2)]
        self.client.volumes_in_group.return_value = [
            k2_fakes.volume_record(1, description='cinder:abc'),
            k2_fakes.volume_record(2, description='other')]
        groups, errors = self.driver.get_replication_error_status(self.ctx,
                                                                  [])
        # Cinder's form: flat updates, volumes second.
        self.assertEqual([{'volume_id': 'abc',
                           'replication_status': 'error'}], errors)
        self.assertEqual([], groups)
        self.client.volumes_in_group.assert_called_once_with(2)

    def test_ids_of_the_other_array_are_never_used(self):
        # A volume left on the lost primary: its ids mean other objects on
        # the secondary, so it is looked up by name there.
        self.driver.failover_completed(self.ctx, 'dr')
        plain = self.volume(provider_id='5/7')
        self.secondary.volume_by_name.return_value = None
        self.secondary.volume_group_by_name.return_value = None
        self.driver.delete_volume(plain)
        self.secondary.volume_by_name.assert_any_call(
            'cv-%s' % plain.name_id)
        self.secondary.delete_volume.assert_not_called()
        # Created while failed over: tagged, used as they are.
        self.secondary.reset_mock()
        self.assertEqual((2, 4), self.driver.adapter.volume_ids(
            self.volume(provider_id='2/4@dr')))
        self.secondary.volume_by_name.assert_not_called()

    def test_snapshot_ids_from_the_secondary_after_failback(self):
        vol = self.volume()
        snap = self.snapshot(vol, provider_id='3/4@dr')
        self.client.snapshot_by_name.return_value = mock.Mock(id=30)
        self.client.volsnap_of.return_value = 40
        self.assertEqual((30, 40), self.adapter.snapshot_ids(snap))
        self.client.snapshot_by_name.assert_called_once_with(
            'cs-%s' % snap.id)

    def test_secondary_with_an_unknown_active_backend_is_refused(self):
        drv = k2_driver.K2ISCSIDriver(configuration=self.conf,
                                      host='cinder@k2-unit',
                                      active_backend_id='elsewhere')
        err = self.assertRaises(flash_exception.InvalidBackendConfig,
                                drv.do_setup, self.ctx)
        self.assertIn('elsewhere', err.msg)
