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

"""LINSTOR adapter: retype with re-placement, manage and unmanage."""

from cinder import exception

from cinder_driver.linstor import client
from cinder_driver.tests.unit import linstor_fakes as fakes


def rsc(node, pool, diskless=False):
    return {'node_name': node, 'flags': ['DRBD_DISKLESS'] if diskless
            else [], 'volumes': [{'storage_pool_name': pool}]}


class RetypeTestCase(fakes.AdapterTestCase):

    def test_more_replicas(self):
        vol = self.volume()
        self.client.resources.return_value = [rsc('a', 'DfltStorPool'),
                                              rsc('b', 'DfltStorPool'),
                                              rsc('c', 'x', True)]
        new = self.vtype(**{'linstor:redundancy': '3'})
        self.assertEqual((True, None), self.adapter.retype(
            vol, new, {'host': vol.host}))
        self.client.modify_resource_definition.assert_called_once_with(
            self.rd(vol), {'resource_group': self.adapter.rg_name(
                new, 'DfltStorPool')})
        self.client.autoplace.assert_called_once_with(self.rd(vol), {
            'place_count': 3, 'storage_pool_list': ['DfltStorPool']})
        self.client.delete_resource.assert_not_called()

    def test_other_pool_places_first_then_removes(self):
        vol = self.volume()
        self.client.resources.return_value = [rsc('a', 'DfltStorPool'),
                                              rsc('b', 'DfltStorPool')]
        new = self.vtype(**{'linstor:storage_pool': 'ssd'})
        self.adapter.retype(vol, new, {'host': vol.host})
        calls = [c[0] for c in self.client.method_calls]
        self.assertLess(calls.index('autoplace'),
                        calls.index('delete_resource'))
        self.client.autoplace.assert_called_once_with(self.rd(vol), {
            'place_count': 4, 'storage_pool_list': ['ssd']})
        removed = self.client.delete_resource.call_args_list
        self.assertEqual(['a', 'b'], [c[0][1] for c in removed])

    def test_fewer_replicas(self):
        vol = self.volume()
        self.client.resources.return_value = [rsc(n, 'DfltStorPool')
                                              for n in 'abc']
        self.adapter.retype(vol, self.vtype(**{'linstor:redundancy': '1'}),
                            {'host': vol.host})
        self.client.autoplace.assert_not_called()
        removed = self.client.delete_resource.call_args_list
        self.assertEqual(['b', 'c'], [c[0][1] for c in removed])

    def test_failed_placement_returns_the_old_group(self):
        vol = self.volume()
        self.client.resource_definition.return_value = {
            'name': self.rd(vol), 'resource_group_name': 'old-group'}
        self.client.resources.return_value = [rsc('a', 'DfltStorPool')]
        self.client.autoplace.side_effect = client.LinstorRefusal(
            'Not enough available nodes')
        new = self.vtype(**{'linstor:storage_pool': 'ssd'})
        self.assertRaises(client.LinstorRefusal, self.adapter.retype,
                          vol, new, {'host': vol.host})
        groups = [c[0][1]['resource_group'] for c in
                  self.client.modify_resource_definition.call_args_list]
        self.assertEqual(2, len(groups))
        self.assertTrue(groups[0].startswith('cinder-' + new.id))
        self.assertEqual('old-group', groups[1])
        self.client.delete_resource.assert_not_called()

    def test_bad_type_changes_nothing(self):
        self.assertRaises(exception.InvalidVolumeType, self.adapter.retype,
                          self.volume(), self.vtype(**{
                              'linstor:layer_list': 'storage,drbd'}), {})
        self.assertEqual([], self.client.method_calls)


class ManageTestCase(fakes.AdapterTestCase):

    def test_bad_references(self):
        vol = self.volume()
        self.client.resource_definition.side_effect = [
            None, {'name': 'two'}]
        self.client.volume_definitions.return_value = [{}, {}]
        for ref in ({}, {'source-name': 'missing'}, {'source-name': 'two'}):
            self.assertRaises(exception.ManageExistingInvalidReference,
                              self.adapter.manage_existing_get_size, vol,
                              ref)

    def test_unmanage_leaves_linstor_alone(self):
        self.adapter.unmanage(self.volume())
        self.assertEqual([], self.client.method_calls)
