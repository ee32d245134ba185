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

"""Generic groups with consistent snapshots on K2 volume groups.

A K2 snapshot covers a whole volume group at one instant, and K2
replicates a volume group as one, so a Cinder group whose type asks for
consistent snapshots or for consistent replication gets a volume group of
its own (``cgrp-<group id>``) and its volumes move into it. A group
snapshot is then one array snapshot, and a replicated group one
replication session (:mod:`cinder_driver.k2.group_replication`). Groups
of other types are left to Cinder's generic implementation
(NotImplementedError).

A member's provider_id is marked shared: deleting the member never
deletes the group's volume group.
"""

from cinder import exception
from cinder.i18n import _
from cinder.objects import fields
from cinder.volume import volume_utils
from oslo_log import log as logging

from cinder_driver.common import cleanup
from cinder_driver.common import exception as flash_exception
from cinder_driver.common import naming
from cinder_driver.common import stats as flash_stats
from cinder_driver.k2 import provider_id
from cinder_driver.k2 import specs

LOG = logging.getLogger(__name__)
GROUP_PREFIX = 'cgrp-'
GROUP_SNAPSHOT_PREFIX = 'cgs-'


def group_name(group):
    return GROUP_PREFIX + group.id


def is_consistent(group):
    """Whether a group (or group snapshot) lives in one volume group."""
    return (volume_utils.is_group_a_cg_snapshot_type(group) or
            volume_utils.is_group_a_type(
                group, 'consistent_group_replication_enabled'))


def is_replicated(group):
    return volume_utils.is_group_a_type(
        group, 'consistent_group_replication_enabled')


def _consistent(group):
    if not is_consistent(group):
        raise NotImplementedError()


