"""LINSTOR driver: snapshots, clones, volume from snapshot and revert."""

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
        self.assertEqual(2, len(self.diskful(from_snap)))
        self.assertEqual(2 * 1024 * 1024, self.rd(from_snap)[
            'volume_definitions'][0]['size_kib'])
        self.assertTrue(self.pattern_at(from_snap, self.diskful(from_snap)[0],
                                        0, 1048576, 0x11))

        clone = self.volume(1)
        self.driver.create_cloned_volume(clone, vol)
        self.assertTrue(self.pattern_at(clone, self.diskful(clone)[0], 0,
                                        1048576, 0x22))

        self.driver.revert_to_snapshot(self.ctx, vol, snap)
        self.assertTrue(self.pattern_at(vol, node, 0, 1048576, 0x11))
        # The copies do not depend on the source or its snapshot.
        self.driver.delete_snapshot(snap)
        self.driver.delete_volume(vol)
        self.assertTrue(self.pattern_at(clone, self.diskful(clone)[0], 0,
                                        1048576, 0x22))
        self.assertIsNone(self.rd(vol))

    def test_clone_works_on_thick_pools(self):
        vol = self.create(pool='thickpool')
        clone = self.volume(1, pool='thickpool')
        self.driver.create_cloned_volume(clone, vol)
        self.assertEqual({'thickpool'},
                         {p for _d, p in self.replicas(clone).values()})

    def test_thick_pool_refuses_snapshots_clearly(self):
        vol = self.create(pool='thickpool')
        err = self.assertRaises(flash_exception.ArrayAPIError, self.snapshot,
                                vol)
        self.assertIn('does not support snapshots', str(err))

    def test_failed_restore_leaves_nothing(self):
        vol = self.create()
        snap = self.snapshot(vol)
        # Three replicas wanted, but the snapshot sits on two nodes and
        # the third node is being evacuated: placement fails.
        self.array.linstor('PUT', '/v1/nodes/sat-3/evacuate')
        target = self.volume(1, self.volume_type(
            **{'linstor:redundancy': '3'}))
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.driver.create_volume_from_snapshot,
                          target, snap)
        self.assertIsNone(self.rd(target))
