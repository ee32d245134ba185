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

"""K2 driver: manage, unmanage, list manageable, retype."""

from cinder import exception

from cinder_driver.k2 import client
from cinder_driver.tests.functional import k2_driver_base

GIB = 1024 * 1024


class K2ManageTestCase(k2_driver_base.K2DriverTestCase):

    def _foreign(self, name='app-data', size=GIB + 5, dedup=True):
        k2 = self.array.k2_client()
        group = k2.create('volume_groups', {'name': name + '-vg', 'quota': 0,
                                            'is_dedup': dedup})
        return k2.create('volumes', {
            'name': name, 'size': size,
            'volume_group': client.ref('volume_groups', group['id'])})

    def test_manage_by_name_renames_and_rounds_up(self):
        self._foreign()
        vol = self.volume()
        ref = {'source-name': 'app-data'}
        self.assertEqual(2, self.driver.manage_existing_get_size(vol, ref))
        vol.size = 2
        vol.update(self.driver.manage_existing(vol, ref))
        found = self.array_volume(vol)
        self.assertEqual(2 * GIB, found['size'])
        group = self.array.k2_client().get(
            'volume_groups', client.ref_id(found['volume_group']))
        self.assertEqual('cvg-%s' % vol.name_id, group['name'])
        self.driver.unmanage(vol)
        self.assertEqual('', self.array_volume(vol)['description'])

    def test_unmanage_then_manage_again_by_the_same_name(self):
        vol = self.create()
        name = 'cv-%s' % vol.name_id
        self.driver.unmanage(vol)
        again = self.volume()
        again.update(self.driver.manage_existing(
            again, {'source-name': name}))
        self.assertEqual('cinder:%s' % again.id,
                         self.array_volume(again)['description'])

    def test_manage_by_id(self):
        foreign = self._foreign()
        vol = self.volume()
        ref = {'source-id': str(foreign['id'])}
        vol.update(self.driver.manage_existing(vol, ref))
        self.assertEqual(foreign['id'], self.array_volume(vol)['id'])

    def test_manage_refusals_change_nothing(self):
        self._foreign('mapped')
        k2 = self.array.k2_client()
        host = k2.create('hosts', {'name': 'h1'})
        k2.create('mappings', {
            'volume': client.ref('volumes', k2.find('volumes',
                                                    name='mapped')['id']),
            'host': client.ref('hosts', host['id'])})
        self._foreign('plain', dedup=False)
        managed = self.create()
        cases = [
            ({'source-name': 'no-such-volume'}, None),
            ({'source-id': 'abc'}, None),
            ({}, None),
            ({'source-name': 'mapped'}, None),
            ({'source-name': 'plain'}, None),
            # Still owned by another Cinder volume.
            ({'source-name': 'cv-%s' % managed.name_id}, None),
        ]
        for ref, vtype in cases:
            vol = self.volume(vtype=vtype)
            self.assertRaises(exception.ManageExistingInvalidReference,
                              self.driver.manage_existing, vol, ref)
        self.assertIsNotNone(k2.find('volumes', name='mapped'))
        self.assertIsNotNone(k2.find('volume_groups', name='plain-vg'))

    def test_list_manageable(self):
        self._foreign('app-1')
        managed = self.create()
        entries = self.driver.get_manageable_volumes(
            [managed], None, 1000, 0, ['size'], ['asc'])
        by_name = {e['reference']['source-name']: e for e in entries}
        self.assertTrue(by_name['app-1']['safe_to_manage'])
        own = by_name['cv-%s' % managed.name_id]
        self.assertFalse(own['safe_to_manage'])
        self.assertEqual(managed.id, own['cinder_id'])

    def test_retype_same_dedup_is_a_no_op(self):
        vol = self.create()
        same = self.volume_type(**{'k2:dedup': 'true'})
        self.assertEqual((True, None), self.driver.retype(
            self.ctx, vol, same, {}, {}))
        bad = self.volume_type(**{'k2:dedup': 'sometimes'})
        self.assertRaises(exception.InvalidVolumeType, self.driver.retype,
                          self.ctx, vol, bad, {}, {})

    def test_retype_changing_dedup_copies_on_the_array(self):
        vol = self.create(size=2)
        old_id = self.array_volume(vol)['id']
        nodedup = self.volume_type(**{'kaminario:thin_prov_type': 'nodedup'})
        retyped, update = self.driver.retype(self.ctx, vol, nodedup, {}, {})
        self.assertTrue(retyped)
        vol.update(update)
        found = self.array_volume(vol)
        self.assertNotEqual(old_id, found['id'])
        self.assertEqual((False, 2 * GIB, 'cinder:%s' % vol.id),
                         (found['is_dedup'], found['size'],
                          found['description']))
        group = self.array.k2_client().get(
            'volume_groups', client.ref_id(found['volume_group']))
        self.assertEqual('cvg-%s' % vol.name_id, group['name'])
        self.assertEqual(1, len(self.array.k2_client().search(
            'volume_groups')))

    def test_retype_changing_dedup_falls_back_when_attached(self):
        vol = self.create()
        self.driver.initialize_connection(vol, k2_driver_base.CONNECTOR)
        nodedup = self.volume_type(**{'k2:dedup': 'false'})
        self.assertEqual((False, None), self.driver.retype(
            self.ctx, vol, nodedup, {}, {}))
        self.assertTrue(self.array_volume(vol)['is_dedup'])

    def test_retype_changing_dedup_falls_back_with_snapshots(self):
        vol = self.create()
        self.snapshot(vol)
        nodedup = self.volume_type(**{'k2:dedup': 'false'})
        self.assertEqual((False, None), self.driver.retype(
            self.ctx, vol, nodedup, {}, {}))

    def test_migration_between_backends_of_one_array(self):
        vol = self.create()
        stats = self.driver.get_volume_stats(True)['pools'][0]
        same = {'host': 'cinder@other#other',
                'capabilities': {'location_info': stats['location_info']}}
        self.assertEqual((True, None),
                         self.driver.migrate_volume(self.ctx, vol, same))
        elsewhere = {'host': 'cinder@x#x', 'capabilities': {
            'location_info': 'cinder-flash:k2:another-array'}}
        self.assertEqual((False, None),
                         self.driver.migrate_volume(self.ctx, vol, elsewhere))
        self.assertEqual((False, None),
                         self.driver.migrate_volume(self.ctx, vol, {}))


