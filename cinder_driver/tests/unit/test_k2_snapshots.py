from unittest import mock

from cinder import exception

from cinder_driver.common import exception as flash_exception
from cinder_driver.tests.unit import k2_fakes


class SnapshotCloneTestCase(k2_fakes.AdapterTestCase):

    def test_snapshot_of_the_volume_group(self):
        self.client.create.return_value = {'id': 3}
        self.client.find.return_value = {'id': 4}
        vol = self.volume()
        snap = self.snapshot(vol, provider_id=None)
        self.assertEqual({'provider_id': '3/4'},
                         self.adapter.create_snapshot(snap))
        self.client.create.assert_called_once_with('snapshots', {
            'short_name': 'cs-%s' % snap.id,
            'source': {'ref': '/volume_groups/7'},
            'retention_policy': {'ref': '/retention_policies/1'},
            'is_auto_deleteable': False,
            'description': 'cinder:%s' % snap.id})
        self.client.find.assert_called_once_with('volsnaps', **{
            'snapshot.ref': '/snapshots/3', 'source.ref': '/volumes/9'})

    def test_snapshot_without_member_is_removed(self):
        self.client.create.return_value = {'id': 3}
        self.client.find.return_value = None
        self.assertRaises(flash_exception.ArrayBadReply,
                          self.adapter.create_snapshot,
                          self.snapshot(self.volume(), provider_id=None))
        self.client.delete.assert_called_once_with('snapshots', 3)

    def test_delete_busy_snapshot(self):
        self.client.delete.side_effect = k2_fakes.busy('views')
        self.assertRaises(exception.SnapshotIsBusy,
                          self.adapter.delete_snapshot,
                          self.snapshot(self.volume()))

    def test_clone_uses_volume_source(self):
        self.client.create.side_effect = [{'id': 5}, {'id': 6}]
        src = self.volume(provider_id='7/9')
        self.adapter.create_cloned_volume(self.volume(provider_id=None,
                                                      size=2), src)
        body = self.client.create.call_args_list[1].args[1]
        self.assertEqual({'ref': '/volumes/9'}, body['source'])
        self.assertEqual(2 * 1024 * 1024, body['size'])

    def test_from_snapshot_uses_volsnap(self):
        self.client.create.side_effect = [{'id': 5}, {'id': 6}]
        snap = self.snapshot(self.volume(), provider_id='3/4')
        self.adapter.create_volume_from_snapshot(
            self.volume(provider_id=None), snap)
        body = self.client.create.call_args_list[1].args[1]
        self.assertEqual({'ref': '/volsnaps/4'}, body['source'])

    def test_without_array_capability_the_host_copies(self):
        self.adapter.capabilities = {}
        self.adapter._host_id = mock.Mock(return_value=11)
        self.adapter._qemu_copy = mock.Mock()
        created = iter([{'id': 7}, {'id': 9}, {'id': 30},
                        {'id': 40, 'lun': 1}, {'id': 41, 'lun': 2}])
        self.client.create.side_effect = lambda res, body: next(created)
        self.client.find.return_value = {'id': 31}
        source = self.volume(provider_id='5/6')
        update = self.adapter.create_cloned_volume(
            self.volume(provider_id=None), source)
        self.assertEqual('7/9', update['provider_id'])
        self.assertEqual(
            ['volume_groups', 'volumes', 'snapshots', 'mappings',
             'mappings'], [c.args[0] for c in
                           self.client.create.call_args_list])
        self.assertEqual({'ref': '/volsnaps/31'},
                         self.client.create.call_args_list[3].args[1][
                             'volume'])
        self.adapter._qemu_copy.assert_called_once_with(mock.ANY, 1, 2)
        self.assertEqual([mock.call('mappings', 40),
                          mock.call('mappings', 41),
                          mock.call('snapshots', 30)],
                         self.client.delete.call_args_list)

    def test_failed_host_copy_removes_the_new_volume(self):
        self.adapter.capabilities = {}
        self.adapter._host_id = mock.Mock(return_value=11)
        self.adapter._qemu_copy = mock.Mock(
            side_effect=exception.VolumeBackendAPIException(data='boom'))
        created = iter([{'id': 7}, {'id': 9}, {'id': 40, 'lun': 1},
                        {'id': 41, 'lun': 2}])
        self.client.create.side_effect = lambda res, body: next(created)
        snap = self.snapshot(self.volume(), provider_id='3/4')
        self.assertRaises(exception.VolumeBackendAPIException,
                          self.adapter.create_volume_from_snapshot,
                          self.volume(provider_id=None), snap)
        self.assertEqual([mock.call('mappings', 40),
                          mock.call('mappings', 41),
                          mock.call('volumes', 9),
                          mock.call('volume_groups', 7)],
                         self.client.delete.call_args_list)

    def test_revert(self):
        vol = self.volume()
        self.adapter.revert_to_snapshot(vol, self.snapshot(vol))
        self.client.update.assert_called_once_with(
            'volume_groups', 7,
            {'last_restored_from': {'ref': '/snapshots/3'}})
