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

"""Cinder pool stats from LINSTOR's storage pools and definitions.

Every replica holds a full copy, so a pool's usable space is its space
on all nodes divided by the replica count. Provisioned space is the sum
of the volume definitions placed in the pool: a controller reports no
usable size for volumes without a DRBD layer, so resources only tell
where a volume lives, never how large it is.
"""

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import stats as flash_stats
from cinder_driver.linstor import attach

THIN_KINDS = ('LVM_THIN', 'ZFS_THIN', 'FILE_THIN', 'STORAGE_SPACES_THIN',
              'EBS_TARGET')


def _pools(client):
    pools = {}
    for sp in client.storage_pools():
        kind = sp.get('provider_kind')
        name = sp.get('storage_pool_name')
        if kind == 'DISKLESS' or not name:
            continue
        for key in ('total_capacity', 'free_capacity'):
            if not isinstance(sp.get(key), int):
                raise flash_exception.ArrayBadReply(
                    array=client.name, method='GET',
                    path='/v1/view/storage-pools', status_code=200,
                    reason='no integer %s for %s' % (key, name))
        entry = pools.setdefault(name, {'total': 0, 'free': 0, 'nodes': 0,
                                        'logical': 0, 'provisioned': 0,
                                        'kinds': set()})
        entry['total'] += sp['total_capacity']
        entry['free'] += sp['free_capacity']
        entry['nodes'] += 1
        entry['kinds'].add(kind)
    return pools


def collect(client, configuration, definitions):
    """Pool entries of Cinder stats.

    ``definitions``: the controller's resource definitions with their
    volume definitions.
    """
    pools = _pools(client)
    sizes = {str(rd.get('name')).lower(): sum(
        int(vd.get('size_kib') or 0)
        for vd in rd.get('volume_definitions') or [])
        for rd in definitions}
    placed = {}
    for rsc in client.resources():
        if attach.diskless(rsc):
            continue
        for vol in rsc.get('volumes') or []:
            entry = pools.get(vol.get('storage_pool_name'))
            if entry is None:
                continue
            entry['logical'] += int(vol.get('allocated_size_kib') or 0)
            placed.setdefault(vol['storage_pool_name'], set()).add(
                str(rsc.get('name')).lower())
    for pool, names in placed.items():
        pools[pool]['provisioned'] = sum(sizes.get(n, 0) for n in names)
    count = max(configuration.linstor_placement_count, 1)
    out = []
    for name in sorted(pools):
        entry = pools[name]
        thin = is_thin(entry['kinds'])
        used = entry['total'] - entry['free']
        replicas = min(count, entry['nodes'])
        # A thick pool allocates every volume whole: what it stores is
        # what was provisioned, and there is no reduction to report.
        logical = entry['logical'] if thin else used
        out.append(flash_stats.pool(
            name, 'cinder-flash:linstor:%s' % client.name,
            len(placed.get(name, ())), logical // replicas,
            used // replicas,
            flash_stats.capacity(
                entry['total'] // replicas, entry['free'] // replicas,
                entry['provisioned'], configuration, thin=thin),
            # LINSTOR replicates within the cluster; Cinder's replication
            # (failover to another backend) is not offered.
            linstor_replicas=replicas))
    return out


def is_thin(kinds):
    return any(k in THIN_KINDS for k in kinds)
