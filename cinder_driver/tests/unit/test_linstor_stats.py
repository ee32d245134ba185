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

"""LINSTOR adapter: pool stats."""

from cinder_driver.common import stats as flash_stats
from cinder_driver.tests import scheduler_view
from cinder_driver.tests.unit import linstor_fakes as fakes

GIB = 1024 * 1024


def pool(node, name, kind, total, free):
    return {'node_name': node, 'storage_pool_name': name,
            'provider_kind': kind, 'total_capacity': total,
            'free_capacity': free}


class StatsTestCase(fakes.AdapterTestCase):

    def test_pools_thin_thick_and_reduction(self):
        self.client.storage_pools.return_value = [
            pool(n, 'thin', 'LVM_THIN', 100 * GIB, 90 * GIB)
            for n in ('a', 'b')] + [
            pool(n, 'thick', 'LVM', 50 * GIB, 40 * GIB) for n in ('a', 'b')
        ] + [pool('c', 'DfltDisklessStorPool', 'DISKLESS', 2 ** 63 - 1,
                  2 ** 63 - 1)]
        volume = {'storage_pool_name': 'thin', 'allocated_size_kib':
                  30 * GIB}
        self.client.resource_definitions.return_value = [
            {'name': 'v1', 'volume_definitions': [{'size_kib': 40 * GIB}]}]
        self.client.resource_groups.return_value = []
        self.client.resources.return_value = [
            {'name': 'v1', 'node_name': n, 'flags': [], 'volumes': [volume]}
            for n in ('a', 'b')] + [
            {'name': 'v1', 'node_name': 'c', 'flags': ['DRBD_DISKLESS'],
             'volumes': [dict(volume, storage_pool_name='thin')]}]
        stats = self.adapter.get_volume_stats(refresh=True)
        pools = {p['pool_name']: p for p in stats['pools']}
        self.assertEqual({'thin', 'thick'}, set(pools))
        thin, thick = pools['thin'], pools['thick']
        self.assertEqual((100.0, 90.0, 40.0), (
            thin['total_capacity_gb'], thin['free_capacity_gb'],
            thin['provisioned_capacity_gb']))
        self.assertEqual(3.0, thin['data_reduction_ratio'])
        self.assertEqual((True, False), (thin['thin_provisioning_support'],
                                         thin['thick_provisioning_support']))
        self.assertEqual((False, True), (thick['thin_provisioning_support'],
                                         thick['thick_provisioning_support']))
        self.assertEqual(1.0, thick['max_over_subscription_ratio'])
        self.assertEqual('up', thin['backend_state'])
        self.assertIs(False, thin['replication_enabled'])

    def test_scheduler_reads_the_same_keys_as_from_k2(self):
        self.client.storage_pools.return_value = [
            pool('a', 'thin', 'FILE_THIN', 100 * GIB, 90 * GIB),
            pool('a', 'thick', 'LVM', 50 * GIB, 40 * GIB)]
        self.client.resource_definitions.return_value = [
            {'name': n, 'volume_definitions': [{'size_kib': GIB}]}
            for n in ('v1', 'v2', 'v3')]
        self.client.resource_groups.return_value = []
        self.client.resources.return_value = [
            {'name': n, 'node_name': 'a', 'flags': [], 'volumes': [
                {'storage_pool_name': p, 'allocated_size_kib': GIB}]}
            for n, p in (('v1', 'thin'), ('v2', 'thin'), ('v3', 'thick'))]
        stats = self.adapter.get_volume_stats(refresh=True)
        # Read by the volume manager from the top level: each host opens
        # a device of its own, copies stay in their source's pools, and a
        # thick pool does not read zeros where nothing was written.
        self.assertEqual((False, False, False), (
            stats['shared_targets'], stats['clone_across_pools'],
            stats['sparse_copy_volume']))
        for key in flash_stats.SCHEDULER_BACKEND_KEYS:
            self.assertIn(key, stats)
        seen = scheduler_view.pools(self.ctx, 'cinder@linstor-unit', stats)
        thin = seen['cinder@linstor-unit#thin']
        thick = seen['cinder@linstor-unit#thick']
        for caps in (thin, thick):
            missing = [k for k in flash_stats.SCHEDULER_POOL_KEYS
                       if k not in caps]
            self.assertEqual([], missing)
        for key, value in (('total_volumes', 2), ('multiattach', True),
                           ('online_extend_support', True),
                           ('thin_provisioning_support', True),
                           ('provisioned_capacity_gb', 2.0),
                           ('consistent_group_snapshot_enabled', True),
                           ('consistent_group_replication_enabled', False),
                           ('replication_enabled', False),
                           ('backend_state', 'up')):
            self.assertEqual(value, thin.get(key), key)
        self.assertEqual((1, True, 1.0), (
            thick['total_volumes'], thick['thick_provisioning_support'],
            thick['max_over_subscription_ratio']))

    def test_auto_over_subscription_is_left_to_the_scheduler(self):
        self.override_config('max_over_subscription_ratio', 'auto',
                             group=fakes.GROUP)
        self.client.storage_pools.return_value = [
            pool('a', 'thin', 'LVM_THIN', 100 * GIB, 90 * GIB)]
        self.client.resource_definitions.return_value = []
        self.client.resource_groups.return_value = []
        self.client.resources.return_value = []
        stats = self.adapter.get_volume_stats(refresh=True)
        self.assertEqual('auto',
                         stats['pools'][0]['max_over_subscription_ratio'])
        self.assertIs(True, stats['sparse_copy_volume'])

    def test_bad_reply_reports_down(self):
        self.client.storage_pools.return_value = [
            pool('a', 'thin', 'LVM_THIN', 'lots', 1)]
        stats = self.adapter.get_volume_stats(refresh=True)
        self.assertEqual('down', stats['pools'][0]['backend_state'])

    def test_stats_are_cached(self):
        self.client.storage_pools.return_value = []
        self.client.resources.return_value = []
        self.client.resource_definitions.return_value = []
        self.client.resource_groups.return_value = []
        self.adapter.get_volume_stats(refresh=True)
        self.adapter.get_volume_stats(refresh=True)
        self.assertEqual(1, self.client.storage_pools.call_count)