class GroupManager(object):
    """Consistent groups of one array, composed into its adapter.

    Uses the adapter's client, its type checks and id lookups, and its
    volume delete (members are deleted like any volume).
    """

    def __init__(self, adapter):
        self.adapter = adapter

    @property
    def client(self):
        return self.adapter.client

    def _volume_group(self, group, required=True):
        found = self.client.volume_group_by_name(group_name(group))
        if found is None and required:
            raise exception.GroupNotFound(group_id=group.id)
        return found

    def _dedup(self, group):
        replicated = is_replicated(group)
        if replicated and self.adapter.replication is None:
            raise exception.InvalidGroupType(reason=_(
                'group %s replicates, but this backend has no '
                'replication_device') % group.id)
        for vtype in group.volume_types:
            if self.adapter.type_specs(vtype)['replication'] != replicated:
                raise exception.InvalidGroupType(reason=_(
                    'volume type %(type)s %(is)s replicated, but group '
                    '%(grp)s %(does)s: a K2 group replicates as one, with '
                    'all its volumes') % {
                        'type': vtype.id, 'grp': group.id,
                        'is': 'is' if not replicated else 'is not',
                        'does': 'does not' if not replicated
                        else 'does'})
        values = {self.adapter.type_dedup(t) for t in group.volume_types}
        if len(values) > 1:
            raise exception.InvalidGroupType(reason=_(
                'the volume types of group %s differ in deduplication; a '
                'consistent K2 group holds one kind') % group.id)
        return values.pop() if values else True

    def create(self, group):
        _consistent(group)
        self.client.create_volume_group(group_name(group),
                                        self._dedup(group))
        return {'status': fields.GroupStatus.AVAILABLE}

    def create_member(self, volume):
        """A new volume created in its consistent group's volume group.

        In a replicating group it joins the group's session.
        """
        group = volume.group
        replicated = is_replicated(group)
        if self.adapter.type_specs(volume.volume_type)['replication'] != \
                replicated:
            raise exception.InvalidVolume(reason=_(
                'group %s takes volumes of %s types only: a K2 group '
                'replicates as one') % (
                    volume.group_id,
                    'replicated' if replicated else 'not replicated'))
        status = group.replication_status if replicated else None
        if status not in (None, fields.ReplicationStatus.DISABLED,
                          fields.ReplicationStatus.ENABLED):
            raise exception.InvalidGroup(reason=_(
                'group %(grp)s is %(status)s; new volumes join it once its '
                'replication is enabled or disabled') % {
                    'grp': group.id, 'status': status})
        vg = self._volume_group(group)
        if self.adapter.type_dedup(volume.volume_type) != vg.is_dedup:
            raise exception.InvalidVolume(reason=_(
                'the volume type does not match the deduplication of group '
                '%s') % volume.group_id)
        volume_id = self.client.create_volume(
            naming.volume_name(volume),
            volume.size * flash_stats.KIB_PER_GIB, vg.id,
            description=specs.owner(volume))
        update = {'provider_id': self.adapter.provider_id(vg.id, volume_id,
                                                          shared=True)}
        if status == fields.ReplicationStatus.ENABLED:
            with cleanup.undo_on_error(
                    'removing volume %s' % volume_id,
                    lambda: self.client.delete_volume(volume_id)):
                update.update(self.adapter.replication.groups.add_member(
                    group, volume, volume_id))
        elif replicated:
            update['replication_status'] = \
                fields.ReplicationStatus.DISABLED
        return update

    def delete(self, group, volumes):
        _consistent(group)
        if is_replicated(group) and self.adapter.replication is not None:
            # The session holds the volume group; the copy goes too.
            self.adapter.replication.groups.stop(group)
        updates = []
        for volume in volumes:
            try:
                self.adapter.delete_volume(volume)
                status = 'deleted'
            except Exception as e:
                LOG.error('Deleting volume %(vol)s of group %(grp)s '
                          'failed: %(err)s', {'vol': volume.id,
                                              'grp': group.id, 'err': e})
                status = 'error_deleting'
            updates.append({'id': volume.id, 'status': status})
        if any(u['status'] != 'deleted' for u in updates):
            return {'status': fields.GroupStatus.ERROR_DELETING}, updates
        vg = self._volume_group(group, required=False)
        if vg is not None:
            self.client.delete_volume_group(vg.id)
        return {'status': fields.GroupStatus.DELETED}, updates

    def update(self, group, add_volumes, remove_volumes):
        _consistent(group)
        replicated = is_replicated(group)
        if replicated and (add_volumes or remove_volumes) and \
                group.replication_status != \
                fields.ReplicationStatus.DISABLED:
            raise exception.InvalidGroup(reason=_(
                'group %(grp)s replicates (%(status)s); disable its '
                'replication before adding or removing volumes') % {
                    'grp': group.id, 'status': group.replication_status})
        vg = self._volume_group(group)
        added, removed = [], []
        for volume in add_volumes or []:
            if self.adapter.type_dedup(volume.volume_type) != vg.is_dedup:
                raise exception.InvalidVolume(reason=_(
                    'volume %(vol)s does not match the deduplication of '
                    'group %(grp)s') % {'vol': volume.id, 'grp': group.id})
            if self.adapter.type_specs(volume.volume_type)['replication'] \
                    != replicated:
                raise exception.InvalidVolume(reason=_(
                    'volume %(vol)s is %(not)sreplicated; group %(grp)s '
                    'replicates as one, with all its volumes') % {
                        'vol': volume.id, 'grp': group.id,
                        'not': '' if not replicated else 'not '})
        for volume in add_volumes or []:
            if replicated and self.adapter.replication.is_replicated(volume):
                # It replicated on its own: the group's session takes over
                # once the group's replication is enabled.
                self.adapter.replication.stop(self.client, volume)
            added.append(self._move_into(volume, vg))
            if replicated:
                added[-1]['replication_status'] = \
                    fields.ReplicationStatus.DISABLED
        for volume in remove_volumes or []:
            removed.append(self._move_out(volume))
        return None, added, removed

    def _move_into(self, volume, vg):
        own, volume_id = self.adapter.volume_ids(volume)
        self.client.move_volume(volume_id, vg.id)
        if not provider_id.is_shared(volume.provider_id):
            # Its own group goes unless it still holds snapshots.
            try:
                self.client.delete_volume_group(own)
            except flash_exception.ObjectBusy:
                pass
        return {'id': volume.id,
                'provider_id': self.adapter.provider_id(vg.id, volume_id,
                                                        shared=True)}

    def _move_out(self, volume):
        _vg, volume_id = self.adapter.volume_ids(volume)
        own = self.client.volume_group_by_name(naming.group_name(volume))
        own_id = own.id if own is not None else \
            self.client.create_volume_group(
                naming.group_name(volume),
                self.adapter.type_dedup(volume.volume_type))
        self.client.move_volume(volume_id, own_id)
        return {'id': volume.id,
                'provider_id': self.adapter.provider_id(own_id, volume_id)}

    def create_snapshot(self, group_snapshot, snapshots):
        _consistent(group_snapshot)
        vg = self._volume_group(group_snapshot.group)
        snap_id = self.client.create_snapshot(
            GROUP_SNAPSHOT_PREFIX + group_snapshot.id, vg.id,
            self.adapter.retention_policy_id)
        members = self.client.volsnaps_of(snap_id)
        updates = []
        for snapshot in snapshots:
            _vg, volume_id = self.adapter.volume_ids(snapshot.volume)
            volsnap = members.get(volume_id)
            if volsnap is None:
                with_status = fields.SnapshotStatus.ERROR
                pid = None
            else:
                with_status = fields.SnapshotStatus.AVAILABLE
                pid = self.adapter.provider_id(snap_id, volsnap, shared=True)
            updates.append({'id': snapshot.id, 'status': with_status,
                            'provider_id': pid})
        status = fields.GroupSnapshotStatus.AVAILABLE
        if any(u['status'] != fields.SnapshotStatus.AVAILABLE
               for u in updates):
            status = fields.GroupSnapshotStatus.ERROR
        return {'status': status}, updates

    def delete_snapshot(self, group_snapshot, snapshots):
        _consistent(group_snapshot)
        found = self.client.snapshot_by_name(
            GROUP_SNAPSHOT_PREFIX + group_snapshot.id)
        if found is not None:
            self.client.delete_snapshot(found.id)
        return ({'status': fields.GroupSnapshotStatus.DELETED},
                [{'id': s.id, 'status': fields.SnapshotStatus.DELETED}
                 for s in snapshots])

    def create_from_src(self, group, volumes, snapshots=None,
                        source_vols=None):
        _consistent(group)
        if not self.adapter.capabilities.get('volume_source'):
            raise exception.VolumeDriverException(message=_(
                'A group can be created from a source only on arrays that '
                'copy volumes (no volume_source capability here).'))
        self.create(group)
        vg = self._volume_group(group)
        sources = {}
        for snapshot in snapshots or []:
            sources[snapshot.volume_id] = {
                'from_volsnap': self.adapter.snapshot_ids(snapshot)[1]}
        for source in source_vols or []:
            sources[source.id] = {
                'from_volume': self.adapter.volume_ids(source)[1]}
        updates = []
        for volume in volumes:
            origin = volume.source_volid if source_vols else None
            if snapshots:
                origin = next(s.volume_id for s in snapshots
                              if s.id == volume.snapshot_id)
            volume_id = self.client.create_volume(
                naming.volume_name(volume),
                volume.size * flash_stats.KIB_PER_GIB, vg.id,
                description=specs.owner(volume), **sources[origin])
            updates.append({'id': volume.id, 'status': 'available',
                            'provider_id': self.adapter.provider_id(
                                vg.id, volume_id, shared=True)})
        return {'status': fields.GroupStatus.AVAILABLE}, updates
