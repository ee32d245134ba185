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

"""Writes of K2 volume groups, volumes and snapshots (with volsnaps).

Each change validates everything first and changes state inside one
store transaction (opened by the backend), so a refused call leaves
nothing behind. A volume's data is an engine layer kept in its ``layer``.

A volsnap's ``layer`` is its snapshot's point-in-time image and is never
written. An exposable snapshot is a K2 view: each of its volsnaps also
has ``view``, a writable layer over that image, so writes to a view
reach neither the source volume, nor clones, nor the snapshot itself.
"""

import time

from reference_array.k2 import backend
from reference_array.k2 import fields
from reference_array.k2 import models

Ref = models.Ref
VolumeGroup, Volume = models.VolumeGroup, models.Volume
Snapshot, Volsnap = models.Snapshot, models.Volsnap

WRITABLE = {
    'volume_groups': {'create': ('name', 'quota', 'is_dedup', 'description'),
                      'update': ('name', 'quota', 'description',
                                 'last_restored_from')},
    'volumes': {'create': ('name', 'size', 'volume_group', 'description',
                           'read_only', 'source'),
                'update': ('name', 'size', 'volume_group', 'description',
                           'read_only')},
    'snapshots': {'create': ('short_name', 'source', 'retention_policy',
                             'is_auto_deleteable', 'is_exposable',
                             'description'),
                  'update': ('short_name', 'is_exposable',
                             'retention_policy', 'description')},
}
bad = fields.bad


def not_builtin(obj):
    if getattr(obj, 'builtin', False):
        raise bad('%s is a built-in volume' % obj.name)


