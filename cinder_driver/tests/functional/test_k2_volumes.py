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

"""K2 driver: create, delete, extend, types, stats on a live array."""

from cinder.common import constants
from cinder import exception

from cinder_driver.common import stats as stats_mod
from cinder_driver.k2 import driver as k2_driver
from cinder_driver.tests.functional import k2_driver_base
from cinder_driver.tests import scheduler_view
from reference_array.core import engine

GIB = 1024 * 1024


class K2VolumeTestCase(k2_driver_base.K2DriverTestCase):

    def test_driver_class_contract(self):
        from cinder.interface import volume_driver
        for cls in (k2_driver.K2ISCSIDriver, k2_driver.K2FCDriver):
            self.assertTrue(issubclass(cls, volume_driver.VolumeDriverCore))
            self.assertEqual('1.1.0', cls.VERSION)
            self.assertTrue(cls.SUPPORTS_ACTIVE_ACTIVE)
        names = [o.name for o in self.driver.get_driver_options()]
        for name in ('san_ip', 'san_password', 'flash_rest_read_timeout',
                     'k2_iscsi_portals', 'driver_ssl_cert_path'):
            self.assertIn(name, names)

    def test_create_and_delete_round_trips(self):
        vol = self.volume(size=2)
        update, sent = self.count(self.driver.create_volume, vol)
        self.assertEqual(['POST /api/v2/volume_groups',
                          'POST /api/v2/volumes'], sent)
        vol.update(update)
        found = self.array_volume(vol)
        self.assertEqual((2 * GIB, True), (found['size'], found['is_dedup']))
        _none, sent = self.count(self.driver.delete_volume, vol)
        self.assertEqual(2, len(sent))
        self.assertIsNone(self.array_volume(vol))
        self.assertEqual([], self.array.k2_client().search('volume_groups'))

    def test_delete_of_missing_volume_succeeds(self):
        vol = self.volume()
        self.driver.delete_volume(vol)
        vol = self.create()
        self.driver.delete_volume(vol)
        self.driver.delete_volume(vol)

    def test_names_follow_name_id(self):
        vol = self.volume()
        vol.name_id = '0a7a5bc6-0000-4000-8000-000000000001'
        self.assertNotEqual(vol.id, vol.name_id)
        vol.update(self.driver.create_volume(vol))
        k2 = self.array.k2_client()
        self.assertIsNotNone(k2.find('volumes', name='cv-' + vol.name_id))
        self.assertIsNone(k2.find('volumes', name='cv-' + vol.id))

    def test_nodedup_types(self):
        for specs in ({'k2:dedup': '<is> False'},
                      {'kaminario:thin_prov_type': 'nodedup'}):
            vol = self.create(vtype=self.volume_type(**specs))
            self.assertFalse(self.array_volume(vol)['is_dedup'])

    def test_bad_specs_create_nothing(self):
        cases = ({'k2:dedup': 'perhaps'}, {'k2:colour': 'red'},
                 {'kaminario:thin_prov_type': 'sometimes'},
                 {'k2:dedup': 'true', 'kaminario:thin_prov_type': 'nodedup'},
                 {'replication_enabled': '<is> True'},
                 # Immutable snapshots: not offered by K2.
                 {'k2:snapshot_retention_hours': '24'})
        for specs in cases:
            vol = self.volume(vtype=self.volume_type(**specs))
            _r, sent = self.count(self.assertRaises,
                                  exception.InvalidVolumeType,
                                  self.driver.create_volume, vol)
            self.assertEqual([], [s for s in sent
                                  if not s.startswith('GET')], specs)
        self.assertEqual([], self.array.k2_client().search('volume_groups'))

    def test_backend_qos_is_refused_frontend_qos_is_fine(self):
        from cinder import objects
        for consumer, refused in (('back-end', True), ('both', True),
                                  ('front-end', False)):
            vtype = self.volume_type()
            vtype.qos_specs_id = '1e0d2c3b-4a59-4c6f-8e71-0a1b2c3d4e5f'
            vtype.qos_specs = objects.QualityOfServiceSpecs(
                consumer=consumer, specs={'total_iops_sec': '1000'})
            vol = self.volume(vtype=vtype)
            if refused:
                _r, sent = self.count(self.assertRaises,
                                      exception.InvalidVolumeType,
                                      self.driver.create_volume, vol)
                self.assertEqual([], sent)
            else:
                vol.update(self.driver.create_volume(vol))
                self.assertIsNotNone(self.array_volume(vol))
        self.assertEqual(1, len(self.array.k2_client().search(
            'volume_groups')))

    def test_failed_volume_create_leaves_no_group(self):
        vol = self.volume(size=100000)
        self.assertRaises(exception.VolumeBackendAPIException,
                          self.driver.create_volume, vol)
        self.assertEqual([], self.array.k2_client().search('volume_groups'))

    def test_extend(self):
        vol = self.create()
        _r, sent = self.count(self.driver.extend_volume, vol, 3)
        self.assertEqual(['PATCH /api/v2/volumes/%s' %
                          vol.provider_id.split('/')[1]], sent)
        self.assertEqual(3 * GIB, self.array_volume(vol)['size'])

    def test_stats(self):
        self.create(size=4)
        stats, sent = self.count(self.driver.get_volume_stats, True)
        # capacity, performance, a count of volumes
        self.assertLessEqual(len(sent), 3, sent)
        self.assertEqual(constants.ISCSI, stats['storage_protocol'])
        self.assertEqual(self.BACKEND, stats['volume_backend_name'])
        pool = stats['pools'][0]
        # 256 GiB, or what the filesystem under the array holds.
        self.assertEqual(stats_mod.gib(min(
            256 << 20, engine.filesystem_capacity(self.array.data_dir) //
            1024)), pool['total_capacity_gb'])
        self.assertEqual(4.0, pool['provisioned_capacity_gb'])
        self.assertEqual('up', pool['backend_state'])
        for key in ('multiattach', 'online_extend_support',
                    'thin_provisioning_support', 'data_reduction_ratio',
                    'read_iops', 'write_iops', 'latency_usec'):
            self.assertIn(key, pool)
        # Cached: a second call without refresh costs nothing.
        _s, sent = self.count(self.driver.get_volume_stats, False)
        self.assertEqual([], sent)

    def test_stats_never_raise(self):
        self.driver.get_volume_stats(True)
        self.array.stop()
        self.driver.adapter._stats_at = 0
        stats = self.driver.get_volume_stats(True)
        self.assertEqual('down', stats['pools'][0]['backend_state'])
        self.assertEqual(0, stats['pools'][0]['free_capacity_gb'])

    def test_what_the_scheduler_and_the_manager_read(self):
        vols = [self.create(), self.create()]
        # Volumes share the array's one target: os-brick must lock.
        iqns = {self.driver.initialize_connection(
            v, k2_driver_base.CONNECTOR)['data']['target_iqn'] for v in vols}
        self.assertEqual(1, len(iqns))
        caps = scheduler_view.backend(self.driver)
        self.assertEqual((True, False, True), (
            caps['shared_targets'], caps['clone_across_pools'],
            caps['sparse_copy_volume']))
        host = 'cinder@%s' % self.BACKEND
        pool = scheduler_view.pools(self.ctx, host, caps)[
            '%s#%s' % (host, self.BACKEND)]
        self.assertEqual(2, pool['total_volumes'])
        self.assertEqual(2.0, pool['provisioned_capacity_gb'])
        for key in ('multiattach', 'online_extend_support',
                    'consistent_group_snapshot_enabled',
                    'thin_provisioning_support'):
            self.assertIs(True, pool[key], key)
        self.assertIs(False, pool['consistent_group_replication_enabled'])
