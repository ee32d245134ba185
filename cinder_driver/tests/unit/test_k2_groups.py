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
        self.client.create.assert_not_called()

    def test_create_uses_the_types_dedup(self):
        grp = self.group({'k2:dedup': 'false'})
        self.adapter.create_group(grp)
        self.client.create.assert_called_once_with('volume_groups', {
            'name': 'cgrp-%s' % grp.id, 'quota': 0, 'is_dedup': False})

    def test_mixed_dedup_types_are_refused(self):
        self.assertRaises(exception.InvalidGroupType,
                          self.adapter.create_group,
                          self.group({}, {'k2:dedup': 'false'}))
        self.client.create.assert_not_called()

    def test_add_moves_volume_and_marks_it_shared(self):
        self.client.find.return_value = {'id': 20, 'is_dedup': True}
        _m, added, _r = self.adapter.update_group(
            self.group(), [self.volume(provider_id='7/9')], [])
        self.client.update.assert_called_once_with(
            'volumes', 9, {'volume_group': {'ref': '/volume_groups/20'}})
        self.client.delete.assert_called_once_with('volume_groups', 7)
        self.assertEqual('20/9/g', added[0]['provider_id'])

    def test_shared_member_delete_keeps_group(self):
        self.adapter.delete_volume(self.volume(provider_id='20/9/g'))
        self.client.delete.assert_called_once_with('volumes', 9)

    def test_group_snapshot_marks_missing_member_as_error(self):
        grp = self.group()
        gsnap = mock.Mock(id='gs1', group=grp)
        self.client.find.return_value = {'id': 20}
        self.client.create.return_value = {'id': 30}
        self.client.search.return_value = [
            {'id': 41, 'source': {'ref': '/volumes/9'}}]
        vols = [self.volume(provider_id='20/9/g'),
                self.volume(provider_id='20/10/g')]
        snaps = [self.snapshot(v, provider_id=None) for v in vols]
        model, updates = self.adapter.create_group_snapshot(gsnap, snaps)
        self.assertEqual(fields.GroupSnapshotStatus.ERROR, model['status'])
        self.assertEqual(['30/41/g', None],
                         [u['provider_id'] for u in updates])

    def test_delete_group_reports_failed_members(self):
        grp = self.group()
        self.client.delete.side_effect = [None, k2_fakes.api_error(500)]
        model, updates = self.adapter.delete_group(
            grp, [self.volume(provider_id='20/9/g'),
                  self.volume(provider_id='20/10/g')])
        self.assertEqual(fields.GroupStatus.ERROR_DELETING, model['status'])
        self.assertEqual(['deleted', 'error_deleting'],
                         [u['status'] for u in updates])

    def test_revert_of_member_is_refused(self):
        vol = self.volume(provider_id='20/9/g')
        self.assertRaises(exception.VolumeDriverException,
                          self.adapter.revert_to_snapshot, vol,
                          self.snapshot(vol, provider_id='30/41/g'))
        self.client.update.assert_not_called()
