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
nothing behind. A volume's data is an engine layer kept in ``_layer``.

A volsnap's ``_layer`` is its snapshot's point-in-time image and is never
written. An exposable snapshot is a K2 view: each of its volsnaps also
has ``_view``, a writable layer over that image, so writes to a view
reach neither the source volume, nor clones, nor the snapshot itself.
"""

import time

from reference_array.k2 import backend
from reference_array.k2 import fields
from reference_array.k2 import refs

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
    if obj.get('_builtin'):
        raise bad('%s is a built-in volume' % obj['name'])


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

    def _rename(self, resource, obj, body):
        if 'name' in body:
            obj['name'] = fields.name(resource, body)
            self.records.unique(resource, 'name', obj['name'], obj['id'])

    def _save(self, resource, obj, body):
        if 'description' in body:
            obj['description'] = str(body['description'])
        return self.records.put(resource, obj)

    # -- volume groups -------------------------------------------------------
    def create_volume_group(self, body):
        name = fields.name('volume_groups', body)
        self.records.unique('volume_groups', 'name', name)
        if 'quota' not in body:
            raise bad('quota is mandatory (0 means unlimited)')
        quota = fields.integer(body, 'quota', minimum=0)
        return self.records.new('volume_groups', {
            'name': name, 'quota': quota,
            'is_dedup': fields.boolean(body, 'is_dedup', True),
            'description': body.get('description', ''),
            'replication_session': None, 'last_restored_from': None,
            'capacity_state': 'ok'})

    def update_volume_group(self, vg, body):
        self._rename('volume_groups', vg, body)
        if 'quota' in body:
            vg['quota'] = fields.integer(body, 'quota', minimum=0)
        if 'last_restored_from' in body:
            self._restore_group(vg, body)
        return self._save('volume_groups', vg, body)

    def _restore_group(self, vg, body):
        _res, snap = self.records.deref(body, 'last_restored_from',
                                        ('snapshots',))
        vg_ref = refs.path('volume_groups', vg['id'])
        if snap['volume_group']['ref'] != vg_ref:
            raise bad('snapshot %d is not a snapshot of volume group %d' % (
                snap['id'], vg['id']))
        volsnaps = self.records.children('volsnaps', 'snapshot',
                                         refs.path('snapshots', snap['id']))
        by_volume = {vs['source']['ref']: vs for vs in volsnaps}
        for vol in self.records.children('volumes', 'volume_group', vg_ref):
            vs = by_volume.get(refs.path('volumes', vol['id']))
            if vs is None:
                continue
            old = vol['_layer']
            vol['_layer'] = self.engine.new_layer(parent=vs['_layer'],
                                                  dedup=vg['is_dedup'])
            self.engine.release(old)
            self.records.put('volumes', vol)
        vg['last_restored_from'] = refs.ref('snapshots', snap['id'])

    def delete_volume_group(self, vg):
        ref = refs.path('volume_groups', vg['id'])
        if self.records.has_children('volumes', 'volume_group', ref):
            raise bad('volume group %s still has volumes' % vg['name'])
        if self.records.has_children('snapshots', 'volume_group', ref):
            raise bad('volume group %s still has snapshots' % vg['name'])
        if vg.get('replication_session'):
            raise bad('volume group %s is replicated; delete its session '
                      'first' % vg['name'])

    # -- volumes -------------------------------------------------------------
    def _size(self, body):
        return fields.integer(body, 'size', minimum=1,
                              maximum=self.max_volume_kib)

    def create_volume(self, body):
        name = fields.name('volumes', body)
        self.records.unique('volumes', 'name', name)
        size = self._size(body)
        _res, vg = self.records.deref(body, 'volume_group',
                                      ('volume_groups',))
        if 'source' in body:
            if not self.volume_source:
                raise bad('source is not supported by this array')
            layer = self._copy_of(body, size, vg['is_dedup'])
        else:
            layer = self.engine.new_layer(dedup=vg['is_dedup'])
        vol_id = self.records.store.next_id('volumes')
        return self.records.put('volumes', {
            'id': vol_id, 'name': name, 'size': size,
            'volume_group': refs.ref('volume_groups', vg['id']),
            'is_dedup': vg['is_dedup'], 'no_dedup': not vg['is_dedup'],
            'description': body.get('description', ''),
            'read_only': fields.boolean(body, 'read_only', False),
            '_layer': layer, 'scsi_sn': 'REFA%012X' % vol_id,
            'scsi_suffix': vol_id})

    def _copy_of(self, body, size, dedup):
        """A layer holding a point-in-time copy of a volume or volsnap.

        Copy-on-write: its cost does not depend on the data in the source.
        A writable source (a volume, or a volsnap of an exposed view) is
        frozen first so later writes to it do not show in the copy.
        """
        res, src = self.records.deref(body, 'source', ('volumes',
                                                       'volsnaps'))
        not_builtin(src)
        if size < src['_size' if res == 'volsnaps' else 'size']:
            raise bad('size %d KiB is smaller than the source %s' % (
                size, body['source']['ref']))
        key = '_view' if src.get('_view') else '_layer'
        frozen = src[key]
        writable = res == 'volumes' or key == '_view'
        if writable:
            src[key] = self.engine.freeze(frozen)
            self.records.put(res, src)
        layer = self.engine.new_layer(parent=frozen, dedup=dedup)
        if writable:
            self.engine.release(frozen)
        return layer

    def update_volume(self, vol, body):
        not_builtin(vol)
        if 'size' in body:
            size = self._size(body)
            if size < vol['size']:
                raise bad('size %d KiB is smaller than the current %d KiB; '
                          'volumes cannot shrink' % (size, vol['size']))
            vol['size'] = size
        self._rename('volumes', vol, body)
        if 'volume_group' in body:
            _res, vg = self.records.deref(body, 'volume_group',
                                          ('volume_groups',))
            if vg['is_dedup'] != vol['is_dedup']:
                raise bad('volume %s cannot move between dedup and no-dedup '
                          'volume groups' % vol['name'])
            vol['volume_group'] = refs.ref('volume_groups', vg['id'])
        if 'read_only' in body:
            vol['read_only'] = fields.boolean(body, 'read_only')
        return self._save('volumes', vol, body)

    def delete_volume(self, vol):
        not_builtin(vol)
        ref = refs.path('volumes', vol['id'])
        if self.records.has_children('mappings', 'volume', ref):
            raise bad('volume %s is mapped; unmap it first' % vol['name'])
        for pv in self.records.children('replication/peer_volumes',
                                        'local_volume', ref):
            if pv.get('_base'):
                self.engine.release(pv['_base'])
            self.records.delete('replication/peer_volumes', pv['id'])
        self.engine.release(vol['_layer'])

    # -- snapshots -----------------------------------------------------------
    def create_snapshot(self, body):
        short = fields.name('snapshots', body, 'short_name')
        res, source = self.records.deref(body, 'source', ('volume_groups',
                                                          'snapshots'))
        if 'retention_policy' in body:
            self.records.deref(body, 'retention_policy',
                               ('retention_policies',))
        if res == 'volume_groups':
            vg, parent_snap = source, None
        else:
            parent_snap = source
            vg = self.records.get('volume_groups',
                                  refs.id_of(source['volume_group']))
        full = '%s:%s' % (vg['name'], short)
        self.records.unique('snapshots', 'name', full)
        snap_id = self.records.store.next_id('snapshots')
        snap = self.records.put('snapshots', {
            'id': snap_id, 'short_name': short, 'name': full,
            'source': refs.ref(res, source['id']),
            'volume_group': refs.ref('volume_groups', vg['id']),
            'retention_policy': body.get('retention_policy'),
            'is_auto_deleteable': fields.boolean(body, 'is_auto_deleteable',
                                                 False),
            'is_exposable': fields.boolean(body, 'is_exposable',
                                           parent_snap is not None),
            'is_deleted': False,
            'description': body.get('description', ''),
            'generation_number': self.records.store.next_id('generation'),
            'creation_time': int(time.time()),
            'wwn': '6%031x' % (0x5000 << 64 | snap_id)})
        snap_ref = refs.ref('snapshots', snap['id'])
        if parent_snap is None:
            members = self.records.children(
                'volumes', 'volume_group',
                refs.path('volume_groups', vg['id']))
            for vol in members:
                frozen = vol['_layer']
                vol['_layer'] = self.engine.freeze(frozen)
                self.records.put('volumes', vol)
                self._new_volsnap(snap, snap_ref, vol['name'],
                                  refs.ref('volumes', vol['id']),
                                  frozen, vol['size'])
        else:
            for vs in self.records.children(
                    'volsnaps', 'snapshot',
                    refs.path('snapshots', parent_snap['id'])):
                # The source's image as it is now: a view's, frozen.
                if vs.get('_view'):
                    image = vs['_view']
                    vs['_view'] = self.engine.freeze(image)
                    self.records.put('volsnaps', vs)
                    layer = image
                else:
                    layer = self.engine.new_layer(parent=vs['_layer'],
                                                  dedup=vg['is_dedup'])
                self._new_volsnap(snap, snap_ref,
                                  vs['name'].rsplit(':', 1)[1],
                                  vs['source'], layer, vs['_size'])
        return snap

    def _new_volsnap(self, snap, snap_ref, volume_name, source, layer, size):
        vs_id = self.records.store.next_id('volsnaps')
        vs = {
            'id': vs_id, 'name': '%s:%s' % (snap['name'], volume_name),
            'snapshot': snap_ref, 'source': source, '_layer': layer,
            '_size': size, 'scsi_sn': 'REFS%012X' % vs_id}
        if snap['is_exposable']:
            vs['_view'] = self.engine.freeze(layer)
        self.records.put('volsnaps', vs)

    def _expose(self, snap):
        """Give each volsnap of ``snap`` its writable view layer."""
        for vs in self.records.children('volsnaps', 'snapshot',
                                        refs.path('snapshots', snap['id'])):
            if not vs.get('_view'):
                vs['_view'] = self.engine.freeze(vs['_layer'])
                self.records.put('volsnaps', vs)

    def update_snapshot(self, snap, body):
        if 'short_name' in body:
            short = fields.name('snapshots', body, 'short_name')
            vg_name = snap['name'].rsplit(':', 1)[0]
            snap['short_name'] = short
            snap['name'] = '%s:%s' % (vg_name, short)
            self.records.unique('snapshots', 'name', snap['name'],
                                snap['id'])
        if 'is_exposable' in body:
            snap['is_exposable'] = fields.boolean(body, 'is_exposable')
            if snap['is_exposable']:
                self._expose(snap)
        return self._save('snapshots', snap, body)

    def delete_snapshot(self, snap):
        ref = refs.path('snapshots', snap['id'])
        volsnaps = self.records.children('volsnaps', 'snapshot', ref)
        for vs in volsnaps:
            if self.records.has_children('mappings', 'volume',
                                         refs.path('volsnaps', vs['id'])):
                raise bad('snapshot %s is mapped; unmap it first' %
                          snap['name'])
        if self.records.has_children('snapshots', 'source', ref):
            raise bad('snapshot %s has views; delete them first' %
                      snap['name'])
        for vs in volsnaps:
            if vs.get('_view'):
                self.engine.release(vs['_view'])
            self.engine.release(vs['_layer'])
            self.records.delete('volsnaps', vs['id'])
