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

"""Assembly of the capacity part of Cinder pool stats."""

import math
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

KIB_PER_GIB = 1024 * 1024


def gib(kib):
    """KiB to GiB, rounded down to two decimals (never over-reports)."""
    return math.floor(kib * 100.0 / KIB_PER_GIB) / 100.0


def reduction_ratio(logical, physical):
    """Logical bytes per stored byte; 1.0 when nothing is stored."""
    if not physical or not logical:
        return 1.0
    return round(float(logical) / float(physical), 2)


def capacity(total_kib, free_kib, provisioned_kib, configuration,
             auto_ratio=None, thin=True):
    """Pool capacity keys Cinder's scheduler reads.

    ``auto_ratio``: the over-subscription ratio to report instead of the
    configured one (the array's data-reduction figure), or None.
    ``thin``: whether the pool allocates on write; a thick pool reports
    no over-subscription.
    """
    ratio = configuration.safe_get('max_over_subscription_ratio')
    if auto_ratio is not None:
        ratio = max(auto_ratio, 1.0)
    if not thin:
        ratio = 1.0
    return {
        'total_capacity_gb': gib(total_kib),
        'free_capacity_gb': gib(free_kib),
        'provisioned_capacity_gb': gib(provisioned_kib),
        'reserved_percentage': configuration.safe_get(
            'reserved_percentage') or 0,
        'max_over_subscription_ratio': ratio,
        'thin_provisioning_support': bool(thin),
        'thick_provisioning_support': not thin,
    }


# Pool keys Cinder's scheduler and volume API read (capacity filter and
# weigher, capabilities filter for type specs, extend and multiattach
# checks, group type checks, the goodness and filter functions). A
# misspelt key is not an error in Cinder: scheduling silently ignores it,
# so every backend reports exactly these, and tests hold both to them.
SCHEDULER_POOL_KEYS = (
    'pool_name', 'total_capacity_gb', 'free_capacity_gb',
    'provisioned_capacity_gb', 'reserved_percentage',
    'max_over_subscription_ratio', 'thin_provisioning_support',
    'thick_provisioning_support', 'multiattach', 'online_extend_support',
    'QoS_support', 'consistent_group_snapshot_enabled',
    'consistent_group_replication_enabled', 'replication_enabled',
    'total_volumes', 'location_info', 'backend_state')
# Top-level keys the volume manager reads (see backend_capabilities).
SCHEDULER_BACKEND_KEYS = (
    'volume_backend_name', 'vendor_name', 'driver_version',
    'storage_protocol', 'shared_targets', 'clone_across_pools',
    'sparse_copy_volume')


def pool(name, location, total_volumes, logical_kib, physical_kib,
         capacity_keys, **extra):
    """One pool entry of a live backend, with the keys every backend of
    ours reports the same way.

    ``logical_kib`` / ``physical_kib``: what hosts wrote and what the
    array stores for it (data reduction); ``capacity_keys``: the result
    of :func:`capacity`; ``extra``: the backend's own keys.
    """
    entry = {'pool_name': name,
             'location_info': location,
             # For the filter and goodness functions.
             'total_volumes': total_volumes,
             'multiattach': True,
             'online_extend_support': True,
             'QoS_support': False,
             'consistent_group_snapshot_enabled': True,
             'consistent_group_replication_enabled': False,
             'replication_enabled': False,
             'data_reduction_ratio': reduction_ratio(logical_kib,
                                                     physical_kib),
             'logical_used_gb': gib(logical_kib),
             'physical_used_gb': gib(physical_kib),
             'backend_state': 'up'}
    entry.update(capacity_keys)
    entry.update(extra)
    return entry


def down_pool(name):
    """The pool entry of a backend whose array does not answer."""
    return {'pool_name': name, 'total_capacity_gb': 0,
            'free_capacity_gb': 0, 'reserved_percentage': 0,
            'replication_enabled': False, 'backend_state': 'down'}


def backend_capabilities(shared_targets, clone_across_pools,
                         sparse_copy_volume):
    """Keys Cinder reads from the top level of the stats, not from a pool.

    The volume manager keeps the top level as the driver's capabilities
    and reads these three there: ``shared_targets`` (whether os-brick
    locks around an iSCSI login), ``clone_across_pools`` (whether the
    image-volume cache may hand this backend a volume of another pool)
    and ``sparse_copy_volume`` (host-assisted migration skips zeros). In
    a pool Cinder never sees them.
    """
    return {'shared_targets': shared_targets,
            'clone_across_pools': clone_across_pools,
            'sparse_copy_volume': sparse_copy_volume}


class CachedStats(object):
    """get_volume_stats for an adapter: cached, and never raising.

    The adapter supplies ``_collect_stats()`` and ``_down_stats()``; a
    failure to collect reports the backend down rather than failing
    Cinder's periodic task.
    """

    STATS_TTL = 10.0
    FAMILY = 'backend'
    _stats = None
    _stats_at = 0.0

    def get_volume_stats(self, refresh=False):
        fresh = time.monotonic() - self._stats_at < self.STATS_TTL
        if self._stats is not None and (fresh or not refresh):
            return self._stats
        try:
            stats = self._collect_stats()
        except Exception as e:
            LOG.warning('%s stats unavailable: %s', self.FAMILY, e)
            stats = self._down_stats()
        self._stats, self._stats_at = stats, time.monotonic()
        return stats