class Volumes(object):
    """Volume groups, volumes, snapshots and their volsnaps."""

    writable = WRITABLE

    def __init__(self, records, engine, max_volume_kib, volume_source=True):
        """``volume_source``: whether a volume may be created as a copy
        of another (K2 documents no such field).
        """
        self.records = records
        self.engine = engine
        self.max_volume_kib = max_volume_kib
        self.volume_source = volume_source

    def handlers(self):
        """resource -> (create, update, delete)."""
        return {
            'volume_groups': backend.operations(self.create_volume_group,
                                                self.update_volume_group,
                                                self.delete_volume_group),
            'volumes': backend.operations(self.create_volume,
                                          self.update_volume,
                                          self.delete_volume),
            'snapshots': backend.operations(self.create_snapshot,
                                            self.update_snapshot,
                                            self.delete_snapshot),
        }

    def _rename(self, obj, body):
        if 'name' in body:
            obj.name = fields.name(obj.KIND, body)
            self.records.unique(obj.KIND, 'name', obj.name, obj.id)

    def _save(self, obj, body):
        if 'description' in body:
            obj.description = str(body['description'])
        return self.records.put(obj)

    # -- volume groups -------------------------------------------------------
    def create_volume_group(self, body):
        name = fields.name('volume_groups', body)
        self.records.unique(VolumeGroup, 'name', name)
        if 'quota' not in body:
            raise bad('quota is mandatory (0 means unlimited)')
        return self.records.new(VolumeGroup(
            name=name, quota=fields.integer(body, 'quota', minimum=0),
            is_dedup=fields.boolean(body, 'is_dedup', True),
            description=fields.text(body, 'description')))

    def update_volume_group(self, vg, body):
        self._rename(vg, body)
        if 'quota' in body:
            vg.quota = fields.integer(body, 'quota', minimum=0)
        if 'last_restored_from' in body:
            self._restore_group(vg, body)
        return self._save(vg, body)

    def _restore_group(self, vg, body):
        snap = self.records.deref(body, 'last_restored_from', (Snapshot,))
        vg_ref = Ref.to(vg)
        if snap.volume_group != vg_ref:
            raise bad('snapshot %d is not a snapshot of volume group %d' % (
                snap.id, vg.id))
        volsnaps = self.records.children(Volsnap, 'snapshot', Ref.to(snap))
        by_volume = {vs.source: vs for vs in volsnaps}
        for vol in self.records.children(Volume, 'volume_group', vg_ref):
            vs = by_volume.get(Ref.to(vol))
            if vs is None:
                continue
            old = vol.layer
            vol.layer = self.engine.new_layer(parent=vs.layer,
                                              dedup=vg.is_dedup)
            self.engine.release(old)
            self.records.put(vol)
        vg.last_restored_from = Ref.to(snap)

    def delete_volume_group(self, vg):
        ref = Ref.to(vg)
        if self.records.has_children(Volume, 'volume_group', ref):
            raise bad('volume group %s still has volumes' % vg.name)
        if self.records.has_children(Snapshot, 'volume_group', ref):
            raise bad('volume group %s still has snapshots' % vg.name)
        if vg.replication_session:
            raise bad('volume group %s is replicated; delete its session '
                      'first' % vg.name)

    # -- volumes -------------------------------------------------------------
    def _size(self, body):
        return fields.integer(body, 'size', minimum=1,
                              maximum=self.max_volume_kib)

    def create_volume(self, body):
        name = fields.name('volumes', body)
        self.records.unique(Volume, 'name', name)
        size = self._size(body)
        vg = self.records.deref(body, 'volume_group', (VolumeGroup,))
        description = fields.text(body, 'description')
        read_only = fields.boolean(body, 'read_only', False)
        if 'source' in body:
            if not self.volume_source:
                raise bad('source is not supported by this array')
            layer = self._copy_of(body, size, vg.is_dedup)
        else:
            layer = self.engine.new_layer(dedup=vg.is_dedup)
        vol_id = self.records.next_id(Volume)
        return self.records.put(Volume(
            id=vol_id, name=name, size=size, volume_group=Ref.to(vg),
            is_dedup=vg.is_dedup, no_dedup=not vg.is_dedup,
            description=description, read_only=read_only, layer=layer,
            scsi_sn='REFA%012X' % vol_id, scsi_suffix=vol_id))

    def _copy_of(self, body, size, dedup):
        """A layer holding a point-in-time copy of a volume or volsnap.

        Copy-on-write: its cost does not depend on the data in the source.
        A writable source (a volume, or a volsnap of an exposed view) is
        frozen first so later writes to it do not show in the copy.
        """
        src = self.records.deref(body, 'source', (Volume, Volsnap))
        not_builtin(src)
        if size < src.size:
            raise bad('size %d KiB is smaller than the source %s' % (
                size, body['source']['ref']))
        field = 'view' if getattr(src, 'view', None) else 'layer'
        frozen = getattr(src, field)
        writable = isinstance(src, Volume) or field == 'view'
        if writable:
            setattr(src, field, self.engine.freeze(frozen))
            self.records.put(src)
        layer = self.engine.new_layer(parent=frozen, dedup=dedup)
        if writable:
            self.engine.release(frozen)
        return layer

    def update_volume(self, vol, body):
        not_builtin(vol)
        if 'size' in body:
            size = self._size(body)
            if size < vol.size:
                raise bad('size %d KiB is smaller than the current %d KiB; '
                          'volumes cannot shrink' % (size, vol.size))
            vol.size = size
        self._rename(vol, body)
        if 'volume_group' in body:
            vg = self.records.deref(body, 'volume_group', (VolumeGroup,))
            if vg.is_dedup != vol.is_dedup:
                raise bad('volume %s cannot move between dedup and no-dedup '
                          'volume groups' % vol.name)
            vol.volume_group = Ref.to(vg)
        if 'read_only' in body:
            vol.read_only = fields.boolean(body, 'read_only')
        return self._save(vol, body)

    def delete_volume(self, vol):
        not_builtin(vol)
        ref = Ref.to(vol)
        if self.records.has_children(models.Mapping, 'volume', ref):
            raise bad('volume %s is mapped; unmap it first' % vol.name)
        for pv in self.records.children(models.PeerVolume, 'local_volume',
                                        ref):
            if pv.base:
                self.engine.release(pv.base)
            self.records.delete(pv)
        self.engine.release(vol.layer)

    # -- snapshots -----------------------------------------------------------
    def create_snapshot(self, body):
        short = fields.name('snapshots', body, 'short_name')
        source = self.records.deref(body, 'source', (VolumeGroup, Snapshot))
        policy = None
        if 'retention_policy' in body:
            policy = Ref.to(self.records.deref(
                body, 'retention_policy', (models.RetentionPolicy,)))
        if isinstance(source, VolumeGroup):
            vg, parent_snap = source, None
        else:
            parent_snap = source
            vg = self.records.resolve(source.volume_group)
        full = '%s:%s' % (vg.name, short)
        self.records.unique(Snapshot, 'name', full)
        snap_id = self.records.next_id(Snapshot)
        snap = self.records.put(Snapshot(
            id=snap_id, short_name=short, name=full, source=Ref.to(source),
            volume_group=Ref.to(vg), retention_policy=policy,
            is_auto_deleteable=fields.boolean(body, 'is_auto_deleteable',
                                              False),
            is_exposable=fields.boolean(body, 'is_exposable',
                                        parent_snap is not None),
            description=fields.text(body, 'description'),
            generation_number=self.records.store.next_id('generation'),
            creation_time=int(time.time()),
            wwn='6%031x' % (0x5000 << 64 | snap_id)))
        if parent_snap is None:
            for vol in self.records.children(Volume, 'volume_group',
                                             Ref.to(vg)):
                frozen = vol.layer
                vol.layer = self.engine.freeze(frozen)
                self.records.put(vol)
                self._new_volsnap(snap, vol.name, Ref.to(vol), frozen,
                                  vol.size)
        else:
            for vs in self.records.children(Volsnap, 'snapshot',
                                            Ref.to(parent_snap)):
                # The source's image as it is now: a view's, frozen.
                if vs.view:
                    layer = vs.view
                    vs.view = self.engine.freeze(layer)
                    self.records.put(vs)
                else:
                    layer = self.engine.new_layer(parent=vs.layer,
                                                  dedup=vg.is_dedup)
                self._new_volsnap(snap, vs.name.rsplit(':', 1)[1],
                                  vs.source, layer, vs.size)
        return snap

    def _new_volsnap(self, snap, volume_name, source, layer, size):
        vs_id = self.records.next_id(Volsnap)
        self.records.put(Volsnap(
            id=vs_id, name='%s:%s' % (snap.name, volume_name),
            snapshot=Ref.to(snap), source=source, layer=layer, size=size,
            scsi_sn='REFS%012X' % vs_id,
            view=self.engine.freeze(layer) if snap.is_exposable else None))

    def _expose(self, snap):
        """Give each volsnap of ``snap`` its writable view layer."""
        for vs in self.records.children(Volsnap, 'snapshot', Ref.to(snap)):
            if not vs.view:
                vs.view = self.engine.freeze(vs.layer)
                self.records.put(vs)

    def update_snapshot(self, snap, body):
        if 'short_name' in body:
            short = fields.name('snapshots', body, 'short_name')
            vg_name = snap.name.rsplit(':', 1)[0]
            snap.short_name = short
            snap.name = '%s:%s' % (vg_name, short)
            self.records.unique(Snapshot, 'name', snap.name, snap.id)
        if 'is_exposable' in body:
            snap.is_exposable = fields.boolean(body, 'is_exposable')
            if snap.is_exposable:
                self._expose(snap)
        return self._save(snap, body)

    def delete_snapshot(self, snap):
        ref = Ref.to(snap)
        volsnaps = self.records.children(Volsnap, 'snapshot', ref)
        for vs in volsnaps:
            if self.records.has_children(models.Mapping, 'volume',
                                         Ref.to(vs)):
                raise bad('snapshot %s is mapped; unmap it first' %
                          snap.name)
        if self.records.has_children(Snapshot, 'source', ref):
            raise bad('snapshot %s has views; delete them first' %
                      snap.name)
        for vs in volsnaps:
            if vs.view:
                self.engine.release(vs.view)
            self.engine.release(vs.layer)
            self.records.delete(vs)
