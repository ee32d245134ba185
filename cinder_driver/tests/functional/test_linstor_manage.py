"""LINSTOR driver: retype with re-placement, manage and unmanage, groups."""

from unittest import mock

from cinder import exception

from cinder_driver.tests.functional import linstor_driver_base as base


class LinstorRetypeManageTestCase(base.LinstorDriverTestCase):

    def test_retype_raises_redundancy_and_switches_group(self):
        vol = self.create()
        node = self.diskful(vol)[0]
        self.write(vol, node, 'write -P 0x33 0 128k')
        gold = self.volume_type(**{
            'linstor:redundancy': '3',
            'linstor:property:DrbdOptions:Net:protocol': 'C'})
        done, update = self.driver.retype(self.ctx, vol, gold, {}, {
            'host': vol.host})
        self.assertEqual((True, None), (done, update))
        self.assertEqual(['sat-1', 'sat-2', 'sat-3'], self.diskful(vol))
        group = self.rd(vol)['resource_group_name']
        self.assertTrue(group.startswith('cinder-%s' % gold.id))
        self.assertTrue(self.pattern_at(vol, 'sat-3', 0, 131072, 0x33))

    def test_retype_moves_replicas_to_another_pool_and_lowers_count(self):
        vol = self.create()
        thick = self.volume_type(**{'linstor:storage_pool': 'thickpool',
                                    'linstor:redundancy': '1'})
        self.driver.retype(self.ctx, vol, thick, {}, {'host': vol.host})
        self.assertEqual([(False, 'thickpool')],
                         list(self.replicas(vol).values()))

    def test_retype_with_a_bad_type_changes_nothing(self):
        vol = self.create()
        before = self.replicas(vol)
        bad = self.volume_type(**{'linstor:redundancy': 'many'})
        self.assertRaises(exception.InvalidVolumeType, self.driver.retype,
                          self.ctx, vol, bad, {}, {'host': vol.host})
        self.assertEqual(before, self.replicas(vol))

    def test_manage_and_unmanage(self):
        status, _b = self.array.linstor(
            'POST', '/v1/resource-groups/DfltRscGrp/spawn',
            {'resource_definition_name': 'legacy_db', 'volume_sizes':
             [1536 * 1024]})
        self.assertEqual(201, status)
        vol = self.volume(1)
        ref = {'source-name': 'legacy_db'}
        self.assertEqual(2, self.driver.manage_existing_get_size(vol, ref))
        update = self.driver.manage_existing(vol, ref)
        self.assertEqual({'provider_id': 'legacy_db'}, update)
        vol.provider_id = 'legacy_db'
        _s, rd = self.array.linstor('GET',
                                    '/v1/resource-definitions/legacy_db')
        self.assertTrue(rd['resource_group_name'].startswith('cinder-'))
        self.assertEqual(2 * 1024 * 1024,
                         rd['volume_definitions'][0]['size_kib'])
        self.driver.extend_volume(vol, 3)
        self.driver.unmanage(vol)
        status, _b = self.array.linstor('GET',
                                        '/v1/resource-definitions/legacy_db')
        self.assertEqual(200, status)
        self.assertRaises(exception.ManageExistingInvalidReference,
                          self.driver.manage_existing_get_size, vol,
                          {'source-name': 'nothing_here'})

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
        _s, listed = self.array.linstor('GET', '/v1/view/snapshots')
        self.assertEqual(sorted('snapshot-%s' % s.id for s in snaps),
                         sorted(s['name'] for s in listed))
        self.driver.delete_group_snapshot(self.ctx, mock.Mock(), snaps)
        _s, listed = self.array.linstor('GET', '/v1/view/snapshots')
        self.assertEqual([], listed)
