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

from cinder_driver.common import exception as flash_exception
from cinder_driver.tests.unit import k2_fakes

GIB = 1024 * 1024


class SnapshotCloneTestCase(k2_fakes.AdapterTestCase):

    def test_snapshot_of_the_volume_group(self):
        self.client.create_snapshot.return_value = 3
        self.client.volsnap_of.return_value = 4
        vol = self.volume()
        snap = self.snapshot(vol, provider_id=None)
        self.assertEqual({'provider_id': '3/4'},
                         self.adapter.create_snapshot(snap))
        self.client.create_snapshot.assert_called_once_with(
            'cs-%s' % snap.id, 7, 1, description='cinder:%s' % snap.id)
        self.client.volsnap_of.assert_called_once_with(3, 9)

    def test_snapshot_without_member_is_removed(self):
        self.client.create_snapshot.return_value = 3
        self.client.volsnap_of.return_value = None
        self.assertRaises(flash_exception.ArrayBadReply,
                          self.adapter.create_snapshot,
                          self.snapshot(self.volume(), provider_id=None))
        self.client.delete_snapshot.assert_called_once_with(3)

    def test_snapshot_found_by_name(self):
        self.client.snapshot_by_name.return_value = mock.Mock(id=30)
        self.client.volsnap_of.return_value = 40
        snap = self.snapshot(self.volume(), provider_id=None)
        self.assertEqual((30, 40), self.adapter.snapshot_ids(snap))
        self.client.snapshot_by_name.assert_called_once_with(
            'cs-%s' % snap.id)
        self.client.volsnap_of.assert_called_once_with(30)

    def test_delete_busy_snapshot(self):
        self.client.delete_snapshot.side_effect = k2_fakes.busy('views')
        # Views that are not the snapshot's own are never touched.
        self.client.snapshot_by_name.return_value = None
        self.assertRaises(exception.SnapshotIsBusy,
                          self.adapter.delete_snapshot,
                          self.snapshot(self.volume()))

    def test_clone_uses_volume_source(self):
        self.client.create_volume_group.return_value = 5
        self.client.create_volume.return_value = 6
        src = self.volume(provider_id='7/9')
        self.adapter.create_cloned_volume(self.volume(provider_id=None,
                                                      size=2), src)
        args = self.client.create_volume.call_args
        self.assertEqual(9, args.kwargs['from_volume'])
        self.assertEqual((2 * GIB, 5), args.args[1:])

    def test_from_snapshot_uses_volsnap(self):
        self.client.create_volume_group.return_value = 5
        self.client.create_volume.return_value = 6
        snap = self.snapshot(self.volume(), provider_id='3/4')
        self.adapter.create_volume_from_snapshot(
            self.volume(provider_id=None), snap)
        self.assertEqual(4, self.client.create_volume.call_args.kwargs[
            'from_volsnap'])

    def _host_copy(self, copy=None):
        self.adapter.capabilities = {}
        self.adapter.hosts.host_id = mock.Mock(return_value=11)
        copier = self.adapter.host_copy
        copier._qemu_copy = mock.Mock(side_effect=copy)
        self.client.create_volume_group.return_value = 7
        self.client.create_volume.return_value = 9
        self.client.map_volsnap.return_value = 1
        self.client.map_volume.return_value = 2
        self.client.mappings_of.side_effect = lambda **kw: [kw]
        return copier

    def test_without_array_capability_the_host_copies(self):
        copier = self._host_copy()
        self.client.create_snapshot.return_value = 30
        self.client.volsnap_of.return_value = 31
        source = self.volume(provider_id='5/6')
        update = self.adapter.create_cloned_volume(
            self.volume(provider_id=None), source)
        self.assertEqual('7/9', update['provider_id'])
        self.client.create_snapshot.assert_called_once_with(
            mock.ANY, 5, 1)
        self.client.volsnap_of.assert_called_once_with(30, 6)
        self.client.map_volsnap.assert_called_once_with(11, 31)
        self.client.map_volume.assert_called_once_with(11, 9)
        copier._qemu_copy.assert_called_once_with(mock.ANY, 1, 2)
        self.assertEqual([mock.call([{'host_id': 11, 'volsnap_id': 31}]),
                          mock.call([{'host_id': 11, 'volume_id': 9}])],
                         self.client.unmap.call_args_list)
        self.client.delete_snapshot.assert_called_once_with(30)

    def test_failed_host_copy_removes_the_new_volume(self):
        self._host_copy(exception.VolumeBackendAPIException(data='boom'))
        snap = self.snapshot(self.volume(), provider_id='3/4')
        self.assertRaises(exception.VolumeBackendAPIException,
                          self.adapter.create_volume_from_snapshot,
                          self.volume(provider_id=None), snap)
        self.assertEqual(2, self.client.unmap.call_count)
        self.client.delete_volume.assert_called_once_with(9)
        self.client.delete_volume_group.assert_called_once_with(7)

    def test_fc_cannot_copy_through_the_host(self):
        from cinder_driver.k2 import protocols
        fc = protocols.K2FCAdapter(self.conf, self.client, '1.0.0')
        self.assertRaises(exception.VolumeDriverException,
                          fc.create_volume_from_snapshot,
                          self.volume(provider_id=None),
                          self.snapshot(self.volume(), provider_id='3/4'))
        self.client.create_volume_group.assert_not_called()

    def test_revert(self):
        vol = self.volume()
        self.adapter.revert_to_snapshot(vol, self.snapshot(vol))
        self.client.restore_volume_group.assert_called_once_with(7, 3)
