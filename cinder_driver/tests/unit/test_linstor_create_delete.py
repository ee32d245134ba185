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

"""LINSTOR adapter: volume types to resource groups; create, delete,
extend."""

from cinder import exception

from cinder_driver.common import exception as flash_exception
from cinder_driver.linstor import placement
from cinder_driver.tests.unit import linstor_fakes as fakes


class TypePlacementTestCase(fakes.AdapterTestCase):

    def test_every_spec_maps_to_the_group(self):
        vtype = self.vtype(**{
            'linstor:redundancy': '3',
            'linstor:storage_pool': 'ssd, nvme',
            'linstor:diskless_on_remaining': '<is> True',
            'linstor:do_not_place_with_regex': '^backup-',
            'linstor:layer_list': 'drbd,luks,storage',
            'linstor:provider_list': 'lvm_thin,zfs_thin',
            'linstor:replicas_on_same': 'rack',
            'linstor:replicas_on_different': 'zone,Aux/room',
            'linstor:property:DrbdOptions:Disk:disk-flushes': 'no',
            'linstor:property:DrbdOptions/Net/max-buffers': '8000',
            'other:key': 'left alone'})
        flt, props, remote = placement.type_placement(vtype, self.conf)
        self.assertEqual({
            'place_count': 3, 'storage_pool_list': ['ssd', 'nvme'],
            'diskless_on_remaining': True,
            'not_place_with_rsc_regex': '^backup-',
            'layer_stack': ['DRBD', 'LUKS', 'STORAGE'],
            'provider_list': ['LVM_THIN', 'ZFS_THIN'],
            'replicas_on_same': ['Aux/rack'],
            'replicas_on_different': ['Aux/zone', 'Aux/room']}, flt)
        self.assertEqual({'DrbdOptions/Disk/disk-flushes': 'no',
                          'DrbdOptions/Net/max-buffers': '8000'}, props)
        self.assertIs(True, remote)

    def test_defaults_come_from_the_backend_and_the_pool(self):
        flt, props, _remote = placement.type_placement(None, self.conf, 'fast')
        self.assertEqual({'place_count': 2, 'storage_pool_list': ['fast']},
                         flt)
        self.assertEqual({}, props)
        flt, _p, _r = placement.type_placement(None, self.conf)
        self.assertEqual(['DfltStorPool'], flt['storage_pool_list'])

    def test_bad_specs_name_the_key(self):
        for specs in ({'linstor:redundancy': '17'},
                      {'linstor:redundancy': 'x'},
                      {'linstor:storage_pool': 'a,,b'},
                      {'linstor:layer_list': 'drbd'},
                      {'linstor:layer_list': 'drbd,tape,storage'},
                      {'linstor:provider_list': 'floppy'},
                      {'linstor:do_not_place_with_regex': '(['},
                      {'linstor:replica_count': '2'},
                      {'linstor:property:Aux:x': 'y'},
                      {'linstor:property:DrbdOptions:Net:protocol': ' '}):
            err = self.assertRaises(exception.InvalidVolumeType,
                                    placement.type_placement,
                                    self.vtype(**specs), self.conf)
            self.assertIn(list(specs)[0], str(err))


class CreateDeleteTestCase(fakes.AdapterTestCase):

    def test_create_makes_the_group_then_spawns(self):
        vtype = self.vtype(**{'linstor:redundancy': '3'})
        vol = self.volume(2, vtype)
        self.assertIsNone(self.adapter.create_volume(vol))
        group = self.adapter.rg_name(vtype, 'DfltStorPool')
        self.client.create_resource_group.assert_called_once_with(
            group, {'place_count': 3, 'storage_pool_list': ['DfltStorPool']},
            'cinder-flash volume type %s' % vtype.name)
        self.client.spawn.assert_called_once_with(group, self.rd(vol),
                                                  2 * 1024 * 1024)

    def test_group_names_keep_the_type_id_whole(self):
        vtype = self.vtype()
        name = self.adapter.rg_name(vtype, 'a-very-long-pool-name')
        self.assertTrue(name.startswith('cinder-%s-' % vtype.id))
        self.assertLessEqual(len(name), 48)
        self.assertNotEqual(name, self.adapter.rg_name(vtype, 'other-long-'
                                                       'pool-name'))

    def test_a_current_group_is_left_alone(self):
        vtype = self.vtype(**{'linstor:property:DrbdOptions:Net:protocol':
                              'C'})
        self.client.resource_group.return_value = {
            'select_filter': {'place_count': 2,
                              'storage_pool_list': ['DfltStorPool']},
            'props': {'DrbdOptions/Net/protocol': 'C'}}
        self.adapter.create_volume(self.volume(1, vtype))
        self.client.create_resource_group.assert_not_called()
        self.client.modify_resource_group.assert_not_called()

    def test_a_stale_group_is_updated(self):
        vtype = self.vtype(**{'linstor:redundancy': '3'})
        self.client.resource_group.return_value = {
            'select_filter': {'place_count': 2},
            'props': {'DrbdOptions/Disk/disk-flushes': 'no',
                      'Aux/note': 'kept'}}
        self.adapter.create_volume(self.volume(1, vtype))
        self.client.modify_resource_group.assert_called_once_with(
            self.adapter.rg_name(vtype, 'DfltStorPool'),
            {'place_count': 3, 'storage_pool_list': ['DfltStorPool']}, {},
            ['DrbdOptions/Disk/disk-flushes'])

    def test_a_group_made_meanwhile_is_used(self):
        self.client.create_resource_group.side_effect = fakes.refusal(522)
        self.client.resource_group.side_effect = [None, {
            'select_filter': {'place_count': 2,
                              'storage_pool_list': ['DfltStorPool']},
            'props': {}}]
        self.adapter.create_volume(self.volume())
        self.client.spawn.assert_called_once()
        self.client.modify_resource_group.assert_not_called()

    def test_failed_spawn_removes_the_definition_it_made(self):
        made = dict(fakes.rc(1, 'created'), ret_code=0x380000 | 0x1000000 | 1)
        self.client.spawn.side_effect = fakes.refusal(
            998, 'Failed to create file volume', before=[made])
        vol = self.volume()
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.create_volume, vol)
        self.client.delete_resource_definition.assert_called_once_with(
            self.rd(vol))

    def test_refused_spawn_deletes_nothing(self):
        self.client.spawn.side_effect = fakes.refusal(996, 'Not enough '
                                                      'nodes')
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.create_volume, self.volume())
        self.client.delete_resource_definition.assert_not_called()

    def test_name_taken_is_not_undone(self):
        self.client.spawn.side_effect = fakes.refusal(501, 'exists')
        err = self.assertRaises(exception.VolumeBackendAPIException,
                                self.adapter.create_volume, self.volume())
        self.assertIn('not made by this request', str(err))
        self.client.delete_resource_definition.assert_not_called()

    def test_bad_type_touches_nothing(self):
        vol = self.volume(1, self.vtype(**{'linstor:redundancy': 'two'}))
        self.assertRaises(exception.InvalidVolumeType,
                          self.adapter.create_volume, vol)
        self.assertEqual([], self.client.method_calls)

    def test_delete_and_extend_use_the_managed_name(self):
        vol = self.volume(provider_id='legacy_db')
        self.adapter.delete_volume(vol)
        self.client.delete_resource_definition.assert_called_once_with(
            'legacy_db')
        self.adapter.extend_volume(vol, 5)
        self.client.resize.assert_called_once_with('legacy_db',
                                                   5 * 1024 * 1024)
