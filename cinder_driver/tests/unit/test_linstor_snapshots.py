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

"""LINSTOR adapter: snapshots, copies and revert."""

from unittest import mock

from cinder import exception

from cinder_driver.common import exception as flash_exception
from cinder_driver.tests.unit import linstor_fakes as fakes


class SnapshotTestCase(fakes.AdapterTestCase):

    def test_snapshot_names(self):
        vol = self.volume()
        snap = self.snapshot(vol)
        self.adapter.create_snapshot(snap)
        self.client.create_snapshot.assert_called_once_with(
            self.rd(vol), 'snapshot-%s' % snap.id)
        self.adapter.delete_snapshot(snap)
        self.client.delete_snapshot.assert_called_once_with(
            self.rd(vol), 'snapshot-%s' % snap.id)

    def test_from_snapshot_restores_grows_and_places(self):
        src = self.volume(1)
        snap = self.snapshot(src)
        vol = self.volume(3, self.vtype(**{'linstor:redundancy': '3'}))
        self.adapter.create_volume_from_snapshot(vol, snap)
        group = self.adapter.rg_name(vol.volume_type, 'DfltStorPool')
        self.client.create_resource_definition.assert_called_once_with(
            self.rd(vol), group)
        self.client.restore.assert_called_once_with(
            self.rd(src), 'snapshot-%s' % snap.id, self.rd(vol))
        self.client.resize.assert_called_once_with(self.rd(vol),
                                                   3 * 1024 * 1024)
        self.client.autoplace.assert_called_once_with(self.rd(vol),
                                                      {'place_count': 3})

    def test_failed_restore_is_undone(self):
        src = self.volume()
        vol = self.volume()
        self.client.restore.side_effect = fakes.refusal(980, 'no space')
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.create_volume_from_snapshot,
                          vol, self.snapshot(src))
        self.client.delete_resource_definition.assert_called_once_with(
            self.rd(vol))

    def test_clone_waits_for_completion(self):
        src, vol = self.volume(), self.volume(2)
        self.client.clone_status.side_effect = ['CLONING', 'CLONING',
                                                'COMPLETE']
        self.adapter.create_cloned_volume(vol, src)
        self.client.clone.assert_called_once_with(
            self.rd(src), self.rd(vol),
            self.adapter.rg_name(vol.volume_type, 'DfltStorPool'))
        self.assertEqual(3, self.client.clone_status.call_count)
        self.client.resize.assert_called_once_with(self.rd(vol),
                                                   2 * 1024 * 1024)

    def test_failed_clone_is_undone(self):
        src, vol = self.volume(), self.volume()
        self.client.clone_status.return_value = 'FAILED'
        err = self.assertRaises(exception.VolumeBackendAPIException,
                                self.adapter.create_cloned_volume, vol, src)
        self.assertIn('FAILED', str(err))
        self.client.delete_resource_definition.assert_called_once_with(
            self.rd(vol))

    @mock.patch('cinder.volume.volume_utils.is_group_a_cg_snapshot_type',
                return_value=False)
    def test_other_groups_are_left_to_cinder(self, _cg):
        self.assertRaises(NotImplementedError,
                          self.adapter.create_group_snapshot, None, [])
        self.assertRaises(NotImplementedError, self.adapter.create_group,
                          None)

    def test_revert_rolls_back_and_grows(self):
        vol = self.volume(2)
        snap = self.snapshot(vol)
        snap.volume_size = 1
        self.adapter.revert_to_snapshot(vol, snap)
        self.client.rollback.assert_called_once_with(
            self.rd(vol), 'snapshot-%s' % snap.id)
        self.client.resize.assert_called_once_with(self.rd(vol),
                                                   2 * 1024 * 1024)

    @mock.patch('cinder.volume.volume_utils.is_group_a_cg_snapshot_type',
                return_value=True)
    def test_group_snapshot_is_one_call(self, _cg):
        vols = [self.volume(), self.volume()]
        snaps = [self.snapshot(v) for v in vols]
        _model, updates = self.adapter.create_group_snapshot(None, snaps)
        pairs = [(self.rd(v), 'snapshot-%s' % s.id)
                 for v, s in zip(vols, snaps)]
        self.client.create_snapshots.assert_called_once_with(pairs)
        self.assertEqual({'available'}, {u['status'] for u in updates})
