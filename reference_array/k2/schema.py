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

"""What the K2 dialect serves: its resources and their queryable fields."""

# Every resource the in-tree driver and krest may touch, and every
# resource a returned reference can point at.
RESOURCES = (
    'system/state', 'system/capacity', 'system/net_ips', 'system/fc_ports',
    'system/net_ports', 'system/wan_ports', 'volume_groups', 'volumes',
    'snapshots', 'volsnaps', 'retention_policies', 'hosts', 'host_groups',
    'host_iqns', 'host_fc_ports', 'host_auth_profiles', 'mappings',
    'replication/peer_k2arrays', 'replication/sessions',
    'replication/peer_volumes', 'replication/peer_volume_groups',
    'replication/rpo_history', 'stats/system', 'stats/volumes',
)
READ_ONLY = frozenset(('system/state', 'system/capacity', 'system/net_ips',
                       'system/fc_ports', 'system/net_ports',
                       'system/wan_ports', 'volsnaps', 'stats/system',
                       'stats/volumes', 'replication/rpo_history'))
# Beyond the documented API: volumes may be created with a "source"
# (a volume or volsnap), as a copy-on-write copy. Clients must discover it.
CAPABILITIES = {'volume_source': True}

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
    'volume_groups': ('id', 'name', 'quota', 'is_dedup', 'description',
                      'volumes_count', 'snapshots_count', 'logical_capacity',
                      'volumes_provisioned_capacity', 'replication_session',
                      'last_restored_from', 'capacity_state'),
    'volumes': ('id', 'name', 'size', 'volume_group', 'is_dedup',
                'description', 'read_only', 'logical_capacity', 'scsi_sn',
                'scsi_suffix', 'avg_compressed_ratio', 'no_dedup'),
    'snapshots': ('id', 'short_name', 'name', 'source', 'volume_group',
                  'retention_policy', 'is_auto_deleteable', 'is_exposable',
                  'is_deleted', 'generation_number', 'creation_time',
                  'description', 'wwn'),
    'volsnaps': ('id', 'name', 'snapshot', 'source', 'scsi_sn'),
    'hosts': ('id', 'name', 'type', 'host_group', 'description',
              'host_auth_profile'),
    'host_auth_profiles': ('id', 'name', 'auth_type', 'username'),
    'host_iqns': ('id', 'iqn', 'host'),
    'host_fc_ports': ('id', 'pwwn', 'host'),
    'mappings': ('id', 'volume', 'host', 'lun', 'unique_target'),
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
# Text fields whose equality filters are answered from the store's keys.
KEYED_TEXT = ('name', 'short_name', 'iqn', 'pwwn', 'mgmt_host')


def fields(resource):
    return FIELDS.get(resource, ('id', 'name'))
