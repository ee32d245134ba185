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

"""cinder-flash features through Cinder's API (block storage only)."""

import json

from tempest.api.volume.admin import test_group_snapshots
from tempest.api.volume import base
from tempest.common import waiters
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators

from cinder_driver.common import stats as flash_stats
from tempest_plugin import config as config_groups

CONF = config.CONF
FLASH = config_groups.Lazy('cinder_flash')


class FlashPoolStatsTest(base.BaseVolumeAdminTest):
    """Pool stats the scheduler gets from a cinder-flash backend."""

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.stats = cls.os_admin.volume_scheduler_stats_client_latest

    def _flash_pools(self):
        pools = self.stats.list_pools(detail=True)['pools']
        mine = [p for p in pools
                if p['capabilities'].get('vendor_name') == 'cinder-flash']
        if not mine:
            raise self.skipException('no cinder-flash pool')
        return mine

    @decorators.idempotent_id('2f0b0c1e-8a0b-4c55-9a51-0a3c7de1c101')
    def test_data_reduction_keys_are_sane(self):
        if not CONF.cinder_flash_feature_enabled.data_reduction_stats:
            raise self.skipException('data reduction stats disabled')
        for pool in self._flash_pools():
            caps = pool['capabilities']
            if caps.get('backend_state') == 'down':
                continue
            ratio = caps['data_reduction_ratio']
            self.assertGreaterEqual(ratio, 1.0, pool['name'])
            self.assertGreaterEqual(caps['total_capacity_gb'],
                                    caps['free_capacity_gb'], pool['name'])
            self.assertGreaterEqual(caps['free_capacity_gb'], 0)

    @decorators.idempotent_id('2f0b0c1e-8a0b-4c55-9a51-0a3c7de1c107')
    def test_scheduler_keys_of_every_backend(self):
        # get_pools shows what the scheduler holds for each pool: every
        # key it reads must be there, under that exact name, for K2 and
        # for LINSTOR alike.
        pools = [p for p in self._flash_pools()
                 if p['capabilities'].get('backend_state') != 'down']
        protocols = set()
        for pool in pools:
            caps = pool['capabilities']
            missing = [k for k in flash_stats.SCHEDULER_POOL_KEYS
                       if k not in caps]
            self.assertEqual([], missing, pool['name'])
            # Of the top level, get_pools carries these four into each
            # pool (shared_targets and the rest stay with the volume
            # manager, which the unit tests check).
            missing = [k for k in ('volume_backend_name', 'vendor_name',
                                   'driver_version', 'storage_protocol')
                       if k not in caps]
            self.assertEqual([], missing, pool['name'])
            self.assertIsInstance(caps['total_volumes'], int, pool['name'])
            self.assertIn(caps['thin_provisioning_support'], (True, False))
            protocols.add(caps['storage_protocol'])
        for protocol in FLASH.pool_protocols:
            self.assertIn(protocol, protocols)

    @decorators.idempotent_id('2f0b0c1e-8a0b-4c55-9a51-0a3c7de1c102')
    def test_array_performance_keys(self):
        if not CONF.cinder_flash_feature_enabled.array_performance_stats:
            raise self.skipException('array performance stats disabled')
        k2 = [p for p in self._flash_pools()
              if p['capabilities'].get('deduplication_support')]
        if not k2:
            raise self.skipException('no K2 pool')
        for pool in k2:
            caps = pool['capabilities']
            for key in ('read_iops', 'write_iops', 'latency_usec',
                        'throughput_bytes_per_sec'):
                self.assertGreaterEqual(caps[key], 0, key)


