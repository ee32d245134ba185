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

"""LINSTOR driver: pool stats from the controller's storage pools."""

from cinder_driver.common import stats as flash_stats
from cinder_driver.tests.functional import linstor_driver_base as base
from cinder_driver.tests import scheduler_view


class LinstorStatsTestCase(base.LinstorDriverTestCase):

    def pools(self):
        stats = self.driver.get_volume_stats(refresh=True)
        self.driver.adapter._stats = None
        return stats, {p['pool_name']: p for p in stats['pools']}

    def test_provisioned_space_counts_every_volume_once(self):
        _stats, pools = self.pools()
        before = pools[self.pool]['provisioned_capacity_gb']
        self.create(4)
        self.create(2)
        stats, pools = self.pools()
        self.assertEqual(('cinder-flash', 'DRBD', self.BACKEND),
                         (stats['vendor_name'], stats['storage_protocol'],
                          stats['volume_backend_name']))
        pool = pools[self.pool]
        self.assertEqual(before + 6.0, pool['provisioned_capacity_gb'])
        self.assertEqual('up', pool['backend_state'])
        self.assertGreater(pool['total_capacity_gb'], 0)

    def test_scheduler_sees_the_keys_it_reads(self):
        _stats, pools = self.pools()
        before = pools[self.pool]['total_volumes']
        self.create(1)
        self.create(1)
        stats, _pools = self.pools()
        self.assertIs(False, stats['shared_targets'])
        self.assertIs(False, stats['clone_across_pools'])
        host = 'cinder@%s' % self.BACKEND
        seen = scheduler_view.pools(self.ctx, host, stats)
        caps = seen['%s#%s' % (host, self.pool)]
        self.assertEqual([], [k for k in flash_stats.SCHEDULER_POOL_KEYS
                              if k not in caps])
        self.assertEqual(before + 2, caps['total_volumes'])
        self.assertEqual((True, True), (caps['multiattach'],
                                        caps['online_extend_support']))

    def test_groups_of_deleted_volume_types_go(self):
        vtype = self.volume_type()
        vol = self.create(vtype=vtype)
        group = self.rd(vol)['resource_group_name']
        # The type exists only in the test (never in Cinder's database),
        # so Cinder sees it as deleted: its group goes once unused.
        self.pools()
        status, _b = self.linstor('GET', '/v1/resource-groups/%s' % group)
        self.assertEqual(200, status)
        self.driver.delete_volume(vol)
        self.pools()
        status, _b = self.linstor('GET', '/v1/resource-groups/%s' % group)
        self.assertEqual(404, status)

    def test_thin_and_thick_pools(self):
        thick_pool = self.need_thick_pool()
        self.create(4)
        self.create(2, pool=thick_pool)
        _stats, pools = self.pools()
        self.assertEqual({self.pool, thick_pool}, set(pools))
        thin, thick = pools[self.pool], pools[thick_pool]
        self.assertEqual((True, False), (thin['thin_provisioning_support'],
                                         thin['thick_provisioning_support']))
        self.assertEqual((False, True), (thick['thin_provisioning_support'],
                                         thick['thick_provisioning_support']))
        self.assertEqual(1.0, thick['max_over_subscription_ratio'])
        # Three nodes of 64 GiB each, two replicas per volume.
        self.assertEqual(96.0, thin['total_capacity_gb'])
        self.assertEqual(4.0, thin['provisioned_capacity_gb'])
        self.assertEqual(2.0, thick['provisioned_capacity_gb'])
        # A thick pool is charged the whole volume on each replica.
        self.assertEqual(94.0, thick['free_capacity_gb'])

    def test_data_reduction_is_measured(self):
        if self.target.real:
            self.skipTest('the reference array measures data reduction')
        vol = self.create(1)
        node = self.diskful(vol)[0]
        # 8 MiB of one repeated 64 KiB block: dedup and compression.
        for offset in range(0, 8 * 1048576, 65536):
            self.write(vol, node, 'write -P 0x6b %d 64k' % offset)
        _stats, pools = self.pools()
        thin = pools[self.pool]
        self.assertGreater(thin['data_reduction_ratio'], 10.0)

    def test_unreachable_controller_reports_down(self):
        drv = self.make_driver()
        session = drv.adapter.client.sessions[0]
        session.base_url = 'http://127.0.0.1:1'
        session.retries = 0
        stats = drv.get_volume_stats(refresh=True)
        self.assertEqual('down', stats['pools'][0]['backend_state'])
