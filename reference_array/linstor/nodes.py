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

"""LINSTOR nodes, their storage pools and capacity, and the
controller's properties.

Nodes and storage pools are seeded from the array's config. Diskful
replicas of a volume share one engine layer: they hold the same bytes,
and each node's pool is charged for them.
"""

import uuid

from reference_array.linstor import fields
from reference_array.linstor import models
from reference_array.linstor import outcomes
from reference_array.linstor import records as rec


def _pool(kind, props):
    return models.StoragePool(provider_kind=kind, uuid=str(uuid.uuid4()),
                              props=props)


class Nodes(object):

    def __init__(self, records, engine, pool_kib):
        self.records = records
        self.engine = engine
        self.pool_kib = pool_kib
        self.store = records.store

    def seed(self, nodes):
        with self.store.transaction():
            for spec in nodes:
                if self.records.find(rec.NODES, spec['name']) is None:
                    self.records.save(models.Node(
                        name=spec['name'],
                        props=dict(spec.get('props') or {}),
                        uuid=str(uuid.uuid4()),
                        pools={name: _pool(kind, {} if kind == 'DISKLESS'
                                           else {'StorDriver/StorPoolName':
                                                 'vg-%s' % name.lower()})
                               for name, kind in spec['pools'].items()}))
            if self.records.find(rec.RGS, rec.DEFAULT_RG) is None:
                self.records.save(models.ResourceGroup(
                    name=rec.DEFAULT_RG, uuid=str(uuid.uuid4())))
            if self.store.get(rec.CTRL, 1) is None:
                self.records.save(models.Controller(id=1))
            self.records.usage.open(self.records.nodes())

    def pool_usage(self, node, pool_name):
        """(used KiB, reserved KiB) of one node's pool (``node``: a
        ``models.Node``).

        Used is what the pool's free space lacks: the volumes' sizes in a
        thick pool; in a thin one, the bytes written into its layers (a
        block a snapshot and its volume share once: one row, whatever the
        pool holds) reduced as the array reduces all it stores (every
        pool shares one deduplicating, compressing store, so a pool's
        share of it is its part of what the store holds). Reserved is
        what
        LINSTOR counts against a thin pool's oversubscription: the sizes
        of its volumes.
        """
        thin = rec.PROVIDERS[node.pools[pool_name].provider_kind][0]
        written, fat = self.records.usage.of(node.name, pool_name)
        if not thin:
            return fat, fat
        totals = self.engine.totals()
        stored = (written * totals['physical'] // totals['logical']
                  if totals['logical'] else 0)
        return -(-stored // 1024), fat

    def room(self, node, pool_name):
        """(free KiB, the largest new volume KiB) of one node's pool.

        LINSTOR's rule for thin pools: a new volume may be as large as the
        smaller of the free space times the oversubscription ratio and
        the capacity times the ratio less the sizes already placed there.
        Resizes are not held to it.
        """
        kind = node.pools[pool_name].provider_kind
        used, reserved = self.pool_usage(node, pool_name)
        free = max(self.pool_kib - used, 0)
        if not rec.PROVIDERS[kind][0]:
            return free, free
        return free, max(min(int(free * rec.THIN_RATIO),
                             int(self.pool_kib * rec.THIN_RATIO) - reserved),
                         0)

    # -- wire forms of ``models.Node`` and its storage pools ----------------
    def _pool_view(self, node, name):
        pool = node.pools[name]
        kind = pool.provider_kind
        thin, snaps, _clone = rec.PROVIDERS[kind]
        view = {
            'storage_pool_name': name,
            'node_name': node.name,
            'provider_kind': kind,
            'props': dict(pool.props),
            'static_traits': {
                'Provisioning': 'Thin' if thin else 'Fat',
                'SupportsSnapshots': str(snaps).lower()
            },
            'free_space_mgr_name': '%s;%s' % (node.name, name),
            'uuid': pool.uuid,
            'reports': [],
            'supports_snapshots': snaps,
            'external_locking': False
        }
        if kind == 'DISKLESS':
            view['free_capacity'] = view['total_capacity'] = rec.INT64_MAX
        else:
            used, _reserved = self.pool_usage(node, name)
            total, free = self.engine.bounded(self.pool_kib * 1024,
                                              used * 1024)
            view['total_capacity'] = total // 1024
            view['free_capacity'] = free // 1024
        return view

    def known(self, names):
        """``names``, refused if LINSTOR has no node of one of them.

        A view of resources or storage pools asks each node named for
        its space before it answers, loading it by name: a node it does
        not know is 404 (``outcomes.unknown_node``). The snapshot view
        does not load them.
        """
        for name in names:
            if self.records.find(rec.NODES, name) is None:
                raise outcomes.unknown_node(name)
        return names

    def storage_pools(self, nodes=(), pools=()):
        out = []
        for node in self.records.typed_named(rec.NODES, nodes):
            for name in sorted(node.pools):
                if pools and name.lower() not in [p.lower() for p in pools]:
                    continue
                out.append(self._pool_view(node, name))
        return out

    def pool_definitions(self):
        names = sorted({p for n in self.records.typed_named(rec.NODES, ())
                        for p in n.pools})
        return [{'storage_pool_name': n, 'props': {}} for n in names]

    def node_view(self, node):
        kinds = sorted({p.provider_kind for p in node.pools.values()})
        return {
            'name': node.name,
            'type': 'Satellite',
            'flags': list(node.flags),
            'props': dict(node.props),
            'net_interfaces': [{
                'name': 'default',
                'address': '127.0.0.1',
                'satellite_port': 3366,
                'satellite_encryption_type': 'PLAIN',
                'is_active': True
            }],
            'connection_status': 'ONLINE',
            'uuid': node.uuid,
            'storage_providers': kinds,
            'resource_layers': ['DRBD', 'STORAGE'],
            'unsupported_providers': {},
            'unsupported_layers': {}
        }

    def nodes(self, names=()):
        return [
            self.node_view(n)
            for n in self.records.typed_named(rec.NODES, names)
        ]

    def node(self, name):
        return self.node_view(self.records.load(rec.NODES, name))

    def node_flag(self, name, action):
        with self.store.transaction():
            node = self.records.load(rec.NODES, name)
            if action == 'evacuate':
                node.evacuate()
            else:
                node.restore()
            self.records.save(node)
        return [
            outcomes.report(
                'ok', 'modified', "Node '%s' %s." %
                (name, 'evacuating' if action == 'evacuate' else 'restored'),
                obj='node', op='modify', refs={'Node': name})
        ]

    def create_pool(self, node_name, body):
        """``POST /v1/nodes/{node}/storage-pools``: a pool of a known kind.

        Its space is the node's, as every pool here has (``pool_kib``).
        """
        name = fields.check_name(body.get('storage_pool_name'), 'stor_pool',
                                 'storage pool')
        kind = str(body.get('provider_kind') or '')
        if kind not in rec.PROVIDERS:
            raise outcomes.invalid('Unknown provider kind %r' % kind,
                                   obj='stor_pool', op='create')
        props = fields.properties(body, 'props', 'stor_pool')
        with self.store.transaction():
            node = self.records.load(rec.NODES, node_name, 'create')
            if any(p.lower() == name.lower() for p in node.pools):
                raise outcomes.exists('stor_pool', "Storage pool '%s' on "
                                      "node '%s'" % (name, node.name))
            node.pools[name] = _pool(kind, props)
            self.records.save(node)
            self.records.usage.add_pool(node.name, name)
        return [outcomes.report(
            'ok', 'created', "New storage pool '%s' on node '%s' registered."
            % (name, node.name), obj='stor_pool', op='create',
            refs={'Node': node.name, 'StorPool': name})]

    def _controller(self):
        return self.records.typed(rec.CTRL, self.store.get(rec.CTRL, 1))

    def controller_props(self):
        return dict(self._controller().props)

    def set_controller_props(self, body):
        with self.store.transaction():
            ctrl = self._controller()
            fields.apply_props(ctrl.props, body, 'controller')
            self.records.save(ctrl)
        return [
            outcomes.report('ok', 'modified', 'Controller properties '
                            'applied.', obj='ctrl_conf', op='modify')
        ]

    def delete_controller_prop(self, key):
        return self.set_controller_props({'delete_props': [key]})

    def store_placed(self, rd, grown_kib=None):
        """Store the definition ``rd``, refused (and with it the
        transaction it is stored in) unless its replicas' thick pools hold
        their volumes.

        ``grown_kib``: the growth of a volume definition being resized,
        refused as LINSTOR refuses it (FAIL_NOT_ENOUGH_FREE_SPACE on the
        volume definition, naming the pools short of space).
        """
        if grown_kib is None:
            # A placement is held to the pools as they stand before it
            # (what was placed there already must fit).
            self._check_space(rd, grown_kib)
            self.records.save(rd)
        else:
            # A growth is held to the pools with it counted.
            self.records.save(rd)
            self._check_space(rd, grown_kib)

    def _check_space(self, rd, grown_kib):
        """Thick pools must hold every volume of their replicas: the
        pools' usage as stored.
        """
        need = sum(vd.size_kib for vd in rd.vds)
        short = []
        for node_name, rsc in sorted(rd.resources.items()):
            pool = rsc.pool
            if not pool:
                continue
            node = self.records.load(rec.NODES, node_name)
            if rec.PROVIDERS[node.pools[pool].provider_kind][0]:
                continue
            used, _reserved = self.pool_usage(node, pool)
            if used > self.pool_kib:
                short.append('Node: %s, StorPool: %s' % (node_name, pool))
        if short and grown_kib is not None:
            raise outcomes.refused(
                'no_space', 'Cannot grow the volume definition by %dKiB, as '
                'the following storage pool do not have enough free '
                'space:\n%s' % (grown_kib, '\n'.join(short)),
                obj='vlm_dfn', op='modify', refs={'RscDfn': rd.name})
        if short:
            raise outcomes.refused(
                'no_space', 'Not enough free space in %s for %d KiB' % (
                    ', '.join(short), need), obj='rsc', op='create')
