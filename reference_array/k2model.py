"""K2 objects of the reference array, kept in the metadata store."""

from reference_array import k2api

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
}


class K2Model(object):

    def __init__(self, store, system):
        """Seed the system objects of one array.

        ``system`` has system_id, name, iqn, portals, fc_wwns, total_kib.
        """
        self.store = store
        self.system = system
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
            self.store.put('retention_policies', 1, {
                'id': 1, 'name': 'Best_Effort_Retention',
                'num_snapshots': 20, 'weeks': 0, 'days': 0, 'hours': 0})

    def fields(self, resource):
        return FIELDS.get(resource, ('id', 'name'))

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
        return {
            'id': 1, 'state': 'OK', 'total': total, 'free': total,
            'allocated': 0, 'allocated_volumes': 0,
            'allocated_snapshots_and_views': 0, 'provisioned': 0,
            'provisioned_volumes': 0, 'provisioned_snapshots': 0,
            'provisioned_views': 0, 'logical': 0, 'physical': 0,
            'reserved': 0, 'is_reclamation_in_progress': False,
        }

    def list(self, resource):
        if resource == 'system/state':
            return [self._state()]
        if resource == 'system/capacity':
            return [self._capacity()]
        return self.store.all(resource)

    def get(self, resource, obj_id):
        for obj in (self.list(resource) if resource.startswith('system/s')
                    or resource == 'system/capacity' else
                    [self.store.get(resource, obj_id)]):
            if obj is not None and obj.get('id') == obj_id:
                return obj
        raise k2api.error(404, '%s %d does not exist' % (resource, obj_id))

    def create(self, resource, body):
        raise k2api.error(405, 'creating %s is not supported' % resource)

    def update(self, resource, obj_id, body):
        raise k2api.error(405, 'changing %s is not supported' % resource)

    def delete(self, resource, obj_id):
        raise k2api.error(405, 'deleting %s is not supported' % resource)
