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

"""K2 driver: consistency groups on a live array."""

from cinder import exception
from cinder import objects
from cinder.objects import fields
from cinder.tests.unit import fake_group
from cinder.tests.unit import fake_group_snapshot
from cinder.tests.unit import fake_snapshot
from cinder.volume import group_types
from oslo_utils import uuidutils

from cinder_driver.tests.functional import k2_driver_base


class K2GroupTestCase(k2_driver_base.K2DriverTestCase):

    def setUp(self):
        super().setUp()
        self.cg_type = group_types.create(
            self.ctx, 'cg-%s' % uuidutils.generate_uuid()[:8],
            {'consistent_group_snapshot_enabled': '<is> True'})
        self.plain_type = group_types.create(
            self.ctx, 'plain-%s' % uuidutils.generate_uuid()[:8], {})

    def group(self, consistent=True, vtypes=None):
        grp = fake_group.fake_group_obj(
            self.ctx, id=uuidutils.generate_uuid(),
            group_type_id=(self.cg_type if consistent
                           else self.plain_type)['id'])
        grp.volume_types = objects.VolumeTypeList(
            objects=vtypes or [self.volume_type()])
        return grp

    def k2(self):
        return self.array.k2_client()

    def member(self, grp, size=1):
        vol = self.create(size=size)
        _m, added, _r = self.driver.update_group(self.ctx, grp, [vol], [])
        vol.provider_id = added[0]['provider_id']
        return vol

    def test_plain_groups_are_left_to_cinder(self):
        self.assertRaises(NotImplementedError, self.driver.create_group,
                          self.ctx, self.group(consistent=False))

    def test_consistent_snapshot_of_the_group(self):
        grp = self.group()
        self.assertEqual({'status': fields.GroupStatus.AVAILABLE},
                         self.driver.create_group(self.ctx, grp))
        members = [self.member(grp) for _n in range(3)]
        vg = self.k2().find('volume_groups', name='cgrp-%s' % grp.id)
        self.assertEqual(3, vg['volumes_count'])
        gsnap = fake_group_snapshot.fake_group_snapshot_obj(
            self.ctx, id=uuidutils.generate_uuid(), group_id=grp.id,
            group_type_id=grp.group_type_id)
        gsnap.group = grp
        snaps = []
        for vol in members:
            snap = fake_snapshot.fake_snapshot_obj(
                self.ctx, id=uuidutils.generate_uuid(), volume_id=vol.id)
            snap.volume = vol
            snaps.append(snap)
        before = len(self.array.k2_requests())
        model, updates = self.driver.create_group_snapshot(self.ctx, gsnap,
                                                           snaps)
        posts = [r for r in self.array.k2_requests()[before:]
                 if r.startswith('POST')]
        self.assertEqual(['POST /api/v2/snapshots'], posts)
        self.assertEqual(fields.GroupSnapshotStatus.AVAILABLE,
                         model['status'])
        volsnaps = {u['provider_id'].split('/')[1] for u in updates}
        self.assertEqual(3, len(volsnaps))
        # A volume from one member of the group snapshot.
        snaps[1].provider_id = updates[1]['provider_id']
        new = self.volume()
        new.update(self.driver.create_volume_from_snapshot(new, snaps[1]))
        self.assertIsNotNone(self.array_volume(new))
        self.driver.delete_group_snapshot(self.ctx, gsnap, snaps)
        self.assertEqual([], self.k2().search('snapshots'))

    def test_member_snapshot_picks_its_own_volume(self):
        grp = self.group()
        self.driver.create_group(self.ctx, grp)
        first, second = self.member(grp), self.member(grp)
        snap = self.snapshot(second)
        volsnap = self.k2().get('volsnaps',
                                int(snap.provider_id.split('/')[1]))
        self.assertEqual('/volumes/%s' % second.provider_id.split('/')[1],
                         volsnap['source']['ref'])
        self.assertRaises(exception.VolumeDriverException,
                          self.driver.revert_to_snapshot, self.ctx, second,
                          snap)
        del first

    def test_remove_and_delete(self):
        grp = self.group()
        self.driver.create_group(self.ctx, grp)
        keep, drop = self.member(grp), self.member(grp)
        _m, _a, removed = self.driver.update_group(self.ctx, grp, [], [keep])
        keep.provider_id = removed[0]['provider_id']
        self.assertFalse(keep.provider_id.endswith('/g'))
        own = self.k2().find('volume_groups', name='cvg-%s' % keep.name_id)
        self.assertEqual(1, own['volumes_count'])
        model, updates = self.driver.delete_group(self.ctx, grp, [drop])
        self.assertEqual(fields.GroupStatus.DELETED, model['status'])
        self.assertEqual('deleted', updates[0]['status'])
        self.assertIsNone(self.k2().find('volume_groups',
                                         name='cgrp-%s' % grp.id))
        self.assertIsNotNone(self.array_volume(keep))

    def test_member_delete_keeps_the_group(self):
        grp = self.group()
        self.driver.create_group(self.ctx, grp)
        vol = self.member(grp)
        self.member(grp)
        self.driver.delete_volume(vol)
        vg = self.k2().find('volume_groups', name='cgrp-%s' % grp.id)
        self.assertEqual(1, vg['volumes_count'])

    def test_mixed_dedup_is_refused(self):
        grp = self.group(vtypes=[self.volume_type(),
                                 self.volume_type(**{'k2:dedup': 'false'})])
        self.assertRaises(exception.InvalidGroupType,
                          self.driver.create_group, self.ctx, grp)
        self.assertEqual([], self.k2().search('volume_groups'))
        grp = self.group()
        self.driver.create_group(self.ctx, grp)
        nodedup = self.create(vtype=self.volume_type(**{'k2:dedup': 'no'}))
        self.assertRaises(exception.InvalidVolume, self.driver.update_group,
                          self.ctx, grp, [nodedup], [])
