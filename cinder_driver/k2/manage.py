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

"""Taking existing array volumes and snapshots under Cinder, and letting go.

A managed object is renamed to the driver's names and marked as owned in
its description (``cinder:<id>``); unmanage removes the mark and keeps
the object. Composed into the adapter of one array.
"""

from cinder import exception
from cinder.i18n import _
from cinder.volume import volume_utils

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import naming
from cinder_driver.common import stats as flash_stats
from cinder_driver.k2 import specs

KIB_PER_GIB = flash_stats.KIB_PER_GIB
BUILT_IN = 'CTRL'


def _gib(kib):
    return -(-kib // KIB_PER_GIB)


class Manager(object):

    def __init__(self, adapter):
        self.adapter = adapter

    @property
    def client(self):
        return self.adapter.client

    @staticmethod
    def _invalid(existing_ref, reason):
        return exception.ManageExistingInvalidReference(
            existing_ref=existing_ref, reason=reason)

    def _by_reference(self, existing_ref, by_id, by_name):
        """The object a manage reference names, or None."""
        if 'source-id' in existing_ref:
            try:
                obj_id = int(existing_ref['source-id'])
            except (ValueError, TypeError):
                raise self._invalid(existing_ref,
                                    _('source-id must be a K2 object id'))
            try:
                return by_id(obj_id)
            except flash_exception.ObjectNotFound:
                return None
        if 'source-name' in existing_ref:
            return by_name(existing_ref['source-name'])
        raise self._invalid(existing_ref, _('give source-name or source-id'))

    # -- volumes -------------------------------------------------------------
    def _volume_target(self, existing_ref):
        vol = self._by_reference(existing_ref, self.client.volume,
                                 self.client.volume_by_name)
        if vol is None:
            raise self._invalid(existing_ref,
                                _('no such volume on the array'))
        return vol

    def volume_size(self, existing_ref):
        return _gib(self._volume_target(existing_ref).size)

    def volume(self, volume, existing_ref):
        vol = self._volume_target(existing_ref)
        if vol.group_id is None:
            raise self._invalid(existing_ref, _(
                '%s is not in a volume group (a built-in volume)') % vol.name)
        group = self.client.volume_group(vol.group_id)
        reason = None
        owner = specs.owner_of(vol.description)
        if owner and owner != volume.id:
            reason = _('it is managed by Cinder already (as volume %s)') % (
                owner)
        elif group.volumes_count not in (None, 1):
            reason = _('its volume group %s holds other volumes') % (
                group.name)
        elif group.replicated:
            reason = _('its volume group is replicated')
        elif self.client.mappings_of(volume_id=vol.id):
            reason = _('it is mapped to a host; unmap it first')
        elif group.is_dedup != self.adapter.type_dedup(volume.volume_type):
            reason = _('its deduplication setting differs from the volume '
                       'type')
        if reason:
            raise self._invalid(existing_ref, reason)
        size = _gib(vol.size) * KIB_PER_GIB
        self.client.rename_volume_group(group.id, naming.group_name(volume))
        self.client.update_volume(
            vol.id, name=naming.volume_name(volume),
            description=specs.owner(volume),
            size_kib=size if size != vol.size else None)
        update = {'provider_id': self.adapter.provider_id(group.id, vol.id)}
        if self.adapter.type_specs(volume.volume_type)['replication']:
            update.update(self.adapter.replication.start(
                self.client, volume, group.id, vol.id))
        return update

    def release_volume(self, volume):
        """Cinder lets go: the volume stays, without our ownership mark."""
        ids = self.adapter.volume_ids(volume, required=False)
        if ids is not None:
            self.client.update_volume(ids[1], description='')

    # -- snapshots -----------------------------------------------------------
    def _snapshot_target(self, snapshot, existing_ref):
        group_id, _volume_id = self.adapter.volume_ids(snapshot.volume)
        snap = self._by_reference(
            existing_ref, self.client.snapshot,
            lambda name: self.client.snapshot_by_name(name, group_id))
        reason = None
        owner = None if snap is None else specs.owner_of(snap.description)
        if snap is None:
            reason = _('no such snapshot of volume %s on the array') % (
                snapshot.volume_id)
        elif snap.group_id != group_id:
            reason = _('it is a snapshot of another volume')
        elif snap.is_view:
            reason = _('it is a view, not a snapshot')
        elif owner and owner != snapshot.id:
            reason = _('it is managed by Cinder already (as snapshot %s)') % (
                owner)
        if reason:
            raise self._invalid(existing_ref, reason)
        return snap

    def snapshot_size(self, snapshot, existing_ref):
        self._snapshot_target(snapshot, existing_ref)
        _group, volume_id = self.adapter.volume_ids(snapshot.volume)
        return _gib(self.client.volume(volume_id).size)

    def snapshot(self, snapshot, existing_ref):
        snap = self._snapshot_target(snapshot, existing_ref)
        volsnap = self.client.volsnap_of(snap.id)
        if volsnap is None:
            raise self._invalid(existing_ref,
                                _('the snapshot has no volume member'))
        self.client.update_snapshot(
            snap.id, short_name=naming.snapshot_name(snapshot),
            description=specs.owner(snapshot))
        return {'provider_id': self.adapter.provider_id(snap.id, volsnap)}

    def release_snapshot(self, snapshot):
        try:
            snap_id, _volsnap = self.adapter.snapshot_ids(snapshot)
        except exception.SnapshotNotFound:
            return
        self.client.update_snapshot(snap_id, description='')

    # -- listings ------------------------------------------------------------
    def manageable_snapshots(self, cinder_snapshots, marker, limit, offset,
                             sort_keys, sort_dirs):
        known = {naming.snapshot_name(s): s.id for s in cinder_snapshots}
        groups = {g.id: g.name for g in self.client.volume_groups()}
        entries = []
        for snap in self.client.snapshots():
            group = groups.get(snap.group_id, '')
            if snap.is_view or not group.startswith(naming.GROUP_PREFIX):
                continue
            cinder_id = known.get(snap.short_name) or \
                specs.owner_of(snap.description)
            entries.append({
                'reference': {'source-name': snap.short_name},
                'size': 0, 'cinder_id': cinder_id,
                'safe_to_manage': cinder_id is None,
                'reason_not_safe': 'already managed' if cinder_id else None,
                'extra_info': None,
                'source_reference': {'source-name': naming.VOLUME_PREFIX +
                                     group[len(naming.GROUP_PREFIX):]}})
        return volume_utils.paginate_entries_list(
            entries, marker, limit, offset, sort_keys, sort_dirs)

    def manageable_volumes(self, cinder_volumes, marker, limit, offset,
                           sort_keys, sort_dirs):
        known = {naming.volume_name(v): v.id for v in cinder_volumes}
        mapped = self.client.mapped_volume_ids()
        entries = []
        for vol in self.client.volumes():
            if vol.name == BUILT_IN:
                continue
            entry = {'reference': {'source-name': vol.name},
                     'size': _gib(vol.size),
                     'safe_to_manage': True, 'reason_not_safe': None,
                     'cinder_id': known.get(vol.name) or
                     specs.owner_of(vol.description),
                     'extra_info': None}
            if entry['cinder_id']:
                entry['safe_to_manage'] = False
                entry['reason_not_safe'] = 'already managed'
            elif vol.id in mapped:
                entry['safe_to_manage'] = False
                entry['reason_not_safe'] = 'volume is mapped'
            entries.append(entry)
        return volume_utils.paginate_entries_list(
            entries, marker, limit, offset, sort_keys, sort_dirs)
