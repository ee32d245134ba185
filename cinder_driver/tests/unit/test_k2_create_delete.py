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

from unittest import mock

from cinder import exception

from cinder_driver.common import exception as flash_exception
from cinder_driver.tests.unit import k2_fakes

GIB = 1024 * 1024


class CreateDeleteTestCase(k2_fakes.AdapterTestCase):

    def test_create_sends_group_then_volume(self):
        self.client.create_volume_group.return_value = 5
        self.client.create_volume.return_value = 6
        vol = self.volume(provider_id=None, size=3,
                          **{'k2:dedup': 'false'})
        self.assertEqual({'provider_id': '5/6'},
                         self.adapter.create_volume(vol))
        self.client.create_volume_group.assert_called_once_with(
            'cvg-%s' % vol.name_id, False)
        self.client.create_volume.assert_called_once_with(
            'cv-%s' % vol.name_id, 3 * GIB, 5,
            description='cinder:%s' % vol.id, from_volume=None,
            from_volsnap=None)

    def test_failed_volume_create_removes_group(self):
        self.client.create_volume_group.return_value = 5
        self.client.create_volume.side_effect = k2_fakes.api_error(400)
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.create_volume,
                          self.volume(provider_id=None))
        self.client.delete_volume_group.assert_called_once_with(5)

    def test_cleanup_failure_does_not_hide_the_cause(self):
        self.client.create_volume_group.return_value = 5
        self.client.create_volume.side_effect = k2_fakes.api_error(400,
                                                                   'cause')
        self.client.delete_volume_group.side_effect = k2_fakes.api_error(
            500, 'other')
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.adapter.create_volume,
                                self.volume(provider_id=None))
        self.assertEqual('cause', err.error_code)

    def test_bad_spec_sends_nothing(self):
        self.assertRaises(exception.InvalidVolumeType,
                          self.adapter.create_volume,
                          self.volume(**{'k2:dedup': 'x'}))
        self.client.create_volume_group.assert_not_called()
        self.client.create_volume.assert_not_called()

    def test_delete_uses_provider_id(self):
        self.adapter.delete_volume(self.volume(provider_id='7/9'))
        self.client.delete_volume.assert_called_once_with(9)
        self.client.delete_volume_group.assert_called_once_with(7)
        self.client.volume_by_name.assert_not_called()

    def test_delete_without_provider_id_finds_by_name(self):
        self.client.volume_by_name.return_value = k2_fakes.volume_record(9)
        vol = self.volume(provider_id=None)
        self.adapter.delete_volume(vol)
        self.client.volume_by_name.assert_called_once_with(
            'cv-%s' % vol.name_id)
        self.client.delete_volume.assert_called_once_with(9)
        self.client.delete_volume_group.assert_called_once_with(7)

    def test_delete_of_unknown_volume_is_success(self):
        self.client.volume_by_name.return_value = None
        self.client.volume_group_by_name.return_value = None
        self.adapter.delete_volume(self.volume(provider_id='garbage'))
        self.client.delete_volume.assert_not_called()
        self.client.delete_volume_group.assert_not_called()

    def test_leftover_empty_group_of_a_failed_create_goes(self):
        self.client.volume_by_name.return_value = None
        self.client.volume_group_by_name.return_value = \
            k2_fakes.group_record(5, volumes_count=0)
        self.adapter.delete_volume(self.volume(provider_id=None))
        self.client.delete_volume_group.assert_called_once_with(5)

    def test_delete_refused_for_another_reason_is_busy(self):
        self.client.delete_volume.side_effect = k2_fakes.busy('snapshots')
        self.client.mappings_of.return_value = []
        self.assertRaises(exception.VolumeIsBusy,
                          self.adapter.delete_volume, self.volume())
        self.client.mappings_of.assert_called_once_with(volume_id=9)
        self.client.unmap.assert_called_once_with([])
        self.assertEqual(1, self.client.delete_volume.call_count)

    def test_delete_removes_mappings_cinder_no_longer_has(self):
        # Cinder deletes only volumes without attachments: a mapping left
        # by a service that died while attaching is stale.
        stale = [k2_fakes.mapping_record(33)]
        self.client.delete_volume.side_effect = [k2_fakes.busy('mapped'),
                                                 None]
        self.client.mappings_of.return_value = stale
        self.adapter.delete_volume(self.volume(provider_id='7/9'))
        self.client.unmap.assert_called_once_with(stale)
        self.assertEqual([mock.call(9), mock.call(9)],
                         self.client.delete_volume.call_args_list)
        self.client.delete_volume_group.assert_called_once_with(7)

    def test_group_refused_after_volume_delete_is_kept(self):
        self.client.delete_volume_group.side_effect = k2_fakes.busy('snaps')
        self.adapter.delete_volume(self.volume())
        self.client.delete_volume.assert_called_once_with(9)

    def test_extend(self):
        self.adapter.extend_volume(self.volume(), 4)
        self.client.update_volume.assert_called_once_with(
            9, size_kib=4 * GIB)

    def test_extend_of_missing_volume(self):
        self.client.volume_by_name.return_value = None
        self.assertRaises(exception.VolumeNotFound,
                          self.adapter.extend_volume,
                          self.volume(provider_id=None), 2)


class QoSTestCase(k2_fakes.AdapterTestCase):

    def typed(self, consumer, specs):
        from cinder import objects
        vol = self.volume(provider_id=None)
        vol.volume_type.qos_specs_id = '1e0d2c3b-4a59-4c6f-8e71-0a1b2c3d4e5f'
        vol.volume_type.qos_specs = objects.QualityOfServiceSpecs(
            consumer=consumer, specs=specs)
        return vol

    def test_backend_qos_is_refused_before_anything_is_created(self):
        vol = self.typed('back-end', {'total_iops_sec': '99999999'})
        e = self.assertRaises(exception.InvalidVolumeType,
                              self.adapter.create_volume, vol)
        self.assertIn('total_iops_sec=99999999', str(e))
        self.client.create_volume_group.assert_not_called()

    def test_frontend_qos_is_the_hypervisor_s(self):
        self.client.create_volume_group.return_value = 7
        self.client.create_volume.return_value = 9
        vol = self.typed('front-end', {'total_iops_sec': '500'})
        self.assertEqual({'provider_id': '7/9'},
                         self.adapter.create_volume(vol))

    def test_qos_of_a_type_given_by_id_is_looked_up(self):
        found = {'consumer': 'back-end', 'specs': {'read_iops_sec': '5'}}
        lookup = self.mock_object(
            __import__('cinder.volume.qos_specs',
                       fromlist=['get_qos_specs']), 'get_qos_specs',
            return_value=found)
        self.assertRaises(exception.InvalidVolumeType,
                          self.adapter.retype, self.volume(),
                          {'extra_specs': {}, 'qos_specs_id': 'q1'})
        self.assertEqual('q1', lookup.call_args.args[1])

    def test_delete_ignores_qos(self):
        vol = self.typed('both', {'read_iops_sec': '5'})
        vol.provider_id = '7/9'
        self.adapter.delete_volume(vol)
        self.client.delete_volume.assert_called_once_with(9)
