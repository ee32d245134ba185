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

"""Logic of the K2 drivers for ONE array: what Cinder asks, in as few round
trips as the K2 REST API v2 allows.

Array layout: one volume group per Cinder volume (the volume group is the
K2 unit of snapshots, restore and deduplication), named after
``volume.name_id``. Array ids are kept in ``provider_id``
(:mod:`cinder_driver.k2.provider_id`) so most calls need no search; a
missing or stale provider_id, or one of the other array, falls back to
the names.

Protocol differences live in :mod:`cinder_driver.k2.protocols`; optional
concerns are collaborators: consistent groups (``groups``), copies through
the volume service (``hostcopy``), replication (``replication``), manage
and unmanage (``manage``).
"""

from cinder import context as cinder_context
from cinder import exception
from cinder.i18n import _
from cinder.objects import fields
from cinder.volume import qos_specs
from oslo_log import log as logging

from cinder_driver.common import cleanup
from cinder_driver.common import exception as flash_exception
from cinder_driver.common import naming
from cinder_driver.common import stats as flash_stats
from cinder_driver.common import versions
from cinder_driver.k2 import client as k2_client
from cinder_driver.k2 import dedup_swap
from cinder_driver.k2 import groups
from cinder_driver.k2 import hosts
from cinder_driver.k2 import manage
from cinder_driver.k2 import probe as k2_probe
from cinder_driver.k2 import provider_id
from cinder_driver.k2 import snapshot_export
from cinder_driver.k2 import specs

LOG = logging.getLogger(__name__)

KIB_PER_GIB = flash_stats.KIB_PER_GIB
VENDOR = 'cinder-flash'


def _qos_lookup(qos_specs_id):
    """QoS specs by id, from Cinder's database."""
    return qos_specs.get_qos_specs(cinder_context.get_admin_context(),
                                   qos_specs_id)


