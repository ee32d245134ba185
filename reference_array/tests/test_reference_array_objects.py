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

"""K2 objects on the reference array: validation, semantics, persistence."""

import fixtures
import testtools

from cinder_driver.common import exception
from cinder_driver.k2 import client
from reference_array.core import engine
from reference_array.tests import array_fixture

GIB = 1024 * 1024


class K2ObjectsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.array = self.useFixture(array_fixture.ReferenceArray(
            args=['--capacity-gib', '64']))
        self.k2 = self.array.k2_client()

    def _vg(self, name='cvg-a', dedup=True):
        return self.k2.create('volume_groups', {'name': name, 'quota': 0,
                                                'is_dedup': dedup})

    def _vol(self, vg, name='cv-a', size=GIB):
        return self.k2.create('volumes', {
            'name': name, 'size': size,
            'volume_group': client.ref('volume_groups', vg['id'])})

    def _refused(self, fn, *args):
        err = self.assertRaises(exception.ArrayAPIError, fn, *args)
        self.assertEqual(400, err.status, err.msg)
        return err

    def test_volume_inherits_dedup_and_reports_capacity(self):
        vg = self._vg(dedup=False)
        vol = self._vol(vg, size=2 * GIB)
        self.assertEqual(False, vol['is_dedup'])
        self.assertEqual(2 * GIB, vol['size'])
        self.assertNotIn('_layer', vol)
        got = self.k2.find('volume_groups', name='cvg-a')
        self.assertEqual(1, got['volumes_count'])
        self.assertEqual(2 * GIB, got['volumes_provisioned_capacity'])
        cap = self.k2.find('system/capacity')
        self.assertEqual(2 * GIB, cap['provisioned_volumes'])
        # Never more than the filesystem under the array holds.
        self.assertEqual(min(64 * GIB, engine.filesystem_capacity(
            self.array.data_dir) // 1024), cap['total'])

    def test_bad_input_leaves_state_unchanged(self):
        vg = self._vg()
        vg_ref = client.ref('volume_groups', vg['id'])
        cases = [
            ('volume_groups', {'name': 'cvg-a', 'quota': 0}, 'already'),
            ('volume_groups', {'name': 'x' * 43, 'quota': 0}, 'longer'),
            ('volume_groups', {'name': 'bad name', 'quota': 0}, 'characters'),
            ('volume_groups', {'name': 'cvg-b'}, 'quota'),
            ('volume_groups', {'name': 'cvg-b', 'quota': -1}, 'minimum'),
            ('volume_groups', {'name': 'cvg-b', 'quota': 0,
                               'is_dedup': 'maybe'}, 'boolean'),
            ('volumes', {'name': 'v', 'size': 0, 'volume_group': vg_ref},
             'minimum'),
            ('volumes', {'name': 'v', 'size': 65 * GIB,
                         'volume_group': vg_ref}, 'maximum'),
            ('volumes', {'name': 'v', 'size': 'big',
                         'volume_group': vg_ref}, 'integer'),
            ('volumes', {'name': 'v', 'size': 1,
                         'volume_group': {'ref': '/volume_groups/99'}},
             'does not exist'),
            ('volumes', {'name': 'v', 'size': 1,
                         'volume_group': '/volume_groups/1'}, 'reference'),
            ('volumes', {'name': 'v', 'size': 1, 'volume_group': vg_ref,
                         'colour': 'red'}, 'colour'),
            ('hosts', {'name': 'h' * 33}, 'longer'),
            ('hosts', {'name': 'h1', 'type': 'Amiga'}, 'Amiga'),
        ]
        for resource, body, words in cases:
            err = self._refused(self.k2.create, resource, body)
            self.assertIn(words, err.msg, (resource, body))
        self.assertEqual(1, len(self.k2.search('volume_groups')))
        self.assertEqual(['CTRL'], [v['name'] for v in
                                    self.k2.search('volumes')])
        self.assertEqual([], self.k2.search('hosts'))

    def test_builtin_ctrl_volume(self):
        ctrl = self.k2.find('volumes', name='CTRL')
        self.assertIsNone(ctrl['volume_group'])
        for call, args in ((self.k2.delete, ('volumes', ctrl['id'])),
                           (self.k2.update, ('volumes', ctrl['id'],
                                             {'size': GIB}))):
            self._refused(call, *args)
        host = self.k2.create('hosts', {'name': 'h'})
        self._refused(self.k2.create, 'mappings', {
            'volume': client.ref('volumes', ctrl['id']),
            'host': client.ref('hosts', host['id'])})

    def test_extend_but_never_shrink(self):
        vol = self._vol(self._vg())
        self.assertEqual(3 * GIB, self.k2.update(
            'volumes', vol['id'], {'size': 3 * GIB})['size'])
        err = self._refused(self.k2.update, 'volumes', vol['id'],
                            {'size': GIB})
        self.assertIn('shrink', err.msg)
        self.assertEqual(3 * GIB, self.k2.get('volumes', vol['id'])['size'])

    def test_volume_cannot_change_dedup_by_moving(self):
        vol = self._vol(self._vg('cvg-d', dedup=True))
        nodedup = self._vg('cvg-n', dedup=False)
        self._refused(self.k2.update, 'volumes', vol['id'], {
            'volume_group': client.ref('volume_groups', nodedup['id'])})

    def test_group_with_volumes_cannot_be_deleted(self):
        vg = self._vg()
        vol = self._vol(vg)
        self._refused(self.k2.delete, 'volume_groups', vg['id'])
        self.assertTrue(self.k2.delete('volumes', vol['id']))
        self.assertTrue(self.k2.delete('volume_groups', vg['id']))
        self.assertFalse(self.k2.delete('volume_groups', vg['id']))

    def test_mappings_assign_luns_per_host(self):
        vg = self._vg()
        v1, v2 = self._vol(vg, 'cv-1'), self._vol(vg, 'cv-2')
        h1 = self.k2.create('hosts', {'name': 'compute-1', 'type': 'Linux'})
        h2 = self.k2.create('hosts', {'name': 'compute-2', 'type': 'Linux'})
        self.k2.create('host_iqns', {
            'iqn': 'iqn.1993-08.org.debian:01:c1',
            'host': client.ref('hosts', h1['id'])})
        self._refused(self.k2.create, 'host_iqns', {
            'iqn': 'iqn.1993-08.org.debian:01:c1',
            'host': client.ref('hosts', h2['id'])})
        self._refused(self.k2.create, 'host_iqns', {
            'iqn': 'not-an-iqn', 'host': client.ref('hosts', h2['id'])})
        maps = [self.k2.create('mappings', {
            'volume': client.ref('volumes', v['id']),
            'host': client.ref('hosts', h['id'])})
            for v, h in ((v1, h1), (v2, h1), (v1, h2))]
        self.assertEqual([1, 2, 1], [m['lun'] for m in maps])
        self._refused(self.k2.create, 'mappings', {
            'volume': client.ref('volumes', v1['id']),
            'host': client.ref('hosts', h1['id'])})
        found = self.k2.search('mappings', **{
            'volume.ref': '/volumes/%d' % v1['id'],
            'host.ref': '/hosts/%d' % h2['id']})
        self.assertEqual([maps[2]['id']], [m['id'] for m in found])
        self._refused(self.k2.delete, 'volumes', v1['id'])
        self._refused(self.k2.delete, 'hosts', h1['id'])
        for m in maps:
            self.k2.delete('mappings', m['id'])
        self.assertTrue(self.k2.delete('hosts', h1['id']))
        self.assertEqual([], self.k2.search('host_iqns'))

    def test_snapshot_view_and_restore(self):
        vg = self._vg()
        v1, v2 = self._vol(vg, 'cv-1'), self._vol(vg, 'cv-2')
        snap = self.k2.create('snapshots', {
            'short_name': 'cs-1',
            'source': client.ref('volume_groups', vg['id']),
            'retention_policy': client.ref('retention_policies', 1),
            'is_auto_deleteable': False})
        self.assertEqual('cvg-a:cs-1', snap['name'])
        volsnaps = self.k2.search('volsnaps', **{
            'snapshot.ref': '/snapshots/%d' % snap['id']})
        self.assertEqual({'/volumes/%d' % v1['id'], '/volumes/%d' % v2['id']},
                         {vs['source']['ref'] for vs in volsnaps})
        view = self.k2.create('snapshots', {
            'short_name': 'cview-1',
            'source': client.ref('snapshots', snap['id']),
            'retention_policy': client.ref('retention_policies', 1),
            'is_exposable': True})
        self.assertTrue(view['is_exposable'])
        self.assertEqual(2, len(self.k2.search('volsnaps', **{
            'snapshot.ref': '/snapshots/%d' % view['id']})))
        self._refused(self.k2.delete, 'snapshots', snap['id'])
        self.k2.delete('snapshots', view['id'])
        restored = self.k2.update('volume_groups', vg['id'], {
            'last_restored_from': client.ref('snapshots', snap['id'])})
        self.assertEqual('/snapshots/%d' % snap['id'],
                         restored['last_restored_from']['ref'])
        self.assertEqual(1, restored['snapshots_count'])
        self._refused(self.k2.delete, 'volume_groups', vg['id'])
        self.k2.delete('snapshots', snap['id'])
        self.assertEqual([], self.k2.search('volsnaps'))


class PersistenceTestCase(testtools.TestCase):

    def test_objects_survive_restart(self):
        data_dir = self.useFixture(fixtures.TempDir()).path
        first = array_fixture.ReferenceArray(data_dir=data_dir)
        first.setUp()
        k2 = first.k2_client()
        vg = k2.create('volume_groups', {'name': 'cvg-p', 'quota': 0,
                                         'is_dedup': False})
        k2.create('volumes', {'name': 'cv-p', 'size': GIB,
                              'volume_group': client.ref('volume_groups',
                                                         vg['id'])})
        self.assertEqual(0, first.stop())
        first.cleanUp()
        second = self.useFixture(array_fixture.ReferenceArray(
            data_dir=data_dir))
        vol = second.k2_client().find('volumes', name='cv-p')
        self.assertEqual((GIB, False), (vol['size'], vol['is_dedup']))
