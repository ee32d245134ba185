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

from cinder import exception
from cinder import objects
from cinder.objects import fields
from oslo_utils import uuidutils

from cinder_driver.k2 import groups
from cinder_driver.tests.unit import k2_fakes


class GroupsTestCase(k2_fakes.AdapterTestCase):

    def setUp(self):
        super().setUp()
        self.consistent = self.mock_object(groups, 'is_consistent',
                                           return_value=True)
        self.mock_object(groups, 'is_replicated', return_value=False)

    def group(self, *specs):
        grp = mock.Mock(id=uuidutils.generate_uuid())
        grp.volume_types = objects.VolumeTypeList(objects=[
            self.volume(**s).volume_type for s in specs or ({},)])
        return grp

    def test_not_consistent_is_left_to_cinder(self):
        self.consistent.return_value = False
        for call, args in ((self.adapter.create_group, (self.group(),)),
                           (self.adapter.update_group,
                            (self.group(), [], [])),
                           (self.adapter.delete_group, (self.group(), []))):
            self.assertRaises(NotImplementedError, call, *args)
        self.client.create_volume_group.assert_not_called()

    def test_create_uses_the_types_dedup(self):
        grp = self.group({'k2:dedup': 'false'})
        self.adapter.create_group(grp)
        self.client.create_volume_group.assert_called_once_with(
            'cgrp-%s' % grp.id, False)

    def test_mixed_dedup_types_are_refused(self):
        self.assertRaises(exception.InvalidGroupType,
                          self.adapter.create_group,
                          self.group({}, {'k2:dedup': 'false'}))
        self.client.create_volume_group.assert_not_called()

    def test_member_is_created_in_the_group_volume_group(self):
        grp = self.group()
        self.client.volume_group_by_name.return_value = \
            k2_fakes.group_record(20)
        self.client.create_volume.return_value = 9
        vol = mock.Mock(id='v1', name_id='v1', size=1, group=grp,
                        group_id=grp.id,
                        volume_type=self.volume().volume_type)
        self.assertEqual({'provider_id': '20/9/g'},
                         self.adapter.groups.create_member(vol))
        self.assertEqual(20, self.client.create_volume.call_args.args[2])

    def test_add_moves_volume_and_marks_it_shared(self):
        self.client.volume_group_by_name.return_value = \
            k2_fakes.group_record(20)
        _m, added, _r = self.adapter.update_group(
            self.group(), [self.volume(provider_id='7/9')], [])
        self.client.move_volume.assert_called_once_with(9, 20)
        self.client.delete_volume_group.assert_called_once_with(7)
        self.assertEqual('20/9/g', added[0]['provider_id'])

    def test_remove_gives_the_volume_its_own_group_again(self):
        self.client.volume_group_by_name.side_effect = [
            k2_fakes.group_record(20), None]
        self.client.create_volume_group.return_value = 8
        vol = self.volume(provider_id='20/9/g')
        _m, _a, removed = self.adapter.update_group(self.group(), [], [vol])
        self.client.move_volume.assert_called_once_with(9, 8)
        self.assertEqual('8/9', removed[0]['provider_id'])

    def test_shared_member_delete_keeps_group(self):
        self.adapter.delete_volume(self.volume(provider_id='20/9/g'))
        self.client.delete_volume.assert_called_once_with(9)
        self.client.delete_volume_group.assert_not_called()

    def test_group_snapshot_marks_missing_member_as_error(self):
        grp = self.group()
        gsnap = mock.Mock(id='gs1', group=grp)
        self.client.volume_group_by_name.return_value = \
            k2_fakes.group_record(20)
        self.client.create_snapshot.return_value = 30
        self.client.volsnaps_of.return_value = {9: 41}
        vols = [self.volume(provider_id='20/9/g'),
                self.volume(provider_id='20/10/g')]
        snaps = [self.snapshot(v, provider_id=None) for v in vols]
        model, updates = self.adapter.create_group_snapshot(gsnap, snaps)
        self.assertEqual(fields.GroupSnapshotStatus.ERROR, model['status'])
        self.assertEqual(['30/41/g', None],
                         [u['provider_id'] for u in updates])
        self.client.create_snapshot.assert_called_once_with('cgs-gs1', 20,
                                                            1)

    def test_delete_group_reports_failed_members(self):
        grp = self.group()
        self.client.delete_volume.side_effect = [True,
                                                 k2_fakes.api_error(500)]
        model, updates = self.adapter.delete_group(
            grp, [self.volume(provider_id='20/9/g'),
                  self.volume(provider_id='20/10/g')])
        self.assertEqual(fields.GroupStatus.ERROR_DELETING, model['status'])
        self.assertEqual(['deleted', 'error_deleting'],
                         [u['status'] for u in updates])

    def test_from_source_needs_array_copies_before_anything(self):
        self.adapter.capabilities = {}
        self.assertRaises(exception.VolumeDriverException,
                          self.adapter.create_group_from_src, self.group(),
                          [self.volume(provider_id=None)],
                          source_vols=[self.volume()])
        self.client.create_volume_group.assert_not_called()

    def test_revert_of_member_is_refused(self):
        vol = self.volume(provider_id='20/9/g')
        self.assertRaises(exception.VolumeDriverException,
                          self.adapter.revert_to_snapshot, vol,
                          self.snapshot(vol, provider_id='30/41/g'))
        self.client.restore_volume_group.assert_not_called()
