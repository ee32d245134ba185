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
        self.client.delete.side_effect = k2_fakes.api_error(400, 'views')
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

    def test_without_array_capability_nothing_is_created(self):
        self.adapter.capabilities = {}
        err = self.assertRaises(exception.VolumeDriverException,
                                self.adapter.create_cloned_volume,
                                self.volume(provider_id=None),
                                self.volume())
        self.assertIn('volume_source', err.msg)
        self.client.create.assert_not_called()

    def test_revert(self):
        vol = self.volume()
        self.adapter.revert_to_snapshot(vol, self.snapshot(vol))
        self.client.update.assert_called_once_with(
            'volume_groups', 7,
            {'last_restored_from': {'ref': '/snapshots/3'}})
