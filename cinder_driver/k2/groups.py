"""Generic groups with consistent snapshots on K2 volume groups.

A K2 snapshot covers a whole volume group at one instant, so a Cinder
group whose type asks for consistent snapshots gets a volume group of its
own (``cgrp-<group id>``) and its volumes move into it. A group snapshot
is then one array snapshot. Groups of other types are left to Cinder's
generic implementation.

A member's provider_id carries a third field, ``g``: its volume group is
shared, so deleting the member never deletes the group's volume group.
"""

from cinder import exception
from cinder.i18n import _
from cinder.objects import fields
from cinder.volume import volume_utils
from oslo_log import log as logging

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import naming
from cinder_driver.k2 import rest as k2_rest

LOG = logging.getLogger(__name__)
GROUP_PREFIX = 'cgrp-'
GROUP_SNAPSHOT_PREFIX = 'cgs-'
SHARED = 'g'


def group_name(group):
    return GROUP_PREFIX + group.id


def is_consistent(group):
    return volume_utils.is_group_a_cg_snapshot_type(group)


class GroupOps(object):
    """Mixed into the K2 adapter; uses its client and lookups."""

    def _group_source(self, kind, obj_id):
        if not self.capabilities.get('volume_source'):
            raise exception.VolumeDriverException(message=_(
                'A group can be created from a source only on arrays that '
                'copy volumes (no volume_source capability here).'))
        return k2_rest.ref(kind, obj_id)

    def _group_vg(self, group, required=True):
        found = self.client.find('volume_groups', name=group_name(group))
        if found is None and required:
            raise exception.GroupNotFound(group_id=group.id)
        return found

    def _group_dedup(self, group):
        for vtype in group.volume_types:
            if self._specs(vtype)['replication']:
                raise exception.InvalidGroupType(reason=_(
                    'volume type %s is replicated; consistent K2 groups '
                    'take no replicated volumes') % vtype.id)
        values = {self._type_dedup(t) for t in group.volume_types}
        if len(values) > 1:
            raise exception.InvalidGroupType(reason=_(
                'the volume types of group %s differ in deduplication; a '
                'consistent K2 group holds one kind') % group.id)
        return values.pop() if values else True

    def create_group(self, group):
        if not is_consistent(group):
            raise NotImplementedError()
        dedup = self._group_dedup(group)
        self.client.create('volume_groups', {
            'name': group_name(group), 'quota': 0, 'is_dedup': dedup})
        return {'status': fields.GroupStatus.AVAILABLE}

    def delete_group(self, group, volumes):
        if not is_consistent(group):
            raise NotImplementedError()
        updates = []
        for volume in volumes:
            try:
                self.delete_volume(volume)
                status = 'deleted'
            except Exception as e:
                LOG.error('Deleting volume %(vol)s of group %(grp)s '
                          'failed: %(err)s', {'vol': volume.id,
                                              'grp': group.id, 'err': e})
                status = 'error_deleting'
            updates.append({'id': volume.id, 'status': status})
        if any(u['status'] != 'deleted' for u in updates):
            return {'status': fields.GroupStatus.ERROR_DELETING}, updates
        vg = self._group_vg(group, required=False)
        if vg is not None:
            self.client.delete('volume_groups', vg['id'])
        return {'status': fields.GroupStatus.DELETED}, updates

    def update_group(self, group, add_volumes, remove_volumes):
        if not is_consistent(group):
            raise NotImplementedError()
        vg = self._group_vg(group)
        added, removed = [], []
        for volume in add_volumes or []:
            if self._type_dedup(volume.volume_type) != vg['is_dedup']:
                raise exception.InvalidVolume(reason=_(
                    'volume %(vol)s does not match the deduplication of '
                    'group %(grp)s') % {'vol': volume.id, 'grp': group.id})
            added.append(self._move_into(volume, vg))
        for volume in remove_volumes or []:
            removed.append(self._move_out(volume))
        return None, added, removed

    def _move_into(self, volume, vg):
        own, volume_id = self._volume_ids(volume)
        self.client.update('volumes', volume_id, {
            'volume_group': k2_rest.ref('volume_groups', vg['id'])})
        if not self._shared(volume):
            # Its own group goes unless it still holds snapshots.
            try:
                self.client.delete('volume_groups', own)
            except flash_exception.ObjectBusy:
                pass
        return {'id': volume.id,
                'provider_id': self._pid(vg['id'], volume_id, shared=True)}

    def _move_out(self, volume):
        _vg, volume_id = self._volume_ids(volume)
        own = self.client.find('volume_groups',
                               name=naming.group_name(volume))
        if own is None:
            own = self.client.create('volume_groups', {
                'name': naming.group_name(volume), 'quota': 0,
                'is_dedup': self._type_dedup(volume.volume_type)})
        self.client.update('volumes', volume_id, {
            'volume_group': k2_rest.ref('volume_groups', own['id'])})
        return {'id': volume.id,
                'provider_id': self._pid(own['id'], volume_id)}

    def create_group_snapshot(self, group_snapshot, snapshots):
        if not is_consistent(group_snapshot):
            raise NotImplementedError()
        vg = self._group_vg(group_snapshot.group)
        snap = self.client.create('snapshots', {
            'short_name': GROUP_SNAPSHOT_PREFIX + group_snapshot.id,
            'source': k2_rest.ref('volume_groups', vg['id']),
            'retention_policy': self.retention_policy,
            'is_auto_deleteable': False})
        members = {vs['source']['ref']: vs['id'] for vs in self.client.search(
            'volsnaps', **{'snapshot.ref': '/snapshots/%d' % snap['id']})}
        updates = []
        for snapshot in snapshots:
            _vg, volume_id = self._volume_ids(snapshot.volume)
            volsnap = members.get('/volumes/%d' % volume_id)
            if volsnap is None:
                with_status = fields.SnapshotStatus.ERROR
                provider_id = None
            else:
                with_status = fields.SnapshotStatus.AVAILABLE
                provider_id = self._pid(snap['id'], volsnap, shared=True)
            updates.append({'id': snapshot.id, 'status': with_status,
                            'provider_id': provider_id})
        status = fields.GroupSnapshotStatus.AVAILABLE
        if any(u['status'] != fields.SnapshotStatus.AVAILABLE
               for u in updates):
            status = fields.GroupSnapshotStatus.ERROR
        return {'status': status}, updates

    def delete_group_snapshot(self, group_snapshot, snapshots):
        if not is_consistent(group_snapshot):
            raise NotImplementedError()
        found = self.client.find(
            'snapshots', short_name=GROUP_SNAPSHOT_PREFIX + group_snapshot.id)
        if found is not None:
            self.client.delete('snapshots', found['id'])
        return ({'status': fields.GroupSnapshotStatus.DELETED},
                [{'id': s.id, 'status': fields.SnapshotStatus.DELETED}
                 for s in snapshots])

    def create_group_from_src(self, group, volumes, group_snapshot=None,
                              snapshots=None, source_group=None,
                              source_vols=None):
        if not is_consistent(group):
            raise NotImplementedError()
        self.create_group(group)
        vg = self._group_vg(group)
        by_volume = {}
        if snapshots:
            for snapshot in snapshots:
                by_volume[snapshot.volume_id] = (
                    'volsnaps', self._snapshot_ids(snapshot)[1])
        for source in source_vols or []:
            by_volume[source.id] = ('volumes', self._volume_ids(source)[1])
        updates = []
        for volume in volumes:
            origin = volume.source_volid if source_vols else None
            if snapshots:
                origin = next(s.volume_id for s in snapshots
                              if s.id == volume.snapshot_id)
            kind, obj_id = by_volume[origin]
            created = self.client.create('volumes', {
                'name': naming.volume_name(volume),
                'description': self._owner(volume),
                'size': volume.size * self.KIB_PER_GIB,
                'volume_group': k2_rest.ref('volume_groups', vg['id']),
                'source': self._group_source(kind, obj_id)})
            updates.append({'id': volume.id, 'status': 'available',
                            'provider_id': self._pid(vg['id'], created['id'],
                                                     shared=True)})
        return {'status': fields.GroupStatus.AVAILABLE}, updates
