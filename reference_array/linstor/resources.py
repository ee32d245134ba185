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

"""LINSTOR resources: one per node of a definition, and their views."""

import uuid

from reference_array.linstor import fields
from reference_array.linstor import outcomes
from reference_array.linstor import records as rec


class Resources(object):

    def __init__(self, records, engine, nodes, placement):
        self.records = records
        self.engine = engine
        self.nodes = nodes
        self.placement = placement
        self.store = records.store

    def _device_path(self, rd, vd, rsc_node):
        if 'DRBD' in rd.layers:
            return '/dev/drbd%d' % vd.minor
        pool = rd.resources[rsc_node].pool or rec.DEFAULT_POOL
        return '/dev/vg-%s/%s_%05d' % (pool.lower(), rd.name,
                                       vd.volume_number)

    # -- wire forms of a ``models.ResourceDefinition``'s resources ----------
    def resource_view(self, rd, node_name, with_volumes=True):
        rsc = rd.resources[node_name]
        flags = list(rec.DISKLESS_FLAGS) if rsc.diskless else []
        drbd = 'DRBD' in rd.layers
        layer = {'type': rd.layers[0], 'children': []}
        if drbd:
            layer['drbd'] = {
                'node_id': rsc.node_id,
                'peer_slots': rd.peer_slots,
                'al_stripes': 1,
                'al_size': 32,
                'flags': [],
                'drbd_volumes': [{
                    'device_path': '/dev/drbd%d' % vd.minor,
                    'allocated_size_kib': vd.usable(),
                    'usable_size_kib': vd.usable(),
                    'disk_state': 'Diskless' if rsc.diskless else 'UpToDate'
                } for vd in rd.vds],
                'promotion_score': 0,
                'may_promote': False
            }
        view = {
            'name': rd.name,
            'node_name': node_name,
            'props': dict(rsc.props),
            'flags': flags,
            'layer_object': layer,
            'state': {
                'in_use': False
            },
            'uuid': rsc.uuid,
            'create_timestamp': rsc.created
        }
        if not with_volumes:
            return view
        volumes = []
        pool = rsc.pool
        kind = 'DISKLESS' if rsc.diskless else self.records.load(
            rec.NODES, node_name).pools[pool].provider_kind
        for vd in rd.vds:
            if rsc.diskless:
                allocated = 0
            elif rec.PROVIDERS[kind][0]:
                allocated = -(-self.engine.layer_written(vd.layer) // 1024)
            else:
                allocated = vd.usable()
            path = self._device_path(rd, vd, node_name)
            volume = {
                'volume_number': vd.volume_number,
                'storage_pool_name': pool or rec.DISKLESS_POOL,
                'provider_kind': kind,
                'device_path': path,
                'allocated_size_kib': allocated,
                'props': {
                    'Satellite/Device/Symlinks/0': '/dev/drbd/by-res/%s/%d' %
                    (rd.name, vd.volume_number) if drbd else path
                },
                'flags': [f for f in vd.flags if f == 'RESIZE'],
                'state': {
                    'disk_state': 'Diskless' if rsc.diskless else 'UpToDate'
                },
                'layer_data_list': self._volume_layers(rd, vd, rsc, path,
                                                       allocated),
                'uuid': str(
                    uuid.uuid5(
                        uuid.NAMESPACE_OID, '%s/%s/%d' %
                        (rsc.uuid, node_name, vd.volume_number))),
                'reports': []
            }
            if drbd:
                # LINSTOR 1.33 reports a volume's usable size from its DRBD
                # layer only: a storage-only volume has none here.
                volume['usable_size_kib'] = vd.usable()
            volumes.append(volume)
        view['volumes'] = volumes
        return view

    @staticmethod
    def _volume_layers(rd, vd, rsc, path, allocated):
        state = 'Diskless' if rsc.diskless else 'UpToDate'
        out = []
        for layer in rd.layers:
            data = {
                'device_path': path,
                'allocated_size_kib': allocated,
                'usable_size_kib': vd.usable(),
                'disk_state': state
            }
            if layer == 'DRBD':
                data.update(
                    drbd_volume_definition={
                        'resource_name_suffix': '',
                        'volume_number': vd.volume_number,
                        'minor_number': vd.minor
                    }, device_path='/dev/drbd%d' % vd.minor,
                    meta_disk='internal')
                if not rsc.diskless:
                    data['backing_device'] = '/dev/vg-%s/%s_%05d' % (
                        (rsc.pool
                         or '').lower(), rd.name, vd.volume_number)
            elif layer == 'STORAGE' and 'DRBD' in rd.layers:
                data['device_path'] = '/dev/vg-%s/%s_%05d' % (
                    (rsc.pool
                     or 'diskless').lower(), rd.name, vd.volume_number)
            out.append({'type': layer, 'data': data})
        return out

    def resources_view(self, nodes=(), rds=(), pools=()):
        found = self.records.definitions_for(rds, nodes, 'resources.key')
        nodes = [n.lower() for n in nodes]
        out = []
        for rd in found:
            rd = self.records.typed(rec.RDS, rd)
            for node_name in sorted(rd.resources):
                rsc = rd.resources[node_name]
                if nodes and node_name.lower() not in nodes:
                    continue
                if pools and (rsc.pool or rec.DISKLESS_POOL) not in pools:
                    continue
                out.append(self.resource_view(rd, node_name))
        return out

    def resource(self, rd_name, node_name):
        rd = self.records.load(rec.RDS, rd_name)
        node = self.records.load(rec.NODES, node_name).name
        if node not in rd.resources:
            raise outcomes.not_found(
                'rsc', "Resource '%s' on node '%s'" % (rd_name, node_name))
        return self.resource_view(rd, node)

    def _default_pool(self, rd):
        pool = rd.props.get('StorPoolName')
        if pool:
            return pool
        pools = self.records.load(
            rec.RGS, rd.rg).select_filter.get('storage_pool_list')
        return pools[0] if pools else rec.DEFAULT_POOL

    def create_resources(self, name, body):
        if isinstance(body, dict):
            body = [body]
        if not isinstance(body, list):
            raise outcomes.invalid('the body must be a list of resources')
        entries = []
        with self.store.transaction():
            rd = self.records.load(rec.RDS, name, op='create')
            for item in body:
                spec = item.get('resource') if isinstance(item, dict) \
                    else None
                if not isinstance(spec, dict):
                    raise outcomes.invalid('each entry needs a "resource" '
                                           'object')
                node = self.records.load(rec.NODES, spec.get('node_name')).name
                if node in rd.resources:
                    raise outcomes.exists(
                        'rsc',
                        "Resource '%s' on node '%s'" % (rd.name, node))
                flags = fields.strings(spec, 'flags', name)
                props = fields.properties(spec, 'props', name)
                diskless = bool(set(flags) & set(rec.DISKLESS_FLAGS)) or bool(
                    item.get('drbd_client'))
                if diskless and 'DRBD' not in rd.layers:
                    raise outcomes.refused(
                        'layer_stack', 'A diskless '
                        'resource needs the DRBD layer', obj='rsc',
                        op='create')
                pool = props.pop('StorPoolName', None) or \
                    self._default_pool(rd)
                self.placement.add_resource(rd, node, pool, diskless, props)
                if 'DISKLESS' in flags:
                    entries.append(
                        outcomes.report(
                            'warn', 'deprecated', 'The DISKLESS flag is '
                            'deprecated; DRBD_DISKLESS was used.', obj='rsc',
                            op='create'))
                entries.append(outcomes.resource_created(rd.name, node))
            self.nodes.store_placed(rd)
        return entries

    def make_available(self, name, node_name, body):
        body = body or {}
        with self.store.transaction():
            rd = self.records.load(rec.RDS, name, op='create')
            node = self.records.load(rec.NODES, node_name)
            have = rd.resources.get(node.name)
            diskful = bool(body.get('diskful'))
            if have is not None:
                if diskful and have.diskless:
                    have.diskless = False
                    have.pool = self._default_pool(rd)
                    self.nodes.store_placed(rd)
                return [
                    outcomes.report(
                        'info', 'already_deployed',
                        "Resource '%s' already available on "
                        "node '%s'." % (rd.name, node.name), obj='rsc',
                        op='create')
                ]
            pool = self._default_pool(rd)
            diskless = not diskful and 'DRBD' in rd.layers
            if not diskless and pool not in node.pools:
                raise outcomes.refused(
                    'no_pool', "Node '%s' "
                    "has no storage pool '%s' for a diskful "
                    "resource." % (node.name, pool), obj='stor_pool')
            self.placement.add_resource(rd, node.name, pool, diskless)
            self.nodes.store_placed(rd)
        return [
            outcomes.report(
                'ok', 'created', "Resource '%s' made available "
                "on node '%s'." % (rd.name, node.name), obj='rsc',
                op='create', refs={
                    'RscDfn': rd.name,
                    'Node': node.name
                })
        ]

    def _rsc(self, rd, node_name):
        """(node name, resource) of ``rd`` on a node, or not found."""
        node = self.records.load(rec.NODES, node_name).name
        rsc = rd.resources.get(node)
        if rsc is None:
            raise outcomes.not_found(
                'rsc', "Resource '%s' on node '%s'" % (rd.name, node_name))
        return node, rsc

    def modify_resource(self, name, node_name, body):
        with self.store.transaction():
            rd = self.records.load(rec.RDS, name, op='modify')
            node, rsc = self._rsc(rd, node_name)
            fields.apply_props(rsc.props, body, name)
            self.records.save(rd)
        return [
            outcomes.report(
                'ok', 'modified', "Resource '%s' on node '%s' "
                "modified." % (name, node), obj='rsc', op='modify')
        ]

    def toggle_disk(self, name, node_name, body):
        operation = str((body or {}).get('operation') or '')
        with self.store.transaction():
            rd = self.records.load(rec.RDS, name, op='modify')
            node, rsc = self._rsc(rd, node_name)
            if operation == 'INTO_DRBD_DISKFUL':
                pool = body.get('storage_pool') or self._default_pool(rd)
                found = self.records.load(rec.NODES, node).pools.get(pool)
                if found is None or found.provider_kind == 'DISKLESS':
                    raise outcomes.refused(
                        'no_pool', "Node "
                        "'%s' has no storage pool '%s' for a "
                        "disk." % (node, pool), obj='stor_pool')
                rsc.diskless = False
                rsc.pool = pool
                source = body.get('migrate_from')
                if source:
                    source = self.records.load(rec.NODES, source).name
                    if source not in rd.resources:
                        raise outcomes.not_found(
                            'rsc', "Resource '%s' on node "
                            "'%s'" % (name, source))
                    del rd.resources[source]
            elif operation in ('INTO_DRBD_DISKLESS', 'INTO_DRBD_CLIENT'):
                rsc.diskless = True
                rsc.pool = rec.DISKLESS_POOL
            else:
                raise outcomes.invalid('unknown toggle-disk operation %r' %
                                       operation)
            self.nodes.store_placed(rd)
        return [
            outcomes.report(
                'ok', 'modified', "Resource '%s' on node '%s' "
                "toggled." % (name, node), obj='rsc', op='modify')
        ]

    def delete_resource(self, name, node_name):
        with self.store.transaction():
            rd = self.records.load_found(rec.RDS, name)
            node = self.records.load_found(rec.NODES, node_name)
            key = node.name if node else node_name
            if rd is None or key not in rd.resources:
                return [
                    outcomes.report(
                        'warn', 'not_found', "Resource '%s' "
                        "on node '%s' not found." % (name, node_name),
                        obj='rsc', op='delete')
                ]
            del rd.resources[key]
            self.records.save(rd)
        return [
            outcomes.report(
                'ok', 'deleted', "Resource '%s' on node '%s' "
                "deleted." % (rd.name, key), obj='rsc', op='delete', refs={
                    'RscDfn': rd.name,
                    'Node': key
                })
        ]
