"""K2 objects of the reference array, kept in the metadata store."""

import time

from reference_array.k2 import api as k2api
from reference_array.k2 import objects as k2objects
from reference_array.k2.replication import shipper as replication

KIB_PER_GIB = 1024 * 1024

# Fields a client may filter or sort on, per resource.
FIELDS = {
    'system/state': ('id', 'state', 'system_name', 'system_id',
                     'system_version', 'rest_api_version',
                     'iscsi_qualified_target_name', 'current_user_role',
                     'system_connectivity_type'),
    'system/capacity': ('id', 'state', 'total', 'free', 'allocated',
                        'allocated_volumes', 'allocated_snapshots_and_views',
                        'provisioned', 'provisioned_volumes',
                        'provisioned_snapshots', 'provisioned_views',
                        'logical', 'physical', 'reserved',
                        'is_reclamation_in_progress'),
    'system/net_ips': ('id', 'ip_address', 'network_mask', 'net_port',
                       'wan_port', 'net_vlan', 'nvme_port'),
    'system/fc_ports': ('id', 'name', 'pwwn', 'server', 'status'),
    'system/net_ports': ('id', 'name', 'mac_address', 'status'),
    'system/wan_ports': ('id', 'name', 'status'),
    'retention_policies': ('id', 'name', 'num_snapshots', 'weeks', 'days',
                           'hours'),
    'stats/system': ('id', 'timestamp'),
    'stats/volumes': ('id', 'volume', 'timestamp'),
    'host_groups': ('id', 'name'),
    'replication/peer_k2arrays': ('id', 'name', 'mgmt_host', 'state',
                                  'system_id'),
    'replication/sessions': ('id', 'name', 'state', 'current_role',
                             'local_volume_group', 'replication_peer_k2array',
                             'rpo', 'generation_number',
                             'current_snapshot_id',
                             'current_snapshot_progress',
                             'remote_replication_session_name',
                             'replication_peer_volume_group_name',
                             'state_reason', 'last_sync_time'),
    'replication/peer_volumes': ('id', 'name', 'local_volume',
                                 'replication_session'),
    'replication/peer_volume_groups': ('id', 'name', 'replication_session'),
    'replication/rpo_history': ('id', 'replication_session'),
}
STAT_KEYS = ('read_ops', 'write_ops', 'read_bytes', 'write_bytes',
             'read_seconds', 'write_seconds')


