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

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import stats
from cinder_driver.k2 import records
from cinder_driver.tests import scheduler_view
from cinder_driver.tests.unit import k2_fakes

GIB = 1024 * 1024
SCHEDULER_POOL_KEYS = stats.SCHEDULER_POOL_KEYS
CAPACITY = records.Capacity(total=100 * GIB, free=60 * GIB,
                            provisioned=300 * GIB, logical=80 * GIB,
                            physical=40 * GIB)


class StatsTestCase(k2_fakes.AdapterTestCase):

    def _serve(self, capacity=CAPACITY, perf=None):
        self.client.capacity.return_value = capacity
        self.client.performance.return_value = perf or {
            'read_iops_avg': 10, 'write_iops_avg': 20, 'throughput_avg': 0,
            'latency_avg': 300}

    def test_pool_figures(self):
        self._serve()
        pool = self.adapter.get_volume_stats(True)['pools'][0]
        self.assertEqual((100.0, 60.0, 300.0), (
            pool['total_capacity_gb'], pool['free_capacity_gb'],
            pool['provisioned_capacity_gb']))
        self.assertEqual(2.0, pool['data_reduction_ratio'])
        self.assertEqual((10, 20, 300), (pool['read_iops'],
                                         pool['write_iops'],
                                         pool['latency_usec']))
        self.assertEqual(self.conf.max_over_subscription_ratio,
                         pool['max_over_subscription_ratio'])
        self.assertIs(False, pool['replication_enabled'])

    def test_auto_over_subscription_from_reduction(self):
        self.override_config('k2_auto_max_over_subscription_ratio', True,
                             group=self.GROUP)
        self._serve()
        pool = self.adapter.get_volume_stats(True)['pools'][0]
        self.assertEqual(2.0, pool['max_over_subscription_ratio'])

    def test_malformed_capacity_reports_down_without_raising(self):
        self._serve()
        self.client.capacity.side_effect = flash_exception.ArrayBadReply(
            array='K2 test', method='GET', path='/system/capacity',
            status_code=200, reason='capacity: total is lots')
        stats = self.adapter.get_volume_stats(True)
        self.assertEqual('down', stats['pools'][0]['backend_state'])

    def test_cached_until_refresh_and_ttl(self):
        self._serve()
        self.adapter.get_volume_stats(True)
        self.adapter.get_volume_stats(True)
        self.assertEqual(1, self.client.capacity.call_count)

    def test_helpers(self):
        self.assertEqual(1.0, stats.reduction_ratio(0, 0))
        self.assertEqual(0.99, stats.gib(GIB - 1))

    def test_keys_where_cinder_reads_them(self):
        self._serve()
        self.client.count_volumes.return_value = 41
        stats = self.adapter.get_volume_stats(True)
        # The volume manager reads these from the top level only.
        self.assertEqual((True, False, True), (
            stats['shared_targets'], stats['clone_across_pools'],
            stats['sparse_copy_volume']))
        seen = scheduler_view.pools(self.ctx, 'cinder@k2-unit', stats)
        pool = seen['cinder@k2-unit#%s' % stats['volume_backend_name']]
        self.assertEqual([], [k for k in SCHEDULER_POOL_KEYS
                              if k not in pool])
        for key, value in (('total_volumes', 41), ('multiattach', True),
                           ('online_extend_support', True),
                           ('thin_provisioning_support', True),
                           ('provisioned_capacity_gb', 300.0),
                           ('consistent_group_snapshot_enabled', True),
                           ('consistent_group_replication_enabled', False),
                           ('backend_state', 'up')):
            self.assertEqual(value, pool.get(key), key)
        self.assertNotIn('sparse_copy_volume', pool)
