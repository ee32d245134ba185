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
"""K2 retype across deduplication: a copy is removed only when it is safe."""

from unittest import mock

from cinder_driver.common import exception as flash_exception
from cinder_driver.k2 import dedup_swap
from cinder_driver.tests.unit import k2_fakes


class DedupSwapTestCase(k2_fakes.AdapterTestCase):

    def setUp(self):
        super().setUp()
        self.swap = dedup_swap.DedupSwap(self.client)
        self.vol = self.volume()
        self.names = dedup_swap.temp_names(self.vol)
        self.client.volume.return_value = k2_fakes.volume_record(9, size=5)
        self.client.volume_by_name.return_value = None
        self.client.volume_group_by_name.return_value = None
        self.client.create_volume_group.return_value = 20
        self.client.create_volume.return_value = 21

    def _leave_copy(self):
        """The original's delete and the copy's removal both fail."""
        copy = k2_fakes.volume_record(21, name=self.names[0], group_id=20)
        group = k2_fakes.group_record(20, name=self.names[1])
        # Nothing of an earlier attempt; then the copy this one made.
        self.client.volume_by_name.side_effect = [None, copy, copy, copy]
        self.client.volume_group_by_name.side_effect = [None] + [group] * 3
        self.client.delete_volume.side_effect = k2_fakes.api_error(503)
        self.assertRaises(flash_exception.ArrayAPIError, self.swap.swap,
                          self.vol, k2_fakes.group_record(7), 9, False)
        self.assertEqual([((9,),), ((21,),)],
                         self.client.delete_volume.call_args_list)
        self.client.delete_volume.reset_mock(side_effect=True)
        self.client.delete_volume_group.reset_mock()

    def test_a_copy_whose_removal_failed_goes_at_the_retry(self):
        self._leave_copy()
        self.swap.retry()
        self.client.delete_volume.assert_called_once_with(21)
        self.client.delete_volume_group.assert_called_once_with(20)
        self.swap.retry()
        self.assertEqual(1, self.client.delete_volume.call_count)

    def test_a_copy_stays_when_the_original_may_have_been_deleted(self):
        self._leave_copy()
        # The cut delete of the original was applied after all: the copy
        # holds the volume's only data.
        self.client.volume.side_effect = k2_fakes.api_error(404)
        self.swap.retry()
        self.client.delete_volume.assert_not_called()
        self.client.delete_volume_group.assert_not_called()

    def test_objects_of_the_volume_with_temporary_names_stay(self):
        # A swap that could not rename: the volume itself carries them.
        self.client.volume_by_name.return_value = k2_fakes.volume_record(
            9, name=self.names[0], group_id=7)
        self.client.volume_group_by_name.return_value = \
            k2_fakes.group_record(7, name=self.names[1])
        self.client.create_volume_group.side_effect = k2_fakes.exists()
        self.assertRaises(flash_exception.ObjectExists, self.swap.swap,
                          self.vol, k2_fakes.group_record(7), 9, False)
        self.client.delete_volume.assert_not_called()
        self.client.delete_volume_group.assert_not_called()

    def test_the_next_retype_finishes_a_cut_tidy_first(self):
        groups = {'cvg-%s' % self.vol.name_id: k2_fakes.group_record(7)}
        self.client.volume_group_by_name.side_effect = groups.get
        self.client.delete_volume_group.side_effect = k2_fakes.api_error(503)
        # The original is deleted: the retype holds, the tidying waits.
        self.assertEqual((20, 21), self.swap.swap(
            self.vol, k2_fakes.group_record(7), 9, False))
        self.client.rename_volume_group.assert_not_called()
        # Back again, on the copy's ids: first the old group goes and the
        # copy takes the names, then the new copy is made.
        self.client.reset_mock(side_effect=True)
        self.client.volume_group_by_name.side_effect = groups.get
        self.client.volume_by_name.return_value = None
        self.client.volume.return_value = k2_fakes.volume_record(21)
        self.client.create_volume_group.return_value = 30
        self.client.create_volume.return_value = 31
        self.assertEqual((30, 31), self.swap.swap(
            self.vol, k2_fakes.group_record(20), 21, True))
        calls = [c[0] for c in self.client.method_calls]
        self.assertLess(calls.index('rename_volume_group'),
                        calls.index('create_volume_group'))
        self.assertLess(calls.index('delete_volume_group'),
                        calls.index('create_volume_group'))
        self.assertEqual(mock.call(7),
                         self.client.delete_volume_group.call_args_list[0])

    def test_deleting_the_volume_removes_what_a_retype_left(self):
        self._leave_copy()
        # The original goes with the volume: its copy is no data to keep.
        self.client.volume.side_effect = k2_fakes.api_error(404)
        self.client.volume_group_by_name.side_effect = lambda name: {
            self.names[1]: k2_fakes.group_record(20),
            'cvg-%s' % self.vol.name_id: k2_fakes.group_record(7)}[name]
        self.swap.forget(self.vol, 7)
        self.client.delete_volume.assert_called_once_with(21)
        # The volume's own group is the caller's to delete or keep.
        self.client.delete_volume_group.assert_called_once_with(20)
        self.swap.retry()
        self.assertEqual(1, self.client.delete_volume.call_count)

    def test_a_tidy_for_a_volume_deleted_since_is_done(self):
        self.client.volume_group_by_name.return_value = None
        self.client.rename_volume_group.side_effect = k2_fakes.api_error(503)
        self.swap.swap(self.vol, k2_fakes.group_record(7), 9, False)
        self.client.rename_volume_group.side_effect = k2_fakes.api_error(404)
        self.swap.retry()
        self.swap.retry()
        # Done at the first retry: the second one has nothing to do.
        self.assertEqual(2, self.client.rename_volume_group.call_count)
