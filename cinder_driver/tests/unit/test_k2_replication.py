"""K2 adapter: replication_device parsing, replicated volumes, failover."""

from unittest import mock

from cinder import exception
from cinder.objects import fields
import ddt

from cinder_driver.common import exception as flash_exception
from cinder_driver.k2 import replication
from cinder_driver.k2 import rest
from cinder_driver.tests.unit import k2_fakes

DEVICE = {'backend_id': 'dr', 'san_ip': '192.0.2.50', 'san_login': 'admin',
          'san_password': 'pw2'}


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


class ReplicatedTestCase(k2_fakes.AdapterTestCase):

    def setUp(self):
        super().setUp()
        self.override_config('replication_device', [DEVICE],
                             group=self.GROUP)
        self.secondary = mock.Mock(spec=rest.K2Rest)
        self.secondary.http = mock.Mock(array_name='K2 dr')
        self.secondary.create_unique.side_effect = (
            lambda resource, body, **key: self.secondary.create(resource,
                                                                body))
        self.adapter.primary = self.client
        self.adapter._setup_replication(lambda *a: self.secondary)
        self.adapter._peer_refs = {id(self.client): {
            'ref': '/replication/peer_k2arrays/1'}}
        self.adapter._load_active = mock.Mock()

    def replicated(self, provider_id='7/9', replication_status=None):
        vol = self.volume(provider_id, replication_enabled='<is> True')
        vol.replication_status = replication_status
        return vol

    def test_create_starts_a_session(self):
        created = iter([{'id': 7}, {'id': 9}, {'id': 5}, {'id': 6}])
        self.client.create.side_effect = lambda res, body: next(created)
        vol = self.replicated(provider_id=None)
        update = self.adapter.create_volume(vol)
        self.assertEqual('7/9', update['provider_id'])
        self.assertEqual(fields.ReplicationStatus.ENABLED,
                         update['replication_status'])
        calls = [c[0][0] for c in self.client.create.call_args_list]
        self.assertEqual(['volume_groups', 'volumes', 'replication/sessions',
                          'replication/peer_volumes'], calls)
        session = self.client.create.call_args_list[2][0][1]
        self.assertEqual('crs-%s' % vol.name_id, session['name'])
        self.assertEqual('cvg-%s' % vol.name_id,
                         session['replication_peer_volume_group_name'])
        self.assertEqual(60, session['rpo'])
        self.client.update.assert_called_once_with(
            'replication/sessions', 5, {'state': 'in_sync'})

    def test_failed_start_undoes_everything(self):
        created = iter([{'id': 7}, {'id': 9}, {'id': 5}])

        def create(res, body):
            if res == 'replication/peer_volumes':
                raise k2_fakes.api_error(500)
            return next(created)
        self.client.create.side_effect = create
        self.client.find.return_value = {'id': 5}
        self.secondary.find.return_value = None
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.create_volume,
                          self.replicated(provider_id=None))
        # The peer was asked for a copy it may hold: looked for there too.
        self.secondary.find.assert_any_call(
            'replication/sessions', name=mock.ANY)
        self.assertEqual([mock.call('replication/sessions', 5),
                          mock.call('volumes', 9),
                          mock.call('volume_groups', 7)],
                         self.client.delete.call_args_list)

    def test_no_replicated_create_while_failed_over(self):
        self.adapter.failover_completed('dr')
        self.secondary.create.side_effect = [{'id': 1}, {'id': 2}]
        self.assertRaises(exception.VolumeBackendAPIException,
                          self.adapter.create_volume,
                          self.replicated(provider_id=None))
        self.assertEqual(2, self.secondary.delete.call_count)

    def test_stats_carry_the_target_at_both_levels(self):
        self.client.find.side_effect = lambda res, **kw: {
            'total': 10, 'free': 5, 'provisioned': 1, 'logical': 1,
            'physical': 1}
        stats = self.adapter.get_volume_stats(True)
        for level in (stats, stats['pools'][0]):
            self.assertIs(True, level['replication_enabled'])
            self.assertEqual(['dr'], level['replication_targets'])

    def test_failover_moves_replicated_and_errors_the_rest(self):
        vol = self.replicated(
            replication_status=fields.ReplicationStatus.ENABLED)
        plain = self.volume()
        self.secondary.search.side_effect = [
            [{'id': 3, 'name': 'crs-%s' % vol.name_id, 'state': 'in_sync'}],
            [{'id': 4, 'name': 'cv-%s' % vol.name_id,
              'volume_group': {'ref': '/volume_groups/2'}}]]
        active, updates = self.adapter.failover([vol, plain], None)
        self.assertEqual('dr', active)
        self.secondary.update.assert_called_once_with(
            'replication/sessions', 3, {'state': 'failed_over'})
        by_id = {u['volume_id']: u['updates'] for u in updates}
        self.assertEqual({'replication_status': 'failed-over',
                          'provider_id': '2/4@dr'}, by_id[vol.id])
        self.assertEqual({'status': 'error'}, by_id[plain.id])
        # Not switched until failover_completed (active/active).
        self.assertIs(self.client, self.adapter.client)
        self.adapter.failover_completed(active)
        self.assertIs(self.secondary, self.adapter.client)

    def test_failover_of_a_volume_without_replica(self):
        vol = self.replicated(
            replication_status=fields.ReplicationStatus.ENABLED)
        self.secondary.search.side_effect = [[], []]
        _active, updates = self.adapter.failover([vol], 'dr')
        self.assertEqual('error', updates[0]['updates']['status'])

    def test_failover_targets(self):
        self.assertRaises(exception.InvalidReplicationTarget,
                          self.adapter.failover, [], 'elsewhere')
        self.assertRaises(exception.InvalidReplicationTarget,
                          self.adapter.failover, [], 'default')
        self.adapter.failover_completed('dr')
        self.assertRaises(exception.InvalidReplicationTarget,
                          self.adapter.failover, [], 'dr')

    def test_failback_needs_the_primary(self):
        self.adapter.failover_completed('dr')
        self.client.system_state.side_effect = k2_fakes.api_error(503)
        self.assertRaises(exception.UnableToFailOver,
                          self.adapter.failover, [], 'default')

    def test_failback_copies_back_then_switches(self):
        self.override_config('k2_replication_timeout', 10, group=self.GROUP)
        self.adapter.failover_completed('dr')
        vol = self.replicated(
            replication_status=fields.ReplicationStatus.FAILED_OVER)
        name = 'crs-%s' % vol.name_id
        self.secondary.search.return_value = [
            {'id': 3, 'name': name, 'generation_number': 4}]
        self.secondary.get.return_value = {
            'id': 3, 'generation_number': 9, 'current_snapshot_id': None}
        self.client.search.side_effect = [
            [{'id': 8, 'name': name}],
            [{'id': 1, 'name': 'cv-%s' % vol.name_id,
              'volume_group': {'ref': '/volume_groups/5'}}]]
        active, updates = self.adapter.failover([vol], 'default')
        self.assertEqual('default', active)
        self.secondary.update.assert_called_once_with(
            'replication/sessions', 3, {'state': 'in_sync'})
        self.assertEqual([mock.call('replication/sessions', 8,
                                    {'state': 'failed_over'}),
                          mock.call('replication/sessions', 8,
                                    {'state': 'in_sync'})],
                         self.client.update.call_args_list)
        self.assertEqual({'replication_status': 'enabled',
                          'provider_id': '5/1'}, updates[0]['updates'])

    def test_error_status_from_sessions(self):
        self.client.search.side_effect = [
            [{'state': 'in_sync', 'state_reason': '',
              'local_volume_group': {'ref': '/volume_groups/1'}},
             {'state': 'in_sync', 'state_reason': 'peer unreachable',
              'local_volume_group': {'ref': '/volume_groups/2'}}],
            [{'description': 'cinder:abc'}, {'description': 'other'}]]
        errors, groups = self.adapter.get_replication_error_status([])
        self.assertEqual([{'volume_id': 'abc', 'updates': {
            'replication_status': 'error'}}], errors)
        self.assertEqual([], groups)

    def test_ids_of_the_other_array_are_never_used(self):
        # A volume left on the lost primary: its ids mean other objects on
        # the secondary, so it is looked up by name there.
        self.adapter.failover_completed('dr')
        plain = self.volume(provider_id='5/7')
        self.secondary.find.return_value = None
        self.adapter.delete_volume(plain)
        self.secondary.find.assert_any_call('volumes',
                                            name='cv-%s' % plain.name_id)
        self.secondary.delete.assert_not_called()
        # Created while failed over: tagged, used as they are.
        self.secondary.reset_mock()
        self.assertEqual((2, 4), self.adapter._volume_ids(
            self.volume(provider_id='2/4@dr')))
        self.secondary.find.assert_not_called()

    def test_snapshot_ids_from_the_secondary_after_failback(self):
        vol = self.volume()
        snap = self.snapshot(vol, provider_id='3/4@dr')
        self.client.find.side_effect = [{'id': 30}, {'id': 40}]
        self.assertEqual((30, 40), self.adapter._snapshot_ids(snap))
        self.assertEqual('cs-%s' % snap.id, self.client.find.call_args_list[
            0][1]['short_name'])
