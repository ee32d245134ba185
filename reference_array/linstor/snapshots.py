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

"""LINSTOR snapshots, restores, rollbacks and clones."""

import uuid

from reference_array.linstor import fields
from reference_array.linstor import models
from reference_array.linstor import outcomes
from reference_array.linstor import records as rec


class Snapshots(object):

    def __init__(self, records, engine, nodes, definitions, placement):
        self.records = records
        self.engine = engine
        self.nodes = nodes
        self.definitions = definitions
        self.placement = placement
        self.store = records.store

    @staticmethod
    def snapshot_view(rd, snap):
        """The wire form of a ``models.Snapshot`` of ``rd``."""
        return {
            'name': snap.name,
            'resource_name': rd.name,
            'nodes': list(snap.nodes),
            'props': dict(snap.props),
            'flags': ['SUCCESSFUL'],
            'volume_definitions': [{
                'volume_number': v.volume_number,
                'size_kib': v.size_kib
            } for v in snap.vds],
            'uuid': snap.uuid,
            'snapshots': [{
                'snapshot_name': snap.name,
                'node_name': n,
                'create_timestamp': snap.created,
                'flags': ['SUCCESSFUL'],
                'uuid': str(uuid.uuid5(uuid.NAMESPACE_OID, snap.uuid + n))
            } for n in snap.nodes]
        }

    def snapshots(self, rds=(), nodes=()):
        found = self.records.definitions_for(rds, nodes, 'snapshot_nodes')
        nodes = [n.lower() for n in nodes]
        out = []
        for rd in found:
            rd = self.records.typed(rec.RDS, rd)
            for snap in sorted(rd.snapshots.values(),
                               key=lambda s: s.created):
                if nodes and not any(n.lower() in nodes
                                     for n in snap.nodes):
                    continue
                out.append(self.snapshot_view(rd, snap))
        return out

    def snapshot(self, rd_name, snap_name):
        rd = self.records.load(rec.RDS, rd_name)
        return self.snapshot_view(rd, self._snap(rd, snap_name))

    def _take_snapshot(self, rd, name, nodes):
        fields.check_name(name, 'snapshot', 'snapshot')
        if rd.snapshot(name) is not None:
            raise outcomes.exists('snapshot',
                                  "Snapshot '%s' of '%s'" % (name, rd.name))
        diskful = {n: rd.resources[n] for n in rd.diskful()}
        if not diskful:
            raise outcomes.refused(
                'no_nodes', "Resource '%s' has no "
                "diskful replica to snapshot." % rd.name, obj='snapshot',
                op='create')
        chosen = [self.records.load(rec.NODES, n).name
                  for n in nodes] if nodes else sorted(diskful)
        for node_name in chosen:
            rsc = diskful.get(node_name)
            if rsc is None:
                raise outcomes.not_found(
                    'rsc',
                    "Resource '%s' on node '%s'" % (rd.name, node_name))
            kind = self.records.load(rec.NODES, node_name).pools[
                rsc.pool].provider_kind
            if not rec.PROVIDERS[kind][1]:
                raise outcomes.refused(
                    'no_snapshots', "Storage "
                    "pool '%s' (%s) on '%s' does not support "
                    "snapshots." % (rsc.pool, kind, node_name),
                    obj='snapshot', op='create')
        vds = []
        for vd in rd.vds:
            frozen = vd.layer
            vd.layer = self.engine.freeze(frozen)
            vds.append(models.SnapshotVolume(
                volume_number=vd.volume_number, size_kib=vd.size_kib,
                layer=frozen))
        rd.snapshots[name] = models.Snapshot(
            name=name, nodes=chosen,
            pools={n: diskful[n].pool for n in chosen},
            uuid=str(uuid.uuid4()), created=models.now_ms(), vds=vds,
            rd_props=dict(rd.props))
        return outcomes.report(
            'ok', 'created', "New snapshot '%s' of resource "
            "'%s' successfully created." % (name, rd.name), obj='snapshot',
            op='create', refs={
                'RscDfn': rd.name,
                'Snapshot': name
            })

    def create_snapshot(self, rd_name, body):
        with self.store.transaction():
            rd = self.records.load(rec.RDS, rd_name, op='create')
            entry = self._take_snapshot(rd, body.get('name'),
                                        fields.strings(body, 'nodes', rd_name))
            self.records.save(rd)
        return [entry]

    def create_multi_snapshot(self, body):
        items = body.get('snapshots')
        if not isinstance(items, list) or not items:
            raise outcomes.invalid('snapshots must be a non-empty list')
        entries = []
        with self.store.transaction():
            for item in items:
                if not isinstance(item, dict):
                    raise outcomes.invalid('each snapshot must be an object')
                rd = self.records.load(rec.RDS, item.get('resource_name'),
                                       op='create')
                entries.append(
                    self._take_snapshot(
                        rd, item.get('name'),
                        fields.strings(item, 'nodes', rd.name)))
                self.records.save(rd)
        return entries

    def delete_snapshot(self, rd_name, snap_name):
        with self.store.transaction():
            rd = self.records.load_found(rec.RDS, rd_name)
            snap = None if rd is None else rd.snapshot(snap_name)
            if snap is None:
                return [
                    outcomes.report(
                        'warn', 'not_found', "Snapshot '%s' "
                        "of resource '%s' not found." % (snap_name, rd_name),
                        obj='snapshot', op='delete')
                ]
            for vd in snap.vds:
                self.engine.release(vd.layer)
            del rd.snapshots[snap.name]
            self.records.save(rd)
        return [
            outcomes.report(
                'ok', 'deleted', "Snapshot '%s' of resource '%s' "
                "deleted." % (snap.name, rd.name), obj='snapshot',
                op='delete')
        ]

    def _snap(self, rd, name):
        snap = rd.snapshot(name)
        if snap is None:
            raise outcomes.not_found(
                'snapshot', "Snapshot '%s' of '%s'" % (name, rd.name))
        return snap

    def _restore_volumes(self, target, snap):
        """Give ``target`` a copy of each volume of the snapshot."""
        for sv in snap.vds:
            self.definitions.add_vd(
                target, sv.volume_number, sv.size_kib,
                layer=self.engine.new_layer(parent=sv.layer, dedup=True))

    def restore_vds(self, rd_name, snap_name, body):
        with self.store.transaction():
            snap = self._snap(self.records.load(rec.RDS, rd_name,
                                                op='create'), snap_name)
            target = self.records.load(rec.RDS, str(body.get('to_resource')),
                                       op='create')
            if target.vds:
                raise outcomes.exists(
                    'vlm_dfn', "Volume definitions of '%s'" % target.name)
            self._restore_volumes(target, snap)
            self.records.save(target)
        return [
            outcomes.report(
                'ok', 'created', "Volume definitions of '%s' "
                "restored from snapshot '%s'." % (target.name, snap_name),
                obj='vlm_dfn', op='create', refs={'RscDfn': target.name})
        ]

    def restore_resources(self, rd_name, snap_name, body):
        with self.store.transaction():
            snap = self._snap(self.records.load(rec.RDS, rd_name,
                                                op='create'), snap_name)
            target = self.records.load(rec.RDS, str(body.get('to_resource')),
                                       op='create')
            if target.resources:
                raise outcomes.refused(
                    'exists', 'Cannot restore to resource definition which '
                    'already has resources', obj='rsc', op='create',
                    refs={'RscDfn': target.name},
                    details='Resource: %s' % target.name)
            if not target.vds:
                self._restore_volumes(target, snap)
            nodes = fields.strings(body, 'nodes', rd_name) or snap.nodes
            renames = body.get('stor_pool_rename') or {}
            entries = []
            for node_name in nodes:
                node = self.records.load(rec.NODES, node_name).name
                if node not in snap.nodes:
                    raise outcomes.not_found(
                        'snapshot', "Snapshot '%s' on node "
                        "'%s'" % (snap_name, node))
                pool = snap.pools[node]
                self.placement.add_resource(target, node,
                                            renames.get(pool, pool), False)
                entries.append(
                    outcomes.report(
                        'ok', 'created', "Resource '%s' "
                        "restored on node '%s'." % (target.name, node),
                        obj='rsc', op='create'))
            self.nodes.store_placed(target)
        return entries

    def rollback(self, rd_name, snap_name):
        with self.store.transaction():
            rd = self.records.load(rec.RDS, rd_name, op='modify')
            # Any snapshot, as LINSTOR 1.33 allows; later ones stay.
            snap = self._snap(rd, snap_name)
            for vd in rd.vds:
                source = next((v for v in snap.vds
                               if v.volume_number == vd.volume_number), None)
                if source is None:
                    continue
                self.engine.release(vd.layer)
                vd.layer = self.engine.new_layer(parent=source.layer,
                                                 dedup=True)
                vd.size_kib = source.size_kib
            self.records.save(rd)
        return [
            outcomes.report(
                'ok', 'modified', "Resource '%s' rolled back to "
                "snapshot '%s'." % (rd.name, snap_name), obj='rsc_dfn',
                op='modify')
        ]

    def clone(self, src_name, body):
        with self.store.transaction():
            src = self.records.load(rec.RDS, src_name, op='create')
            self._check_clonable(src, body)
            props = dict(src.props)
            props.update(fields.properties(body, 'override_props', src_name))
            for key in fields.strings(body, 'delete_props', src_name):
                props.pop(key, None)
            layers = fields.layers(body.get('layer_list'), src_name) or \
                list(src.layers)
            rd = self.definitions.new_rd(
                body.get('name'), body.get('external_name'),
                body.get('resource_group') or src.rg, props, layers,
                'create')
            for vd in src.vds:
                frozen = vd.layer
                vd.layer = self.engine.freeze(frozen)
                copy = self.engine.new_layer(parent=frozen, dedup=True)
                self.engine.release(frozen)
                self.definitions.add_vd(rd, vd.volume_number, vd.size_kib,
                                        dict(vd.props), vd.flags, layer=copy)
            for node_name, rsc in src.resources.items():
                if not rsc.diskless:
                    self.placement.add_resource(rd, node_name, rsc.pool,
                                                False)
            src.clones[rd.name] = 'COMPLETE'
            self.records.save(src)
            self.nodes.store_placed(rd)
        location = '/v1/resource-definitions/%s/clone/%s' % (src.name,
                                                             rd.name)
        return {
            'location': location,
            'source_name': src.name,
            'clone_name': rd.name,
            'messages': [
                outcomes.report(
                    'ok', 'created', "Clone '%s' of "
                    "'%s' started." % (rd.name, src.name), obj='rsc_dfn',
                    op='create', refs={'RscDfn': rd.name})
            ]
        }

    def _check_clonable(self, src, body):
        """LINSTOR clones only on pools that can (not FILE, FILE_THIN)."""
        for node_name, rsc in sorted(src.resources.items()):
            if rsc.diskless or not rsc.pool:
                continue
            kind = self.records.load(rec.NODES, node_name).pools[
                rsc.pool].provider_kind
            if not rec.PROVIDERS[kind][2]:
                name = str(body.get('name') or body.get('external_name') or
                           '')
                raise outcomes.refused(
                    'no_clone', 'Clone source contains unsupported storage '
                    'pools', obj='rsc_dfn', op='create',
                    refs={'RscDfn': name},
                    details='Resource definition: %s' % name)

    def clone_status(self, src_name, clone_name):
        status = self.records.load(rec.RDS, src_name).clones.get(clone_name)
        if status is None:
            raise outcomes.not_found(
                'rsc_dfn', "Clone '%s' of '%s'" % (clone_name, src_name))
        return {'status': status}

    def sync_status(self, name):
        self.records.must(rec.RDS, name)
        return {'synced_on_all': True}
