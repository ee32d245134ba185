"""LINSTOR driver: pool stats from the array's storage pools."""

from cinder_driver.tests.functional import linstor_driver_base as base


class LinstorStatsTestCase(base.LinstorDriverTestCase):

    def pools(self):
        stats = self.driver.get_volume_stats(refresh=True)
        self.driver.adapter._stats = None
        return stats, {p['pool_name']: p for p in stats['pools']}

    def test_thin_and_thick_pools(self):
        self.create(4)
        self.create(2, pool='thickpool')
        stats, pools = self.pools()
        self.assertEqual(('cinder-flash', 'DRBD', self.BACKEND),
                         (stats['vendor_name'], stats['storage_protocol'],
                          stats['volume_backend_name']))
        self.assertEqual({'DfltStorPool', 'thickpool'}, set(pools))
        thin, thick = pools['DfltStorPool'], pools['thickpool']
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
        self.assertEqual('up', thin['backend_state'])

    def test_data_reduction_is_measured(self):
        vol = self.create(1)
        node = self.diskful(vol)[0]
        # 8 MiB of one repeated 64 KiB block: dedup and compression.
        for offset in range(0, 8 * 1048576, 65536):
            self.write(vol, node, 'write -P 0x6b %d 64k' % offset)
        _stats, pools = self.pools()
        thin = pools['DfltStorPool']
        self.assertGreater(thin['data_reduction_ratio'], 10.0)

    def test_unreachable_controller_reports_down(self):
        drv = self.make_driver()
        self.array.stop()
        drv.adapter.client.sessions[0].retries = 0
        stats = drv.get_volume_stats(refresh=True)
        self.assertEqual('down', stats['pools'][0]['backend_state'])
