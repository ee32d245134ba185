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

"""K2 snapshots attached for backups through views."""

from cinder import exception

from cinder_driver.common import exception as flash_exception
from cinder_driver.k2 import records
from cinder_driver.tests.unit import k2_fakes

CONNECTOR = k2_fakes.CONNECTOR


class SnapshotExportTestCase(k2_fakes.AdapterTestCase):

    def setUp(self):
        super().setUp()
        self.snap = self.snapshot(self.volume(), provider_id='3/4')
        self.client.volsnaps_of.return_value = {9: 4}
        self.client.host_of_initiators.return_value = 6
        self.client.create_host.return_value = 6
        self.client.map_volsnap.return_value = 2

    def view(self, view_id=30):
        return records.Snapshot(view_id, 'csv-%s' % self.snap.id, 7, '',
                                True)

    def test_first_attach_makes_a_view_and_maps_it_read_only(self):
        self.client.snapshot_by_name.return_value = None
        self.client.create_view.return_value = 30
        self.client.volsnap_of.return_value = 41
        info = self.adapter.initialize_connection_snapshot(self.snap,
                                                           CONNECTOR)
        self.client.create_view.assert_called_once_with(
            'csv-%s' % self.snap.id, 3, 1)
        self.client.volsnap_of.assert_called_once_with(30, 9)
        self.client.map_volsnap.assert_called_once_with(6, 41)
        self.assertEqual((2, 'ro', self.snap.id), (
            info['data']['target_lun'], info['data']['access_mode'],
            info['data']['volume_id']))
        self.client.create_volume.assert_not_called()

    def test_second_attach_uses_the_view(self):
        self.client.snapshot_by_name.return_value = self.view()
        self.client.volsnap_of.return_value = 41
        self.adapter.initialize_connection_snapshot(self.snap, CONNECTOR)
        self.client.create_view.assert_not_called()
        self.client.map_volsnap.assert_called_once_with(6, 41)

    def test_failed_map_removes_only_a_view_it_made(self):
        self.client.volsnap_of.return_value = 41
        self.client.map_volsnap.side_effect = k2_fakes.api_error(500)
        self.client.snapshot_by_name.return_value = None
        self.client.create_view.return_value = 30
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.initialize_connection_snapshot,
                          self.snap, CONNECTOR)
        self.client.delete_snapshot.assert_called_once_with(30)
        self.client.delete_snapshot.reset_mock()
        self.client.snapshot_by_name.return_value = self.view()
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.initialize_connection_snapshot,
                          self.snap, CONNECTOR)
        self.client.delete_snapshot.assert_not_called()

    def test_snapshot_without_its_image_is_not_found(self):
        self.client.volsnaps_of.return_value = {9: 5}
        self.assertRaises(exception.SnapshotNotFound,
                          self.adapter.initialize_connection_snapshot,
                          self.snap, CONNECTOR)
        self.client.create_view.assert_not_called()

    def test_last_detach_removes_the_view(self):
        self.client.snapshot_by_name.return_value = self.view()
        self.client.volsnaps_of.return_value = {9: 41}
        mapped = k2_fakes.mapping_record(70, target='/volsnaps/41')
        self.client.mappings_of.side_effect = [[mapped], []]
        self.adapter.terminate_connection_snapshot(self.snap, CONNECTOR)
        self.client.unmap.assert_called_once_with([mapped])
        self.client.delete_snapshot.assert_called_once_with(30)

    def test_view_mapped_elsewhere_stays(self):
        self.client.snapshot_by_name.return_value = self.view()
        self.client.volsnaps_of.return_value = {9: 41}
        other = k2_fakes.mapping_record(71, host_id=8,
                                        target='/volsnaps/41')
        self.client.mappings_of.side_effect = [[], [other]]
        self.adapter.terminate_connection_snapshot(self.snap, CONNECTOR)
        self.client.delete_snapshot.assert_not_called()

    def test_detach_without_a_view_does_nothing(self):
        self.client.snapshot_by_name.return_value = None
        self.adapter.terminate_connection_snapshot(self.snap, CONNECTOR)
        self.client.unmap.assert_not_called()
        self.client.delete_snapshot.assert_not_called()

    def test_snapshot_delete_takes_a_left_over_view_along(self):
        self.client.delete_snapshot.side_effect = [k2_fakes.busy(), True,
                                                   True]
        self.client.snapshot_by_name.return_value = self.view()
        self.client.volsnaps_of.return_value = {9: 41}
        mapped = k2_fakes.mapping_record(70, target='/volsnaps/41')
        self.client.mappings_of.side_effect = [[mapped], []]
        self.adapter.delete_snapshot(self.snap)
        self.client.unmap.assert_called_once_with([mapped])
        self.assertEqual([((3,),), ((30,),), ((3,),)],
                         [c[:1] for c in
                          self.client.delete_snapshot.call_args_list])
