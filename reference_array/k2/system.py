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

"""The read-only K2 system resources: state, capacity, ports, stats.

Ports and the retention policy are seeded once into the store; state,
capacity and I/O statistics are computed when asked.
"""

import time

from reference_array.k2 import models

Ref = models.Ref

KIB_PER_GIB = 1024 * 1024
REST_API_VERSION = '2.2.7'
STAT_KEYS = ('read_ops', 'write_ops', 'read_bytes', 'write_bytes',
             'read_seconds', 'write_seconds')
# Computed on every read; never stored.
COMPUTED = ('system/state', 'system/capacity', 'stats/system',
            'stats/volumes')


class System(object):

    def __init__(self, records, engine, system):
        """``system`` has system_id, name, iqn, portals, fc_wwns,
        total_kib.
        """
        self.records = records
        self.store = records.store
        self.engine = engine
        self.system = system
        self._last_sample = (time.monotonic(), dict(engine.counters))
        self._last_volume_sample = (time.monotonic(), {})
        self._seed()

    def _seed(self):
        with self.store.transaction():
            if self.store.get('system/net_ips', 1) is not None:
                return
            put = self.records.put
            for n, portal in enumerate(self.system['portals'], 1):
                put(models.NetIp(id=n, ip_address=portal,
                                 net_port=Ref('system/net_ports', n)))
                put(models.NetPort(id=n, name='eth%d' % n,
                                   mac_address='02:00:00:00:00:%02x' % n))
            for n, wwn in enumerate(self.system['fc_wwns'], 1):
                put(models.FcPort(id=n, name='fc%d' % n, pwwn=wwn))
            # Every K2 has a built-in CTRL volume; clients count it out.
            put(models.Volume(
                id=self.records.next_id(models.Volume), name='CTRL', size=0,
                is_dedup=False, no_dedup=True, description='built-in',
                read_only=True, scsi_sn='REFACTRL', builtin=True))
            put(models.RetentionPolicy(id=1, name='Best_Effort_Retention',
                                       num_snapshots=20))

    def computed(self, resource):
        """The objects of a computed resource."""
        return {'system/state': lambda: [self._state()],
                'system/capacity': lambda: [self._capacity()],
                'stats/system': lambda: [self._system_stats()],
                'stats/volumes': self._volume_stats}[resource]()

    def _state(self):
        return models.SystemState(
            id=1, state='ONLINE', system_name=self.system['name'],
            system_id=self.system['system_id'],
            system_version='reference-array',
            rest_api_version=REST_API_VERSION,
            iscsi_qualified_target_name=self.system['iqn'],
            current_user_role='admin', system_connectivity_type='iscsi_fc')

    def _capacity(self):
        used = self.engine.totals()
        physical = -(-used['physical'] // 1024)
        total, free = self.engine.bounded(self.system['total_kib'] * 1024,
                                          physical * 1024)
        # Kept by the store (one row): no volume is read.
        provisioned = self.store.total(models.Volume.KIND, 'size')
        return models.Capacity(
            id=1, state='OK', total=total // 1024, free=free // 1024,
            allocated=physical, allocated_volumes=physical,
            allocated_snapshots_and_views=0, provisioned=provisioned,
            provisioned_volumes=provisioned, provisioned_snapshots=0,
            provisioned_views=0, logical=used['logical'] // 1024,
            physical=physical, reserved=0, is_reclamation_in_progress=False)

    @staticmethod
    def _rates(model, before, now, span, **more):
        """A K2 stats point from two counter samples ``span`` s apart."""
        delta = {k: now[k] - before.get(k, 0) for k in STAT_KEYS}
        ops = delta['read_ops'] + delta['write_ops']
        busy = delta['read_seconds'] + delta['write_seconds']

        def per_op(seconds, count):
            return int(seconds * 1e6 / count) if count else 0
        return model(
            timestamp=int(time.time()), iops_avg=int(ops / span),
            read_iops_avg=int(delta['read_ops'] / span),
            write_iops_avg=int(delta['write_ops'] / span),
            throughput_avg=int((delta['read_bytes'] +
                                delta['write_bytes']) / span),
            read_throughput_avg=int(delta['read_bytes'] / span),
            write_throughput_avg=int(delta['write_bytes'] / span),
            latency_avg=per_op(busy, ops),
            read_latency_avg=per_op(delta['read_seconds'],
                                    delta['read_ops']),
            write_latency_avg=per_op(delta['write_seconds'],
                                     delta['write_ops']), **more)

    def _system_stats(self):
        """I/O rates since the previous sample (a K2 stats/system point)."""
        now, counters = time.monotonic(), dict(self.engine.counters)
        then, before = self._last_sample
        self._last_sample = (now, counters)
        return self._rates(models.SystemStats, before, counters,
                           max(now - then, 1e-3), id=1)

    def _volume_stats(self):
        """Per-volume rates since the previous stats/volumes sample."""
        now = time.monotonic()
        with self.engine.lock:
            counters = {vid: dict(c) for vid, c in
                        self.engine.volume_counters.items()}
        then, before = self._last_volume_sample
        self._last_volume_sample = (now, counters)
        span = max(now - then, 1e-3)
        points = []
        for vol in self.records.all(models.Volume):
            if vol.builtin:
                continue
            mine = counters.get(vol.id, dict.fromkeys(STAT_KEYS, 0))
            points.append(self._rates(
                models.VolumeStats, before.get(vol.id, {}), mine, span,
                id=vol.id, volume=Ref.to(vol)))
        return points
