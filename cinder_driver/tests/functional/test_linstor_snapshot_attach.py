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

"""LINSTOR driver: a snapshot attached for a backup, without a volume."""

from cinder import exception

from cinder_driver.linstor import snapshot_export
from cinder_driver.tests.functional import linstor_driver_base as base

MIB = 1024 * 1024


class LinstorSnapshotAttachTestCase(base.LinstorDriverTestCase):

    def view_of(self, snap):
        """The hidden definition's name, tracked for cleanup."""
        return self.made_elsewhere('snapview-%s' % snap.id)

    def definitions(self):
        _s, rows = self.linstor('GET', '/v1/resource-definitions')
        return sorted(r['name'] for r in rows)

    def snapshots_of(self, vol):
        _s, rows = self.linstor('GET', '/v1/view/snapshots', params={
            'resources': 'volume-%s' % vol.name_id})
        return sorted(s['name'] for s in rows)

    def test_backup_reads_the_snapshot_and_the_view_goes_at_detach(self):
        vol = self.create()
        node = self.diskful(vol)[0]
        self.write(vol, node, 'write -P 0x41 0 1M')
        snap = self.snapshot(vol)
        self.write(vol, node, 'write -P 0x42 0 1M')
        view = self.view_of(snap)
        before = self.definitions()

        info, calls = self.count(self.driver.initialize_connection_snapshot,
                                 snap, {'host': node})
        self.assertEqual('local', info['driver_volume_type'])
        self.assertEqual('ro', info['data']['access_mode'])
        # One hidden definition, marked with the snapshot; no volume.
        self.assertEqual(sorted(before + [view]), self.definitions())
        _s, rd = self.linstor('GET', '/v1/resource-definitions/%s' % view)
        self.assertEqual(snap.id,
                         rd['props']['Aux/cinder-flash/snapshot-view-of'])
        self.assertEqual(self.group_of(vol)['name'],
                         rd['resource_group_name'])
        self.assertEqual(1, len([c for c in calls
                                 if c == 'POST /v1/resource-definitions']))
        # The snapshot's bytes, not the volume's newer ones.
        self.assertTrue(self.pattern_at_rd(view, node, 0, MIB, 0x41))
        self.assertFalse(self.pattern_at_rd(view, node, 0, MIB, 0x42))

        self.driver.terminate_connection_snapshot(snap, {'host': node})
        self.assertEqual(before, self.definitions())
        self.assertEqual(['snapshot-%s' % snap.id], self.snapshots_of(vol))
        self.assertTrue(self.pattern_at(vol, node, 0, MIB, 0x42))
        # The snapshot still makes a volume after the backup.
        copy = self.volume()
        self.driver.create_volume_from_snapshot(copy, snap)
        self.assertTrue(self.pattern_at(copy, self.diskful(copy)[0], 0, MIB,
                                        0x41))

    def test_diskless_client_reads_the_snapshot(self):
        client = self.need_client_node()
        vol = self.create()
        self.write(vol, self.diskful(vol)[0], 'write -P 0x51 0 64k')
        snap = self.snapshot(vol)
        view = self.view_of(snap)
        info = self.driver.initialize_connection_snapshot(
            snap, {'host': client})
        self.assertEqual('/dev/drbd/by-res/%s/0' % view,
                         info['data']['device_path'])
        self.assertTrue(self.pattern_at_rd(view, client, 0, 65536, 0x51))
        self.driver.terminate_connection_snapshot(snap, {'host': client})
        self.assertNotIn(view, self.definitions())

    def test_failed_attach_leaves_nothing_behind(self):
        vol = self.create()
        snap = self.snapshot(vol)
        self.view_of(snap)
        before = self.definitions()
        # LINSTOR has no such node: the attach stops at its first lookup.
        err = self.assertRaises(exception.VolumeBackendAPIException,
                                self.driver.initialize_connection_snapshot,
                                snap, {'host': 'no-such-node'})
        self.assertIn('not a LINSTOR node', str(err))
        self.assertEqual(before, self.definitions())
        self.assertEqual(['snapshot-%s' % snap.id], self.snapshots_of(vol))

    def test_a_stranger_definition_of_that_name_stays(self):
        vol = self.create()
        snap = self.snapshot(vol)
        view = self.view_of(snap)
        status, _b = self.linstor('POST', '/v1/resource-definitions', {
            'resource_definition': {'name': view}})
        self.assertIn(status, (200, 201))
        node = self.diskful(vol)[0]
        self.assertRaises(snapshot_export.NotOurs,
                          self.driver.initialize_connection_snapshot,
                          snap, {'host': node})
        self.driver.terminate_connection_snapshot(snap, {'host': node})
        self.driver.terminate_connection_snapshot(snap, None)
        self.assertIn(view, self.definitions())
