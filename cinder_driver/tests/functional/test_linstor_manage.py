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

"""LINSTOR driver: retype with re-placement, manage and unmanage, groups."""

from unittest import mock

from cinder import exception

from cinder_driver.tests.functional import linstor_driver_base as base
from cinder_driver.tests import objects


class LinstorRetypeManageTestCase(base.LinstorDriverTestCase):

    def test_retype_raises_redundancy_and_switches_group(self):
        self.need_nodes(3)
        vol = self.create()
        node = self.diskful(vol)[0]
        before = self.diskful(vol)
        self.write(vol, node, 'write -P 0x33 0 128k')
        gold = self.volume_type(**{
            'linstor:redundancy': '3',
            'linstor:property:DrbdOptions:Net:protocol': 'C'})
        done, update = self.driver.retype(self.ctx, vol, gold, {}, {
            'host': vol.host})
        self.assertEqual((True, None), (done, update))
        self.assertEqual(sorted(self.target.nodes[:3]), self.diskful(vol))
        group = self.rd(vol)['resource_group_name']
        self.assertTrue(group.startswith(base.PREFIX + gold.id))
        new = [n for n in self.diskful(vol) if n not in before][0]
        self.assertTrue(self.pattern_at(vol, new, 0, 131072, 0x33))

    def test_retype_moves_replicas_to_another_pool_and_lowers_count(self):
        pool = self.need_thick_pool()
        vol = self.create()
        thick = self.volume_type(**{'linstor:storage_pool': pool,
                                    'linstor:redundancy': '1'})
        self.driver.retype(self.ctx, vol, thick, {}, {'host': vol.host})
        self.assertEqual([(False, pool)],
                         list(self.replicas(vol).values()))

    def test_retype_with_a_bad_type_changes_nothing(self):
        vol = self.create()
        before = self.replicas(vol)
        bad = self.volume_type(**{'linstor:redundancy': 'many'})
        self.assertRaises(exception.InvalidVolumeType, self.driver.retype,
                          self.ctx, vol, bad, {}, {'host': vol.host})
        self.assertEqual(before, self.replicas(vol))

    def test_retype_applies_the_new_type_properties(self):
        vol = self.create()
        gold = self.volume_type(**{
            'linstor:property:DrbdOptions:Net:max-buffers': '9000'})
        self.driver.retype(self.ctx, vol, gold, {}, {'host': vol.host})
        rg = self.group_of(vol)
        self.assertTrue(rg['name'].startswith(base.PREFIX + gold.id))
        self.assertEqual('9000', rg['props']['DrbdOptions/Net/max-buffers'])

    def test_manage_and_unmanage(self):
        name = self.made_elsewhere('legacy_db_%s' % self.getUniqueInteger())
        status, _b = self.linstor(
            'POST', '/v1/resource-groups/DfltRscGrp/spawn',
            {'resource_definition_name': name, 'volume_sizes':
             [1536 * 1024], 'definitions_only': True})
        self.assertEqual(201, status)
        vol = self.volume(1)
        ref = {'source-name': name}
        self.assertEqual(2, self.driver.manage_existing_get_size(vol, ref))
        listed = {r['reference']['source-name']: r
                  for r in self.driver.get_manageable_volumes(
                      [], None, 1000, 0, ['size'], ['asc'])}
        self.assertEqual((True, 2), (listed[name]['safe_to_manage'],
                                     listed[name]['size']))
        update = self.driver.manage_existing(vol, ref)
        self.assertEqual({'provider_id': name}, update)
        vol.provider_id = name
        _s, rd = self.linstor('GET', '/v1/resource-definitions/%s' % name)
        self.assertTrue(rd['resource_group_name'].startswith(base.PREFIX))
        _s, vds = self.linstor('GET', '/v1/resource-definitions/%s/'
                               'volume-definitions' % name)
        self.assertEqual(2 * 1024 * 1024, vds[0]['size_kib'])
        listed = {r['reference']['source-name']: r
                  for r in self.driver.get_manageable_volumes(
                      [vol], None, 1000, 0, ['size'], ['asc'])}
        self.assertEqual((False, vol.id), (listed[name]['safe_to_manage'],
                                           listed[name]['cinder_id']))
        self.driver.extend_volume(vol, 3)
        self.driver.unmanage(vol)
        status, _b = self.linstor('GET', '/v1/resource-definitions/%s' %
                                  name)
        self.assertEqual(200, status)
        self.assertRaises(exception.ManageExistingInvalidReference,
                          self.driver.manage_existing_get_size, vol,
                          {'source-name': 'nothing_here'})

    def test_manage_a_snapshot(self):
        vol = self.create()
        self.linstor('POST', '/v1/resource-definitions/volume-%s/snapshots'
                     % vol.name_id, {'name': 'nightly'})
        listed = {r['reference']['source-name']: r
                  for r in self.driver.get_manageable_snapshots(
                      [], None, 1000, 0, ['size'], ['asc'])}
        self.assertTrue(listed['nightly']['safe_to_manage'])
        snap = objects.snapshot(self.ctx, vol)
        ref = {'source-name': 'nightly'}
        self.assertEqual(1, self.driver.manage_existing_snapshot_get_size(
            snap, ref))
        self.assertEqual({'provider_id': 'nightly'},
                         self.driver.manage_existing_snapshot(snap, ref))

    @mock.patch('cinder.volume.volume_utils.is_group_a_cg_snapshot_type',
                return_value=True)
    def test_consistency_group_snapshot_is_one_cut(self, _cg):
        vols = [self.create(), self.create()]
        snaps = []
        for vol in vols:
            snap = mock.Mock(id=vol.id[:8] + '-snap', volume=vol,
                             provider_id=None)
            snaps.append(snap)
        _r, calls = self.count(self.driver.create_group_snapshot, self.ctx,
                               mock.Mock(), snaps)
        self.assertEqual(['POST /v1/actions/snapshot/multi'], calls)
        mine = {'resources': ['volume-%s' % v.name_id for v in vols]}
        _s, listed = self.linstor('GET', '/v1/view/snapshots', params=mine)
        self.assertEqual(sorted('snapshot-%s' % s.id for s in snaps),
                         sorted(s['name'] for s in listed))
        self.driver.delete_group_snapshot(self.ctx, mock.Mock(), snaps)
        _s, listed = self.linstor('GET', '/v1/view/snapshots', params=mine)
        self.assertEqual([], listed)
