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

"""LINSTOR driver: snapshots, clones, volume from snapshot and revert."""

from cinder import exception

from cinder_driver.common import exception as flash_exception
from cinder_driver.tests.functional import linstor_driver_base as base


class LinstorSnapshotsTestCase(base.LinstorDriverTestCase):

    def test_snapshot_copy_and_revert_keep_the_bytes(self):
        vol = self.create()
        node = self.diskful(vol)[0]
        self.write(vol, node, 'write -P 0x11 0 1M')
        snap, calls = self.count(self.snapshot, vol)
        self.assertEqual(['POST /v1/resource-definitions/volume-%s/'
                          'snapshots' % vol.name_id], calls)
        self.write(vol, node, 'write -P 0x22 0 1M')

        from_snap = self.volume(2)
        _none, calls = self.count(self.driver.create_volume_from_snapshot,
                                  from_snap, snap)
        # Group lookup and create, definition, two restores, grow, and
        # placement up to the type's redundancy.
        self.assertLessEqual(len(calls), 7)
        self.assertEqual(self.replicas_default,
                         len(self.diskful(from_snap)))
        self.assertEqual(2 * 1024 * 1024, self.size_kib(from_snap))
        self.assertTrue(self.pattern_at(from_snap, self.diskful(from_snap)[0],
                                        0, 1048576, 0x11))

        clone = self.volume(1)
        self.driver.create_cloned_volume(clone, vol)
        self.assertTrue(self.pattern_at(clone, self.diskful(clone)[0], 0,
                                        1048576, 0x22))

        self.driver.revert_to_snapshot(self.ctx, vol, snap)
        self.assertTrue(self.pattern_at(vol, node, 0, 1048576, 0x11))
        # The copies do not depend on the source or its snapshot, and a
        # clone leaves no snapshot behind.
        self.driver.delete_snapshot(snap)
        self.driver.delete_volume(vol)
        self.assertTrue(self.pattern_at(clone, self.diskful(clone)[0], 0,
                                        1048576, 0x22))
        self.assertIsNone(self.rd(vol))

    def test_revert_as_the_volume_manager_runs_it(self):
        # Cinder's manager snapshots the volume before a revert and
        # deletes that snapshot afterwards, so the snapshot reverted to
        # is not the latest one.
        vol = self.create()
        node = self.diskful(vol)[0]
        self.write(vol, node, 'write -P 0x31 0 64k')
        snap = self.snapshot(vol)
        self.write(vol, node, 'write -P 0x32 0 64k')
        backup = self.snapshot(vol)
        self.driver.revert_to_snapshot(self.ctx, vol, snap)
        self.driver.delete_snapshot(backup)
        self.assertTrue(self.pattern_at(vol, node, 0, 65536, 0x31))
        _s, left = self.linstor('GET', '/v1/view/snapshots', params={
            'resources': 'volume-%s' % vol.name_id})
        self.assertEqual(['snapshot-%s' % snap.id],
                         [s['name'] for s in left
                          if s['name'].startswith('snapshot-')])

    def test_clone_leaves_no_snapshot_and_copies_the_size(self):
        vol = self.create(2)
        clone = self.volume(3)
        self.driver.create_cloned_volume(clone, vol)
        self.assertEqual(3 * 1024 * 1024, self.size_kib(clone))
        self.assertEqual(self.replicas_default, len(self.diskful(clone)))
        _s, snaps = self.linstor('GET', '/v1/view/snapshots', params={
            'resources': 'volume-%s' % vol.name_id})
        self.assertEqual([], snaps)
        self.driver.delete_volume(vol)
        self.assertIsNotNone(self.rd(clone))

    def test_clone_works_on_thick_pools(self):
        pool = self.need_thick_pool()
        vol = self.create(pool=pool)
        clone = self.volume(1, pool=pool)
        self.driver.create_cloned_volume(clone, vol)
        self.assertEqual({pool},
                         {p for _d, p in self.replicas(clone).values()})

    def test_thick_pool_refuses_snapshots_clearly(self):
        vol = self.create(pool=self.need_thick_pool())
        err = self.assertRaises(flash_exception.ArrayAPIError, self.snapshot,
                                vol)
        self.assertIn('does not support snapshots', str(err))

    def test_failed_restore_leaves_nothing(self):
        self.need_nodes(3)
        vol = self.create()
        snap = self.snapshot(vol)
        # Three replicas wanted, but the snapshot sits on two nodes and
        # the third node is being evacuated: placement fails.
        self.linstor('PUT', '/v1/nodes/%s/evacuate' % self.target.nodes[2])
        target = self.volume(1, self.volume_type(
            **{'linstor:redundancy': '3'}))
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.driver.create_volume_from_snapshot,
                          target, snap)
        self.assertIsNone(self.rd(target))

    def test_restore_over_a_name_taken_deletes_nothing(self):
        snap = self.snapshot(self.create())
        target = self.volume()
        name = self.made_elsewhere('volume-%s' % target.name_id)
        self.linstor('POST', '/v1/resource-definitions', {
            'resource_definition': {'name': name}})
        err = self.assertRaises(exception.VolumeBackendAPIException,
                                self.driver.create_volume_from_snapshot,
                                target, snap)
        self.assertIn('not made by this request', str(err))
        self.assertIsNotNone(self.rd(target))