class K2ManageSnapshotTestCase(k2_driver_base.K2DriverTestCase):

    def test_unmanage_and_manage_snapshot_again(self):
        from cinder.tests.unit import fake_snapshot
        from oslo_utils import uuidutils
        vol = self.create()
        snap = self.snapshot(vol)
        name = 'cs-%s' % snap.id
        self.driver.unmanage_snapshot(snap)
        again = fake_snapshot.fake_snapshot_obj(
            self.ctx, id=uuidutils.generate_uuid(), volume_id=vol.id,
            provider_id=None)
        again.volume = vol
        ref = {'source-name': name}
        self.assertEqual(1, self.driver.manage_existing_snapshot_get_size(
            again, ref))
        again.update(self.driver.manage_existing_snapshot(again, ref))
        found = self.array.k2_client().find('snapshots', short_name='cs-%s'
                                            % again.id)
        self.assertEqual('cinder:%s' % again.id, found['description'])
        self.driver.delete_snapshot(again)
        self.assertEqual([], self.array.k2_client().search('snapshots'))

    def test_manage_snapshot_refusals(self):
        from cinder.tests.unit import fake_snapshot
        from oslo_utils import uuidutils
        vol, other = self.create(), self.create()
        owned = self.snapshot(vol)
        foreign = self.snapshot(other)
        self.driver.unmanage_snapshot(foreign)
        target = fake_snapshot.fake_snapshot_obj(
            self.ctx, id=uuidutils.generate_uuid(), volume_id=vol.id,
            provider_id=None)
        target.volume = vol
        for ref in ({'source-name': 'cs-%s' % owned.id},
                    {'source-name': 'cs-%s' % foreign.id},
                    {'source-name': 'nothing'}, {'source-id': 'x'}, {}):
            self.assertRaises(exception.ManageExistingInvalidReference,
                              self.driver.manage_existing_snapshot, target,
                              ref)

    def test_list_manageable_snapshots(self):
        vol = self.create()
        snap = self.snapshot(vol)
        loose = self.snapshot(vol)
        self.driver.unmanage_snapshot(loose)
        entries = self.driver.get_manageable_snapshots(
            [snap], None, 1000, 0, ['size'], ['asc'])
        by_name = {e['reference']['source-name']: e for e in entries}
        self.assertFalse(by_name['cs-%s' % snap.id]['safe_to_manage'])
        self.assertTrue(by_name['cs-%s' % loose.id]['safe_to_manage'])
        self.assertEqual({'source-name': 'cv-%s' % vol.name_id},
                         by_name['cs-%s' % loose.id]['source_reference'])