class K2Model(object):

    def __init__(self, store, engine, system):
        """Seed the system objects of one array.

        ``system`` has system_id, name, iqn, portals, fc_wwns, total_kib.
        """
        self.store = store
        self.engine = engine
        self.system = system
        self.objects = k2objects.K2Objects(store, engine,
                                           system['total_kib'])
        # Set by the array when it can reach peers (replication).
        self.replication = None
        self._last_sample = (time.monotonic(), dict(engine.counters))
        self._last_volume_sample = (time.monotonic(), {})
        self._seed()

    def _seed(self):
        with self.store.transaction():
            if self.store.get('system/net_ips', 1) is not None:
                return
            for n, portal in enumerate(self.system['portals'], 1):
                self.store.put('system/net_ips', n, {
                    'id': n, 'ip_address': portal, 'network_mask': 8,
                    'net_port': {'ref': '/system/net_ports/%d' % n},
                    'wan_port': None, 'net_vlan': None, 'nvme_port': None})
                self.store.put('system/net_ports', n, {
                    'id': n, 'name': 'eth%d' % n, 'status': 'OK',
                    'mac_address': '02:00:00:00:00:%02x' % n})
            for n, wwn in enumerate(self.system['fc_wwns'], 1):
                self.store.put('system/fc_ports', n, {
                    'id': n, 'name': 'fc%d' % n, 'pwwn': wwn,
                    'server': None, 'status': 'OK'})
            # Every K2 has a built-in CTRL volume; clients count it out.
            ctrl_id = self.store.next_id('volumes')
            self.store.put('volumes', ctrl_id, {
                'id': ctrl_id, 'name': 'CTRL', 'size': 0,
                'volume_group': None, 'is_dedup': False, 'no_dedup': True,
                'description': 'built-in', 'read_only': True,
                'scsi_sn': 'REFACTRL', 'scsi_suffix': 0, '_layer': None,
                '_builtin': True})
            self.store.put('retention_policies', 1, {
                'id': 1, 'name': 'Best_Effort_Retention',
                'num_snapshots': 20, 'weeks': 0, 'days': 0, 'hours': 0})

    def fields(self, resource):
        return FIELDS.get(resource) or k2objects.FIELDS.get(
            resource, ('id', 'name'))

    def _state(self):
        return {
            'id': 1, 'state': 'ONLINE',
            'system_name': self.system['name'],
            'system_id': self.system['system_id'],
            'system_version': 'reference-array',
            'rest_api_version': k2api.REST_API_VERSION,
            'iscsi_qualified_target_name': self.system['iqn'],
            'current_user_role': 'admin',
            'system_connectivity_type': 'iscsi_fc',
        }

    def _capacity(self):
        total = self.system['total_kib']
        used = self.engine.totals()
        physical = -(-used['physical'] // 1024)
        provisioned = sum(v['size'] for v in self.store.all('volumes'))
        return {
            'id': 1, 'state': 'OK', 'total': total,
            'free': max(total - physical, 0),
            'allocated': physical, 'allocated_volumes': physical,
            'allocated_snapshots_and_views': 0,
            'provisioned': provisioned, 'provisioned_volumes': provisioned,
            'provisioned_snapshots': 0, 'provisioned_views': 0,
            'logical': used['logical'] // 1024, 'physical': physical,
            'reserved': 0, 'is_reclamation_in_progress': False,
        }

    @staticmethod
    def _rates(obj_id, before, now, span):
        """A K2 stats point from two counter samples ``span`` s apart."""
        delta = {k: now[k] - before.get(k, 0) for k in STAT_KEYS}
        ops = delta['read_ops'] + delta['write_ops']
        busy = delta['read_seconds'] + delta['write_seconds']

        def per_op(seconds, count):
            return int(seconds * 1e6 / count) if count else 0
        return {
            'id': obj_id, 'timestamp': int(time.time()),
            'iops_avg': int(ops / span),
            'read_iops_avg': int(delta['read_ops'] / span),
            'write_iops_avg': int(delta['write_ops'] / span),
            'throughput_avg': int((delta['read_bytes'] +
                                   delta['write_bytes']) / span),
            'read_throughput_avg': int(delta['read_bytes'] / span),
            'write_throughput_avg': int(delta['write_bytes'] / span),
            'latency_avg': per_op(busy, ops),
            'read_latency_avg': per_op(delta['read_seconds'],
                                       delta['read_ops']),
            'write_latency_avg': per_op(delta['write_seconds'],
                                        delta['write_ops']),
        }

    def _system_stats(self):
        """I/O rates since the previous sample (a K2 stats/system point)."""
        now, counters = time.monotonic(), dict(self.engine.counters)
        then, before = self._last_sample
        self._last_sample = (now, counters)
        return self._rates(1, before, counters, max(now - then, 1e-3))

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
        for vol in self.store.all('volumes'):
            if vol.get('_builtin'):
                continue
            mine = counters.get(vol['id'], dict.fromkeys(STAT_KEYS, 0))
            point = self._rates(vol['id'], before.get(vol['id'], {}), mine,
                                span)
            point['volume'] = {'ref': '/volumes/%d' % vol['id']}
            points.append(point)
        return points

    def _present(self, resource, obj):
        """The object as clients see it: derived fields, no internals."""
        out = k2objects.public(obj)
        if resource == 'volumes':
            out['logical_capacity'] = (self.engine.layer_written(
                obj['_layer']) // 1024 if obj['_layer'] else 0)
        elif resource == 'volume_groups':
            ref = '/volume_groups/%d' % obj['id']
            members = [v for v in self.store.all('volumes')
                       if (v['volume_group'] or {}).get('ref') == ref]
            out['volumes_count'] = len(members)
            out['volumes_provisioned_capacity'] = sum(
                v['size'] for v in members)
            out['logical_capacity'] = sum(
                self.engine.layer_written(v['_layer'])
                for v in members if v['_layer']) // 1024
            out['snapshots_count'] = sum(
                1 for s in self.store.all('snapshots')
                if s['volume_group']['ref'] == ref)
        return out

    def list(self, resource):
        if resource == 'system/state':
            return [self._state()]
        if resource == 'system/capacity':
            return [self._capacity()]
        if resource == 'stats/system':
            return [self._system_stats()]
        if resource == 'stats/volumes':
            return self._volume_stats()
        return [self._present(resource, o) for o in self.store.all(resource)]

    def get(self, resource, obj_id):
        if resource in ('system/state', 'system/capacity', 'stats/system',
                        'stats/volumes'):
            obj = next((o for o in self.list(resource)
                        if o['id'] == obj_id), None)
        else:
            obj = self.store.get(resource, obj_id)
            obj = obj and self._present(resource, obj)
        if obj is None:
            raise k2api.error(404, '%s %d does not exist' % (resource,
                                                             obj_id))
        return obj

    def _writer(self, resource):
        if resource in replication.WRITABLE and self.replication:
            return self.replication
        return self.objects

    def create(self, resource, body):
        obj = self._writer(resource).create(resource, body)
        return self._present(resource, obj)

    def update(self, resource, obj_id, body):
        obj = self._writer(resource).update(resource, obj_id, body)
        return self._present(resource, obj)

    def delete(self, resource, obj_id):
        self._writer(resource).delete(resource, obj_id)
