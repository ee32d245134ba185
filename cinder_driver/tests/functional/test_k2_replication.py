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

"""K2 driver replication v2.1 between two live reference arrays."""

from cinder import exception
from cinder.objects import fields

from cinder_driver.common import exception as flash_exception
from cinder_driver.tests.functional import k2_driver_base
from cinder_driver.tests.functional import k2_replication_base
from reference_array.tests import array_fixture
from reference_array.tests import iscsi_client

CONNECTOR = k2_driver_base.CONNECTOR


class K2ReplicationTestCase(k2_replication_base.K2ReplicationBase):

    # -- create / stats / delete ------------------------------------------
    def test_replicated_volume_has_a_copy_on_the_peer(self):
        vol, sent = self.count(self.create, 1, self.replicated_type())
        self.assertEqual(fields.ReplicationStatus.ENABLED,
                         vol.replication_status)
        # group, volume, session, peer volume, start
        self.assertLessEqual(len(sent), 5, sent)
        local = self.session(self.array, vol)
        self.assertEqual(('source', 'in_sync'),
                         (local['current_role'], local['state']))
        self.sync(vol)
        remote = self.session(self.peer, vol)
        self.assertEqual(('target', 'in_sync'),
                         (remote['current_role'], remote['state']))
        copy = self.peer.k2_client().find('volumes',
                                          name='cv-%s' % vol.name_id)
        self.assertEqual(1024 * 1024, copy['size'])
        self.assertIs(True, copy['read_only'])

    def test_plain_volumes_are_not_replicated(self):
        vol = self.create()
        self.assertIsNone(self.session(self.array, vol))
        self.assertIsNone(self.peer.k2_client().find(
            'volumes', name='cv-%s' % vol.name_id))

    def test_stats_report_the_target(self):
        pool = self.driver.get_volume_stats(refresh=True)['pools'][0]
        self.assertIs(True, pool['replication_enabled'])
        self.assertEqual(['secondary'], pool['replication_targets'])
        self.assertEqual(1, pool['replication_count'])

    def test_delete_removes_both_sides(self):
        vol = self.create(1, self.replicated_type())
        self.sync(vol)
        self.driver.delete_volume(vol)
        for array in (self.array, self.peer):
            k2 = array.k2_client()
            self.assertEqual([], k2.search('replication/sessions'))
            self.assertIsNone(k2.find('volumes', name='cv-%s' % vol.name_id))
            self.assertIsNone(k2.find('volume_groups',
                                      name='cvg-%s' % vol.name_id))

    def test_extend_reaches_the_copy(self):
        vol = self.create(1, self.replicated_type())
        self.driver.extend_volume(vol, 3)
        self.sync(vol)
        copy = self.peer.k2_client().find('volumes',
                                          name='cv-%s' % vol.name_id)
        self.assertEqual(3 * 1024 * 1024, copy['size'])

    def test_clone_of_replicated_volume_is_replicated(self):
        src = self.create(1, self.replicated_type())
        clone = self.volume(1, self.replicated_type())
        clone.update(self.driver.create_cloned_volume(clone, src))
        self.assertEqual(fields.ReplicationStatus.ENABLED,
                         clone.replication_status)
        self.assertIsNotNone(self.session(self.array, clone))

    def test_retype_turns_replication_on_and_off_in_place(self):
        vol = self.create()
        done, update = self.driver.retype(self.ctx, vol,
                                          self.replicated_type(), {}, None)
        self.assertIs(True, done)
        self.assertEqual(fields.ReplicationStatus.ENABLED,
                         update['replication_status'])
        vol.update(update)
        self.sync(vol)
        done, update = self.driver.retype(self.ctx, vol, self.volume_type(),
                                          {}, None)
        self.assertIs(True, done)
        self.assertEqual(fields.ReplicationStatus.DISABLED,
                         update['replication_status'])
        self.assertIsNone(self.session(self.array, vol))
        self.assertIsNone(self.peer.k2_client().find(
            'volumes', name='cv-%s' % vol.name_id))
        self.assertIsNotNone(self.array_volume(vol))

    def test_failed_create_leaves_nothing(self):
        self.array.inject({'path': '/replication/peer_volumes',
                           'methods': ['POST'], 'kind': 'status',
                           'status': 500})
        vol = self.volume(1, self.replicated_type())
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.driver.create_volume, vol)
        self.array.clear_faults()
        k2 = self.array.k2_client()
        self.assertEqual([], k2.search('replication/sessions'))
        self.assertIsNone(self.array_volume(vol))
        self.assertIsNone(k2.find('volume_groups',
                                  name='cvg-%s' % vol.name_id))

    # -- failover and failback ---------------------------------------------
    def test_failover_then_failback_keeps_the_data(self):
        vol = self.create(1, self.replicated_type())
        plain = self.create()
        first = self.data('first')
        result = iscsi_client.write_file(
            first, self.lun(self.driver, vol, self.array))
        self.assertEqual(0, result.returncode, result.stderr)
        self.driver.terminate_connection(vol, CONNECTOR)
        self.sync(vol)

        active, updates, groups = self.driver.failover_host(
            self.ctx, [vol, plain], 'secondary')
        self.assertEqual('secondary', active)
        self.assertEqual([], groups)
        by_id = {u['volume_id']: u['updates'] for u in updates}
        self.assertEqual('error', by_id[plain.id]['status'])
        self.assertEqual(fields.ReplicationStatus.FAILED_OVER,
                         by_id[vol.id]['replication_status'])
        vol.update(by_id[vol.id])
        on_peer = self.lun(self.driver, vol, self.peer)
        self.assert_reads(on_peer, first)
        second = self.data('second')
        result = iscsi_client.write_file(second, on_peer)
        self.assertEqual(0, result.returncode, result.stderr)
        self.driver.terminate_connection(vol, CONNECTOR)

        # Cinder keeps active_backend_id: a restarted service follows it.
        restarted = self.make_driver(
            driver_kwargs={'active_backend_id': 'secondary'})
        self.assertEqual(self.peer.info['iqn'], restarted.adapter.target_iqn)

        active, updates, _g = self.driver.failover_host(
            self.ctx, [vol, plain], 'default')
        self.assertEqual('default', active)
        by_id = {u['volume_id']: u['updates'] for u in updates}
        self.assertEqual(fields.ReplicationStatus.ENABLED,
                         by_id[vol.id]['replication_status'])
        self.assertEqual('available', by_id[plain.id]['status'])
        vol.update(by_id[vol.id])
        self.assert_reads(self.lun(self.driver, vol, self.array), second)
        self.driver.terminate_connection(vol, CONNECTOR)
        local = self.session(self.array, vol)
        remote = self.session(self.peer, vol)
        self.assertEqual(('source', 'in_sync'),
                         (local['current_role'], local['state']))
        self.assertEqual('target', remote['current_role'])

    def test_ids_follow_the_active_array(self):
        vol = self.create(1, self.replicated_type())
        plain = self.create()
        keep = self.snapshot(vol)
        self.sync(vol)
        _a, updates, _g = self.driver.failover_host(self.ctx, [vol, plain],
                                                    'secondary')
        vol.update({u['volume_id']: u['updates']
                    for u in updates}[vol.id])
        peer = self.peer.k2_client()
        before = sorted(v['name'] for v in peer.search('volumes'))
        # The plain volume stays on the lost primary: deleting it while
        # failed over must not touch the secondary's objects.
        self.driver.delete_volume(plain)
        self.assertEqual(before, sorted(v['name'] for v in
                                        peer.search('volumes')))
        on_secondary = self.snapshot(vol)
        self.assertTrue(on_secondary.provider_id.endswith('@secondary'))
        _a, updates, _g = self.driver.failover_host(self.ctx, [vol],
                                                    'default')
        vol.update(updates[0]['updates'])
        # Its ids belong to the secondary: on the primary they would name
        # another snapshot (here: the one taken before the failover).
        self.driver.delete_snapshot(on_secondary)
        primary = self.array.k2_client()
        self.assertEqual(['cs-%s' % keep.id], [
            s['short_name'] for s in primary.search('snapshots')])
        self.assertIsNotNone(self.array_volume(plain))

    def test_active_active_failover_in_two_steps(self):
        vol = self.create(1, self.replicated_type())
        self.sync(vol)
        active, updates, _g = self.driver.failover(self.ctx, [vol], None)
        self.assertEqual('secondary', active)
        # Until failover_completed the service still uses the primary.
        self.assertEqual(self.array.info['iqn'],
                         self.driver.adapter.target_iqn)
        self.driver.failover_completed(self.ctx, active)
        self.assertEqual(self.peer.info['iqn'], self.driver.adapter.target_iqn)
        self.assertEqual('failed_over', self.session(self.peer, vol)['state'])

    def test_failover_targets_are_checked(self):
        vol = self.create(1, self.replicated_type())
        self.assertRaises(exception.InvalidReplicationTarget,
                          self.driver.failover_host, self.ctx, [vol],
                          'elsewhere')
        self.assertRaises(exception.InvalidReplicationTarget,
                          self.driver.failover_host, self.ctx, [vol],
                          'default')
        self.assertEqual('in_sync', self.session(self.array, vol)['state'])

    def test_failover_when_the_primary_is_gone(self):
        vol = self.create(1, self.replicated_type())
        self.sync(vol)
        self.array.stop()
        active, updates, _g = self.driver.failover_host(self.ctx, [vol],
                                                        'secondary')
        self.assertEqual('secondary', active)
        self.assertEqual(fields.ReplicationStatus.FAILED_OVER,
                         updates[0]['updates']['replication_status'])
        vol.update(updates[0]['updates'])
        info = self.driver.initialize_connection(vol, CONNECTOR)
        self.assertEqual(self.peer.info['iqn'], info['data']['target_iqn'])
        # Failback needs the primary back.
        self.assertRaises(exception.UnableToFailOver,
                          self.driver.failover_host, self.ctx, [vol],
                          'default')

    def test_replication_errors_are_reported(self):
        vol = self.create(1, self.replicated_type())
        self.sync(vol)
        self.assertEqual(([], []), self.driver.get_replication_error_status(
            self.ctx, []))
        self.assertEqual(fields.ReplicationStatus.ERROR,
                         self.stall('crs-%s' % vol.name_id))
        groups, errors = self.driver.get_replication_error_status(
            self.ctx, [])
        self.assertEqual([], groups)
        self.assertEqual([{'volume_id': vol.id, 'replication_status':
                           fields.ReplicationStatus.ERROR}], errors)