class K2Adapter(flash_stats.CachedStats):
    """One K2 array. Subclasses supply the protocol (protocols.py)."""

    FAMILY = 'K2'
    PROTOCOL = None
    INITIATOR_KIND = None

    def __init__(self, configuration, client, driver_version,
                 array_id=None, replication=None):
        """:param array_id: None for the configured array, the
            replication_device's backend_id for the replication target.
        :param replication: the backend's ReplicationManager, or None.
        """
        self.configuration = configuration
        self.client = client
        self.driver_version = driver_version
        self.array_id = array_id
        self.replication = replication
        self.capabilities = {}
        self.retention_policy_id = None
        self.location = None
        self.hosts = hosts.HostRegistry(client, self.INITIATOR_KIND,
                                        self.chap)
        self.groups = groups.GroupManager(self)
        self.manage = manage.Manager(self)
        self.snapshot_export = snapshot_export.SnapshotExport(self)
        self.dedup_swap = dedup_swap.DedupSwap(client)
        self.host_copy = None

    # -- setup ---------------------------------------------------------------
    def check_for_setup_error(self):
        self.load()
        if self.replication is not None:
            self.replication.check(self.client)

    @property
    def loaded(self):
        return self.location is not None

    def load(self):
        """What the driver needs from this array before it serves."""
        self.capabilities = self.client.discover_capabilities()
        state = self.client.system_state()
        if not versions.at_least(state.api_version,
                                 k2_client.MIN_API_VERSION):
            raise flash_exception.ArrayAPIError(
                array=self.client.name, method='GET',
                path='/system/state', reason=_(
                    'REST API %(version)s is older than the %(minimum)s this '
                    'driver needs') % {'version': state.api_version,
                                       'minimum': versions.dotted(
                                           k2_client.MIN_API_VERSION)})
        self.load_targets(state)
        # Backends on the same array can hand volumes to each other.
        self.location = 'cinder-flash:k2:%s' % state.system_id
        name = self.configuration.k2_retention_policy
        policy = self.client.retention_policy_id(name)
        if policy is None:
            raise flash_exception.InvalidBackendConfig(
                option='k2_retention_policy', value=name,
                reason='no retention policy of that name on the array')
        self.retention_policy_id = policy

    def probe(self):
        """[(verdict, name, detail)]: can this array serve the backend?"""
        return k2_probe.run(self)

    def _no_target(self, path, reason):
        return flash_exception.ArrayAPIError(
            array=self.client.name, method='GET', path=path, reason=reason)

    # -- protocol hooks (protocols.py) ---------------------------------------
    def load_targets(self, state):
        raise NotImplementedError()

    def initiators(self, connector):
        """The connector's initiator names as the array spells them."""
        raise NotImplementedError()

    def connection_info(self, volume, connector, lun):
        raise NotImplementedError()

    def detached(self, connector, host_id):
        """What terminate_connection returns once the mappings are gone."""
        return None

    def chap(self, host_name):
        """(username, secret) a host logs in with, or None."""
        return None

    def probe_ports(self, results, state):
        """The check's 'ports' verdict: targets hosts can reach."""
        raise NotImplementedError()

    # -- types and ids -------------------------------------------------------
    def type_specs(self, volume_type):
        """The type's K2 settings; refuses what the array cannot honour."""
        specs.refuse_backend_qos(volume_type, _qos_lookup)
        return specs.volume_specs(volume_type,
                                  replication_ok=self.replication is not None)

    def type_dedup(self, volume_type):
        return self.type_specs(volume_type)['dedup']

    def provider_id(self, container, member, shared=False):
        """A provider_id for ids on this array."""
        return str(provider_id.ProviderId(container, member, shared,
                                          self.array_id))

    def _ids(self, text):
        """The provider_id's ids if they are this array's, or None.

        Ids of one array mean other objects on another: after a failover
        or a failback, ids kept from the other array are not used; the
        objects are found by name instead.
        """
        pid = provider_id.ProviderId.parse(text)
        if pid is None or pid.array != self.array_id:
            return None
        return pid.container, pid.member

    def volume_ids(self, volume, required=True):
        """(group_id, volume_id) of a Cinder volume on the array."""
        ids = self._ids(volume.provider_id)
        if ids is not None:
            return ids
        found = self.client.volume_by_name(naming.volume_name(volume))
        if found is None or found.group_id is None:
            if required:
                raise exception.VolumeNotFound(volume_id=volume.id)
            return None
        return found.group_id, found.id

    def snapshot_ids(self, snapshot):
        """(snapshot_id, volsnap_id) of a Cinder snapshot on the array."""
        ids = self._ids(snapshot.provider_id)
        if ids is not None:
            return ids
        found = self.client.snapshot_by_name(naming.snapshot_name(snapshot))
        volsnap = None if found is None else self.client.volsnap_of(found.id)
        if volsnap is None:
            raise exception.SnapshotNotFound(snapshot_id=snapshot.id)
        return found.id, volsnap

    # -- volumes -------------------------------------------------------------
    def create(self, volume, size_gib, from_volume=None, from_volsnap=None):
        """The volume in a volume group of its own; its model update."""
        wanted = self.type_specs(volume.volume_type)
        group_name = naming.group_name(volume)
        group_id = self.client.create_volume_group(group_name,
                                                   wanted['dedup'])
        # Nothing half-created: the empty group goes with a failure.
        with cleanup.undo_on_error(
                'removing volume group %s' % group_id,
                lambda: self.client.delete_volume_group(group_id)):
            volume_id = self.client.create_volume(
                naming.volume_name(volume), size_gib * KIB_PER_GIB,
                group_id, description=specs.owner(volume),
                from_volume=from_volume, from_volsnap=from_volsnap)
            update = {'provider_id': self.provider_id(group_id, volume_id)}
            if wanted['replication']:
                with cleanup.undo_on_error(
                        'removing volume %s' % volume_id,
                        lambda: self.client.delete_volume(volume_id)):
                    update.update(self.replication.start(
                        self.client, volume, group_id, volume_id))
        return update

    def create_volume(self, volume):
        if volume.group_id and groups.is_consistent(volume.group):
            return self.groups.create_member(volume)
        return self.create(volume, volume.size)

    def delete_volume(self, volume):
        # A replicated type's create that failed half-way may have left a
        # session (which keeps its volume group) or a copy on the peer.
        # A group's member replicates with its group (group_replication).
        if self.replication is not None and \
                not provider_id.is_shared(volume.provider_id) and (
                    self.replication.is_replicated(volume) or
                    specs.type_replicated(volume.volume_type)):
            self.replication.stop(self.client, volume)
        ids = self.volume_ids(volume, required=False)
        if ids is None:
            self._remove_leftover_group(volume)
            return
        group_id, volume_id = ids
        try:
            self.client.delete_volume(volume_id)
        except flash_exception.ObjectBusy:
            # Cinder deletes only volumes without attachments, so a mapping
            # is stale: one made for an attach whose service died before
            # Cinder recorded it (its rollback never reaches the array).
            if not self._unmap_stale(volume, volume_id):
                raise exception.VolumeIsBusy(volume_name=volume.name)
            self.client.delete_volume(volume_id)
        self.dedup_swap.forget(volume, group_id)
        if provider_id.is_shared(volume.provider_id):
            return
        try:
            self.client.delete_volume_group(group_id)
        except flash_exception.ObjectBusy as e:
            # Cinder deletes its snapshots before their volume, so what
            # is left was made on the array by someone else: keep it.
            LOG.warning('Volume %(vol)s deleted; its volume group %(vg)s is '
                        'kept because the array refused to delete it: '
                        '%(err)s', {'vol': volume.id,
                                    'vg': naming.group_name(volume),
                                    'err': e.msg})

    def _unmap_stale(self, volume, volume_id):
        """Remove every mapping of the volume; False if it had none."""
        mappings = self.client.mappings_of(volume_id=volume_id)
        for mapping in mappings:
            LOG.warning('Removing mapping %(map)s of volume %(vol)s to '
                        'host %(host)s before deleting it: Cinder has no '
                        'attachment for it.', {
                            'map': mapping.id, 'vol': volume.id,
                            'host': mapping.host_id})
        self.client.unmap(mappings)
        return bool(mappings)

    def _remove_leftover_group(self, volume):
        """A create that failed half-way may have left its empty group."""
        group = self.client.volume_group_by_name(naming.group_name(volume))
        if group is not None and not group.volumes_count:
            LOG.info('Removing the empty volume group %s left by a failed '
                     'create of volume %s.', group.name, volume.id)
            self.client.delete_volume_group(group.id)
        else:
            LOG.info('Volume %s is not on the array; nothing to delete.',
                     volume.id)

    def extend_volume(self, volume, new_size):
        _group, volume_id = self.volume_ids(volume)
        self.client.update_volume(volume_id, size_kib=new_size * KIB_PER_GIB)

    def _host_copier(self, what):
        if self.host_copy is None:
            raise exception.VolumeDriverException(message=_(
                'The array cannot copy %s (no volume_source capability) and '
                'the volume service copies only over iSCSI.') % what)
        return self.host_copy

    def create_cloned_volume(self, volume, src_vref):
        _group, src_id = self.volume_ids(src_vref)
        if not self.capabilities.get('volume_source'):
            return self._host_copier('volume %s' % src_vref.id).clone(
                volume, src_vref)
        return self.create(volume, volume.size, from_volume=src_id)

    def create_volume_from_snapshot(self, volume, snapshot):
        _snap_id, volsnap_id = self.snapshot_ids(snapshot)
        if not self.capabilities.get('volume_source'):
            return self._host_copier('snapshot').from_volsnap(volume,
                                                              volsnap_id)
        return self.create(volume, volume.size, from_volsnap=volsnap_id)

    # -- snapshots -----------------------------------------------------------
    def create_snapshot(self, snapshot):
        group_id, volume_id = self.volume_ids(snapshot.volume)
        snap_id = self.client.create_snapshot(
            naming.snapshot_name(snapshot), group_id,
            self.retention_policy_id, description=specs.owner(snapshot))
        with cleanup.undo_on_error(
                'removing snapshot %s' % snap_id,
                lambda: self.client.delete_snapshot(snap_id)):
            # A volume in a consistency group shares its volume group: pick
            # this volume's member of the snapshot.
            volsnap = self.client.volsnap_of(snap_id, volume_id)
            if volsnap is None:
                raise flash_exception.ArrayBadReply(
                    array=self.client.name, method='GET', path='/volsnaps',
                    status_code=200, reason='snapshot %d has no member of '
                    'volume %d' % (snap_id, volume_id))
        return {'provider_id': self.provider_id(snap_id, volsnap)}

    def delete_snapshot(self, snapshot):
        try:
            snap_id, _volsnap = self.snapshot_ids(snapshot)
        except exception.SnapshotNotFound:
            LOG.info('Snapshot %s is not on the array; nothing to delete.',
                     snapshot.id)
            return
        try:
            self.client.delete_snapshot(snap_id)
        except flash_exception.ObjectBusy:
            # A backup that never detached leaves the snapshot's own view
            # (snapshot_export) holding it: the view goes with it.
            if not self.snapshot_export.detach(snapshot, None):
                raise exception.SnapshotIsBusy(snapshot_name=snapshot.name)
            try:
                self.client.delete_snapshot(snap_id)
            except flash_exception.ObjectBusy:
                raise exception.SnapshotIsBusy(snapshot_name=snapshot.name)

    def revert_to_snapshot(self, volume, snapshot):
        if provider_id.is_shared(volume.provider_id) or \
                provider_id.is_shared(snapshot.provider_id):
            raise exception.VolumeDriverException(message=_(
                'volume %s is in a consistency group: restoring its K2 volume '
                'group would revert every member') % volume.id)
        group_id, _volume_id = self.volume_ids(volume)
        snap_id, _volsnap = self.snapshot_ids(snapshot)
        self.client.restore_volume_group(group_id, snap_id)

    # -- attach --------------------------------------------------------------
    def initialize_connection(self, volume, connector):
        _group, volume_id = self.volume_ids(volume)
        initiators = self.initiators(connector)
        host_id = self.hosts.host_id(connector, initiators, create=True)
        try:
            lun = self.client.map_volume(host_id, volume_id)
        except flash_exception.ObjectNotFound:
            # The cached host was removed on the array.
            self.hosts.forget(initiators)
            lun = self.client.map_volume(
                self.hosts.host_id(connector, initiators, create=True),
                volume_id)
        return self.connection_info(volume, connector, lun)

    def initialize_connection_snapshot(self, snapshot, connector):
        return self.snapshot_export.attach(snapshot, connector)

    def terminate_connection_snapshot(self, snapshot, connector):
        self.snapshot_export.detach(snapshot, connector)
        return None

    def terminate_connection(self, volume, connector):
        """Unmap; with no connector, remove every mapping of the volume."""
        ids = self.volume_ids(volume, required=False)
        if ids is None:
            return None
        if connector is None:
            self.client.unmap(self.client.mappings_of(volume_id=ids[1]))
            return None
        host_id = self.hosts.host_id(connector, self.initiators(connector),
                                     create=False)
        if host_id is None:
            return None
        self.client.unmap(self.client.mappings_of(volume_id=ids[1],
                                                  host_id=host_id))
        return self.detached(connector, host_id)

    # -- stats ---------------------------------------------------------------
    def _base_stats(self):
        conf = self.configuration
        stats = {
            'volume_backend_name': conf.safe_get('volume_backend_name') or
            'K2_%s' % self.PROTOCOL,
            'vendor_name': VENDOR,
            'driver_version': self.driver_version,
            'storage_protocol': self.PROTOCOL,
        }
        # One target per array serves every LUN (os-brick must lock);
        # clones are made from volumes of this array only, never from an
        # image-volume cache entry of another backend; unwritten blocks
        # read as zeros.
        stats.update(flash_stats.backend_capabilities(
            shared_targets=True, clone_across_pools=False,
            sparse_copy_volume=True))
        # Cinder reads the backend's replication state from the top level
        # (service replication_status), the scheduler from the pool.
        self._replication_stats(stats)
        return stats

    def _replication_stats(self, target):
        if self.replication is None:
            target.update(replication_enabled=False,
                          consistent_group_replication_enabled=False)
        else:
            self.replication.stats(target)

    def _down_stats(self):
        stats = self._base_stats()
        stats['pools'] = [flash_stats.down_pool(stats['volume_backend_name'])]
        return stats

    def _collect_stats(self):
        # Cinder's periodic task: the time to finish cleanups that the
        # array did not let through when they failed.
        self.dedup_swap.retry()
        cap = self.client.capacity()
        perf = self.client.performance()
        ratio = flash_stats.reduction_ratio(cap.logical, cap.physical)
        auto = ratio if self.configuration.k2_auto_max_over_subscription_ratio\
            else None
        stats = self._base_stats()
        pool = flash_stats.pool(
            stats['volume_backend_name'], self.location,
            # K2 objects limits; the array's built-in volume is left out.
            self.client.count_volumes(), cap.logical, cap.physical,
            flash_stats.capacity(cap.total, cap.free, cap.provisioned,
                                 self.configuration, auto),
            compression_support=True, deduplication_support=True,
            read_iops=perf['read_iops_avg'],
            write_iops=perf['write_iops_avg'],
            throughput_bytes_per_sec=perf['throughput_avg'],
            latency_usec=perf['latency_avg'])
        self._replication_stats(pool)
        if self.replication is not None:
            stats['replication_status'] = self.replication.status(
                self.client)
        stats['pools'] = [pool]
        return stats

    # -- type changes --------------------------------------------------------
    def retype(self, volume, new_type, host=None):
        """(retyped, model update): in place, or False so Cinder migrates.

        A change of deduplication is an array-side copy into a new volume
        group, swapped in under the same names; it needs the array's
        volume_source capability and a volume that is not attached, not in
        a consistency group and without snapshots.
        """
        new = self.type_specs(new_type)
        group_id, volume_id = self.volume_ids(volume)
        group = self.client.volume_group(group_id)
        shared = provider_id.is_shared(volume.provider_id)
        if group.is_dedup == new['dedup']:
            if new['replication'] == group.replicated:
                return True, None
            if new['replication']:
                if shared:
                    return False, None
                return True, self.replication.start(self.client, volume,
                                                    group_id, volume_id)
            self.replication.stop(self.client, volume)
            return True, {'replication_status':
                          fields.ReplicationStatus.DISABLED}
        if group.replicated or new['replication']:
            # A copy-and-swap (dedup_swap) would leave the session behind.
            return False, None
        if (shared or not self.capabilities.get('volume_source') or
                group.snapshots_count or
                self.client.mappings_of(volume_id=volume_id)):
            return False, None
        return True, {'provider_id': self.provider_id(*self.dedup_swap.swap(
            volume, group, volume_id, new['dedup']))}

    def migrate_volume(self, volume, host):
        """Between backends on the same array nothing has to move."""
        dest = (host or {}).get('capabilities', {}).get('location_info')
        if self.location is None or dest != self.location:
            return False, None
        return True, None

    # -- collaborators' operations, as Cinder names them ---------------------
    def manage_existing(self, volume, existing_ref):
        return self.manage.volume(volume, existing_ref)

    def manage_existing_get_size(self, volume, existing_ref):
        return self.manage.volume_size(existing_ref)

    def unmanage(self, volume):
        self.manage.release_volume(volume)

    def manage_existing_snapshot(self, snapshot, existing_ref):
        return self.manage.snapshot(snapshot, existing_ref)

    def manage_existing_snapshot_get_size(self, snapshot, existing_ref):
        return self.manage.snapshot_size(snapshot, existing_ref)

    def unmanage_snapshot(self, snapshot):
        self.manage.release_snapshot(snapshot)

    def get_manageable_volumes(self, *args):
        return self.manage.manageable_volumes(*args)

    def get_manageable_snapshots(self, *args):
        return self.manage.manageable_snapshots(*args)

    def create_group(self, group):
        return self.groups.create(group)

    def delete_group(self, group, volumes):
        return self.groups.delete(group, volumes)

    def update_group(self, group, add_volumes, remove_volumes):
        return self.groups.update(group, add_volumes, remove_volumes)

    def create_group_snapshot(self, group_snapshot, snapshots):
        return self.groups.create_snapshot(group_snapshot, snapshots)

    def delete_group_snapshot(self, group_snapshot, snapshots):
        return self.groups.delete_snapshot(group_snapshot, snapshots)

    def create_group_from_src(self, group, volumes, group_snapshot=None,
                              snapshots=None, source_group=None,
                              source_vols=None):
        return self.groups.create_from_src(group, volumes, snapshots,
                                           source_vols)
