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

from reference_array.k2 import models

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


def model(resource):
    """The model of a resource's objects."""
    return models.BY_KIND[resource]


def fields(resource):
    """name -> type of the fields a client may filter or sort on."""
    return model(resource).wire_types()