class FlashVolumeTypesTest(base.BaseVolumeAdminTest):
    """Dedup and nodedup types, retype between them, manage, revert."""

    volume_min_microversion = '3.40'
    volume_max_microversion = 'latest'

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        types = {t['name']: t for t in
                 cls.admin_volume_types_client.list_volume_types()[
                     'volume_types']}
        missing = [n for n in (FLASH.dedup_volume_type,
                               FLASH.nodedup_volume_type) if n not in types]
        if missing:
            raise cls.skipException('volume types missing: %s' %
                                    ', '.join(missing))
        cls.dedup = types[FLASH.dedup_volume_type]
        cls.nodedup = types[FLASH.nodedup_volume_type]

    def _host(self, volume):
        return self.admin_volume_client.show_volume(volume['id'])[
            'volume']['os-vol-host-attr:host']

    @decorators.idempotent_id('2f0b0c1e-8a0b-4c55-9a51-0a3c7de1c103')
    def test_retype_between_dedup_and_nodedup(self):
        volume = self.create_volume(volume_type=self.dedup['id'])
        host = self._host(volume)
        self.admin_volume_client.retype_volume(
            volume['id'], new_type=self.nodedup['name'],
            migration_policy='never')
        waiters.wait_for_volume_retype(self.admin_volume_client,
                                       volume['id'], self.nodedup['name'])
        shown = self.admin_volume_client.show_volume(volume['id'])['volume']
        self.assertEqual(self.nodedup['name'], shown['volume_type'])
        # Done on the array, in place: the volume stays on its backend.
        self.assertEqual(host, shown['os-vol-host-attr:host'])

    @decorators.idempotent_id('2f0b0c1e-8a0b-4c55-9a51-0a3c7de1c104')
    def test_revert_to_snapshot(self):
        volume = self.create_volume(volume_type=self.dedup['id'])
        snapshot = self.create_snapshot(volume['id'])
        # Tempest's volumes client has no revert call (microversion 3.40).
        resp, _body = self.volumes_client.post(
            'volumes/%s/action' % volume['id'],
            json.dumps({'revert': {'snapshot_id': snapshot['id']}}))
        self.assertEqual(202, resp.status)
        waiters.wait_for_volume_resource_status(self.volumes_client,
                                                volume['id'], 'available')

    @decorators.idempotent_id('2f0b0c1e-8a0b-4c55-9a51-0a3c7de1c105')
    def test_manage_unmanage_round_trip(self):
        volume = self.create_volume(volume_type=self.dedup['id'])
        host = self._host(volume)
        self.admin_volume_client.unmanage_volume(volume['id'])
        self.admin_volume_client.wait_for_resource_deletion(volume['id'])
        ref = CONF.volume.manage_volume_ref
        new = self.admin_volume_manage_client.manage_volume(
            host=host, ref={ref[0]: ref[1] % volume['id']},
            volume_type=self.dedup['id'],
            name=data_utils.rand_name('managed'))['volume']
        self.addCleanup(self.delete_volume, self.admin_volume_client,
                        new['id'])
        waiters.wait_for_volume_resource_status(self.admin_volume_client,
                                                new['id'], 'available')
        self.assertEqual(volume['size'], self.admin_volume_client.show_volume(
            new['id'])['volume']['size'])


class FlashConsistentGroupSnapshotTest(
        test_group_snapshots.BaseGroupSnapshotsTest):
    """A consistent group's snapshot: one array-side cut of its volumes."""

    volume_min_microversion = '3.14'
    volume_max_microversion = 'latest'

    @decorators.idempotent_id('2f0b0c1e-8a0b-4c55-9a51-0a3c7de1c106')
    def test_consistent_group_snapshot(self):
        types = {t['name']: t for t in
                 self.admin_volume_types_client.list_volume_types()[
                     'volume_types']}
        vtype = types.get(FLASH.dedup_volume_type)
        if vtype is None:
            raise self.skipException('volume type %s missing' %
                                     FLASH.dedup_volume_type)
        group_type = self.create_group_type(group_specs={
            'consistent_group_snapshot_enabled': '<is> True'})
        group = self.create_group(group_type=group_type['id'],
                                  volume_types=[vtype['id']])
        # The group's cleanup deletes its volumes (a volume in a group
        # cannot be deleted alone).
        volumes = []
        for _n in range(2):
            volume = self.volumes_client.create_volume(
                size=CONF.volume.volume_size, volume_type=vtype['id'],
                group_id=group['id'])['volume']
            waiters.wait_for_volume_resource_status(
                self.volumes_client, volume['id'], 'available')
            volumes.append(volume)
        cut = self._create_group_snapshot(group_id=group['id'])
        mine = {v['id'] for v in volumes}
        # Other tests' snapshots are listed too: keep this group's.
        snaps = [s for s in self.snapshots_client.list_snapshots(
            detail=True)['snapshots'] if s['volume_id'] in mine]
        self.assertEqual(sorted(mine), sorted(s['volume_id'] for s in snaps))
        for snap in snaps:
            self.assertEqual('available', snap['status'])
            shown = self.snapshots_client.show_snapshot(snap['id'])[
                'snapshot']
            self.assertEqual(cut['id'], shown.get('group_snapshot_id',
                                                  cut['id']))
