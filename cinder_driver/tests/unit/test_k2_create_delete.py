from unittest import mock

from cinder import exception

from cinder_driver.common import exception as flash_exception
from cinder_driver.tests.unit import k2_fakes


class CreateDeleteTestCase(k2_fakes.AdapterTestCase):

    def test_create_sends_group_then_volume(self):
        self.client.create.side_effect = [{'id': 5}, {'id': 6}]
        vol = self.volume(provider_id=None, size=3,
                          **{'k2:dedup': 'false'})
        self.assertEqual({'provider_id': '5/6'},
                         self.adapter.create_volume(vol))
        (g_res, g_body), (v_res, v_body) = [
            c.args for c in self.client.create.call_args_list]
        self.assertEqual(('volume_groups', 'volumes'), (g_res, v_res))
        self.assertEqual({'name': 'cvg-%s' % vol.name_id, 'quota': 0,
                          'is_dedup': False}, g_body)
        self.assertEqual(3 * 1024 * 1024, v_body['size'])
        self.assertEqual({'ref': '/volume_groups/5'}, v_body['volume_group'])

    def test_failed_volume_create_removes_group(self):
        self.client.create.side_effect = [{'id': 5}, k2_fakes.api_error(400)]
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.create_volume,
                          self.volume(provider_id=None))
        self.client.delete.assert_called_once_with('volume_groups', 5)

    def test_cleanup_failure_does_not_hide_the_cause(self):
        self.client.create.side_effect = [{'id': 5},
                                          k2_fakes.api_error(400, 'cause')]
        self.client.delete.side_effect = k2_fakes.api_error(500, 'other')
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.adapter.create_volume,
                                self.volume(provider_id=None))
        self.assertEqual('cause', err.error_code)

    def test_bad_spec_sends_nothing(self):
        self.assertRaises(exception.InvalidVolumeType,
                          self.adapter.create_volume,
                          self.volume(**{'k2:dedup': 'x'}))
        self.client.create.assert_not_called()

    def test_delete_uses_provider_id(self):
        self.adapter.delete_volume(self.volume(provider_id='7/9'))
        self.assertEqual([mock.call('volumes', 9),
                          mock.call('volume_groups', 7)],
                         self.client.delete.call_args_list)
        self.client.find.assert_not_called()

    def test_delete_without_provider_id_finds_by_name(self):
        self.client.find.return_value = {'id': 9, 'volume_group':
                                         {'ref': '/volume_groups/7'}}
        vol = self.volume(provider_id=None)
        self.adapter.delete_volume(vol)
        self.client.find.assert_called_once_with('volumes',
                                                 name='cv-%s' % vol.name_id)
        self.assertEqual(2, self.client.delete.call_count)

    def test_delete_of_unknown_volume_is_success(self):
        self.client.find.return_value = None
        self.adapter.delete_volume(self.volume(provider_id='garbage'))
        self.client.delete.assert_not_called()

    def test_delete_of_mapped_volume_is_busy(self):
        self.client.delete.side_effect = k2_fakes.busy('mapped')
        self.assertRaises(exception.VolumeIsBusy,
                          self.adapter.delete_volume, self.volume())

    def test_extend(self):
        self.adapter.extend_volume(self.volume(), 4)
        self.client.update.assert_called_once_with(
            'volumes', 9, {'size': 4 * 1024 * 1024})

    def test_extend_of_missing_volume(self):
        self.client.find.return_value = None
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
        self.client.create.assert_not_called()

    def test_frontend_qos_is_the_hypervisor_s(self):
        self.client.create.side_effect = [{'id': 7}, {'id': 9}]
        vol = self.typed('front-end', {'total_iops_sec': '500'})
        self.assertEqual({'provider_id': '7/9'},
                         self.adapter.create_volume(vol))

    def test_delete_ignores_qos(self):
        vol = self.typed('both', {'read_iops_sec': '5'})
        vol.provider_id = '7/9'
        self.adapter.delete_volume(vol)
        self.client.delete.assert_any_call('volumes', 9)