class K2ReplicationConfigTestCase(k2_driver_base.K2DriverTestCase):

    def device(self, **changes):
        device = {'backend_id': 'secondary', 'san_ip': '127.0.0.1',
                  'san_login': 'admin', 'san_password': 'secret'}
        device.update(changes)
        return device

    def test_bad_devices_are_named(self):
        for device, named in (
                (self.device(rpo='30'), 'rpo'),
                (self.device(colour='blue'), 'colour'),
                (self.device(backend_id='default'), 'backend_id'),
                (self.device(san_password=''), 'san_password'),
                (self.device(san_api_port='none'), 'san_api_port')):
            e = self.assertRaises(flash_exception.InvalidBackendConfig,
                                  self.make_driver,
                                  replication_device=[device])
            self.assertIn(named, str(e))

    def test_unpaired_arrays_are_refused_at_setup(self):
        other = self.useFixture(array_fixture.ReferenceArray())
        e = self.assertRaises(
            flash_exception.InvalidBackendConfig, self.make_driver,
            replication_device=[self.device(
                san_ip=other.k2_host, san_api_port=str(other.k2_port),
                san_login=other.info['user'],
                san_password=other.info['password'],
                driver_ssl_cert_path=other.info['ca_cert'])])
        self.assertIn('not paired', str(e))

    def test_replicated_type_without_device_is_refused(self):
        vol = self.volume(1, self.volume_type(
            replication_enabled='<is> True'))
        e = self.assertRaises(exception.InvalidVolumeType,
                              self.driver.create_volume, vol)
        self.assertIn('replication_enabled', str(e))
        self.assertEqual([], self.array.k2_client().search('volume_groups'))
