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

"""K2 driver: snapshots, clones, volume from snapshot, revert."""

import os

from cinder import exception
import fixtures

from cinder_driver.tests.functional import k2_driver_base
from reference_array.tests import iscsi_client

GIB = 1024 * 1024
CONNECTOR = k2_driver_base.CONNECTOR


class K2SnapshotTestCase(k2_driver_base.K2DriverTestCase):

    def test_snapshot_create_delete(self):
        vol = self.create()
        snap, sent = self.count(self.snapshot, vol)
        self.assertEqual(['POST /api/v2/snapshots'], sent[:1])
        self.assertLessEqual(len(sent), 2)
        k2 = self.array.k2_client()
        found = k2.find('snapshots', short_name='cs-%s' % snap.id)
        self.assertEqual('cvg-%s:cs-%s' % (vol.name_id, snap.id),
                         found['name'])
        _r, sent = self.count(self.driver.delete_snapshot, snap)
        self.assertEqual(1, len(sent))
        self.assertEqual([], k2.search('snapshots'))
        self.driver.delete_snapshot(snap)

    def test_volume_from_snapshot_larger_and_independent(self):
        vol = self.create(size=1)
        snap = self.snapshot(vol)
        new = self.volume(size=3)
        update, sent = self.count(self.driver.create_volume_from_snapshot,
                                  new, snap)
        self.assertLessEqual(len(sent), 3)
        new.update(update)
        self.assertEqual(3 * GIB, self.array_volume(new)['size'])
        # Independent: the snapshot and its source can go first.
        self.driver.delete_snapshot(snap)
        self.driver.delete_volume(vol)
        self.driver.extend_volume(new, 4)
        self.snapshot(new)

    def test_clone_larger_and_independent(self):
        src = self.create(size=2)
        clone = self.volume(size=5)
        update, sent = self.count(self.driver.create_cloned_volume, clone,
                                  src)
        self.assertLessEqual(len(sent), 3)
        clone.update(update)
        self.assertEqual(5 * GIB, self.array_volume(clone)['size'])
        self.driver.delete_volume(src)
        self.assertIsNotNone(self.array_volume(clone))

    def test_clone_into_nodedup_type(self):
        src = self.create()
        clone = self.volume(vtype=self.volume_type(**{'k2:dedup': 'false'}))
        clone.update(self.driver.create_cloned_volume(clone, src))
        self.assertFalse(self.array_volume(clone)['is_dedup'])

    def test_clone_smaller_than_source_is_refused_cleanly(self):
        src = self.create(size=2)
        clone = self.volume(size=1)
        self.assertRaises(exception.VolumeBackendAPIException,
                          self.driver.create_cloned_volume, clone, src)
        self.assertEqual(1, len(self.array.k2_client().search(
            'volume_groups')))

    def test_revert_to_snapshot(self):
        vol = self.create()
        snap = self.snapshot(vol)
        _r, sent = self.count(self.driver.revert_to_snapshot, self.ctx,
                              vol, snap)
        self.assertEqual(1, len(sent))
        group = self.array.k2_client().find('volume_groups',
                                            name='cvg-%s' % vol.name_id)
        self.assertEqual('/snapshots/%s' % snap.provider_id.split('/')[0],
                         group['last_restored_from']['ref'])

    def test_snapshot_made_outside_cinder_is_kept(self):
        from cinder_driver.k2 import client
        vol = self.create()
        k2 = self.array.k2_client()
        group = k2.find('volume_groups', name='cvg-%s' % vol.name_id)
        k2.create('snapshots', {
            'short_name': 'admin-backup',
            'source': client.ref('volume_groups', group['id']),
            'retention_policy': client.ref('retention_policies', 1)})
        log = self.useFixture(__import__('fixtures').FakeLogger(
            level='WARNING'))
        self.driver.delete_volume(vol)
        self.assertIsNone(self.array_volume(vol))
        self.assertEqual(1, len(k2.search('snapshots')))
        self.assertIn('is kept', log.output)

    def lun(self, info):
        return iscsi_client.url(self.array.info['iscsi_portal'],
                                info['data']['target_iqn'],
                                info['data']['target_lun'],
                                CONNECTOR['initiator'])

    def test_snapshot_attached_for_backup_without_a_volume(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        first, second = (os.path.join(tmp, n) for n in ('first', 'second'))
        for path in (first, second):
            with open(path, 'wb') as f:
                f.write(os.urandom(1024 * 1024))
        vol = self.create()
        info = self.driver.initialize_connection(vol, CONNECTOR)
        result = iscsi_client.write_file(first, self.lun(info))
        self.assertEqual(0, result.returncode, result.stderr)
        snap = self.snapshot(vol)
        # The volume moves on; the snapshot keeps the first bytes.
        result = iscsi_client.write_file(second, self.lun(info))
        self.assertEqual(0, result.returncode, result.stderr)
        self.driver.terminate_connection(vol, CONNECTOR)
        k2 = self.array.k2_client()
        volumes = len(k2.search('volumes'))

        info = self.driver.initialize_connection_snapshot(snap, CONNECTOR)
        self.assertEqual('ro', info['data']['access_mode'])
        result, expected, got = iscsi_client.read_back(self.lun(info), first)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual(expected, got)
        self.assertEqual(volumes, len(k2.search('volumes')))
        view = k2.find('snapshots', short_name='csv-%s' % snap.id)
        self.assertIs(True, view['is_exposable'])

        self.driver.terminate_connection_snapshot(snap, CONNECTOR)
        self.assertIsNone(k2.find('snapshots',
                                  short_name='csv-%s' % snap.id))
        self.assertEqual([], k2.search('mappings'))
        # Nothing is left to keep the snapshot from going.
        self.driver.delete_snapshot(snap)
        self.assertEqual([], k2.search('snapshots'))

    def test_snapshot_delete_takes_a_left_over_view_along(self):
        vol = self.create()
        snap = self.snapshot(vol)
        self.driver.initialize_connection_snapshot(snap, CONNECTOR)
        # The backup never detached; the snapshot still goes, with its
        # view and the view's mapping.
        self.driver.delete_snapshot(snap)
        k2 = self.array.k2_client()
        self.assertEqual([], k2.search('snapshots'))
        self.assertEqual([], k2.search('mappings'))
        self.assertIsNotNone(self.array_volume(vol))
