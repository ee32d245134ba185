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

"""LINSTOR objects as rows of the store, found by key: by name (any
case), a definition by node or by resource group.

Resource definitions keep their volume definitions, resources (one per
node) and snapshots in one stored object, so every call changes one
record inside one transaction, and a refused call leaves nothing behind.
Every row is checked against its model (``models``) when it is stored,
and keyed by it.
"""

from reference_array.linstor import models
from reference_array.linstor import outcomes
from reference_array.linstor import usage as usage_mod

NODES, RGS, RDS, CTRL = (models.Node.KIND, models.ResourceGroup.KIND,
                         models.ResourceDefinition.KIND,
                         models.Controller.KIND)
DEFAULT_RG = 'DfltRscGrp'
DEFAULT_POOL = 'DfltStorPool'
DISKLESS_POOL = 'DfltDisklessStorPool'
MINOR_BASE = 1000
PORT_BASE = 7000
DEFAULT_PLACE_COUNT = 2
THIN_RATIO = 20.0
INT64_MAX = 2**63 - 1
# LINSTOR's ranges: volume numbers, DRBD minors, TCP ports, DRBD peers.
VOLUME_NR_MAX = 65534
MINOR_NR_MAX = 2**20 - 1
PORT_MIN, PORT_MAX = 1, 65535
DRBD_MAX_PEERS = 31
DEFAULT_PEER_SLOTS = models.DEFAULT_PEER_SLOTS
# A satellite cannot make a volume whose size in bytes overflows a signed
# 64-bit integer (truncate, lvresize and the kernel all refuse it).
SATELLITE_MAX_KIB = INT64_MAX // 1024
PROVIDERS = {
    # kind: (thin, snapshots, clone)
    'LVM': (False, False, True),
    'LVM_THIN': (True, True, True),
    'ZFS': (False, True, True),
    'ZFS_THIN': (True, True, True),
    'FILE': (False, True, False),
    'FILE_THIN': (True, True, False),
    'DISKLESS': (False, False, False),
}
DISKLESS_FLAGS = ('DISKLESS', 'DRBD_DISKLESS')


def default_nodes(hostname):
    """Three diskful satellites and this machine as a diskless client."""
    pools = {
        DEFAULT_POOL: 'LVM_THIN',
        'thickpool': 'LVM',
        DISKLESS_POOL: 'DISKLESS'
    }
    nodes = [{
        'name': 'sat-%d' % n,
        'pools': dict(pools),
        'props': {
            'Aux/zone': 'zone-%d' % n
        }
    } for n in (1, 2, 3)]
    nodes.append({
        'name': hostname,
        'pools': {
            DISKLESS_POOL: 'DISKLESS'
        },
        'props': {}
    })
    return nodes


class Records(object):

    def __init__(self, store, engine):
        self.store = store
        # What each node's storage pool holds, moved by every change of a
        # definition stored through ``put`` and ``delete``.
        self.usage = usage_mod.Usage(store, engine)

    def find(self, kind, name):
        # Names are ASCII; upper-casing anything else may change its
        # length ('ß' -> 'SS') and find another name.
        if not isinstance(name, str) or not name.isascii():
            return None
        return self.store.first(kind, 'name.folded', name.upper())

    def find_definition(self, name):
        return self.find(RDS, name)

    def definitions_on(self, node):
        """Definitions with a resource on ``node`` (its exact name)."""
        return self.store.find(RDS, 'resources.key', node)

    def definitions_holding(self, node):
        """Definitions with a resource or a snapshot on ``node``."""
        found = {rd['id']: rd for field in ('resources.key', 'snapshot_nodes')
                 for rd in self.store.find(RDS, field, node)}
        return [found[key] for key in sorted(found)]

    def definitions_in(self, field, nodes):
        """Definitions whose ``field`` key (``resources.key``,
        ``snapshot_nodes``) is one of the nodes named (any case), by id.
        """
        names = [node['name'] for node in self.named(NODES, nodes)]
        return self.store.find_in(RDS, field, names)

    def definitions_for(self, names, nodes, field):
        """Definitions named (any case), else those whose ``field`` key
        is one of ``nodes``, else all, by id: what a listing filtered by
        definition or node reads.
        """
        if names:
            return self.named(RDS, names)
        if nodes:
            return self.definitions_in(field, nodes)
        return self.named(RDS, ())

    @staticmethod
    def typed(kind, obj):
        """The model of a stored object of ``kind``."""
        return models.BY_KIND[kind].from_row(obj)

    def nodes(self):
        """Every node, as models: what placement chooses among."""
        return self.typed_named(NODES, ())

    def typed_named(self, kind, names):
        """``named``, as models."""
        return [self.typed(kind, obj) for obj in self.named(kind, names)]

    def load(self, kind, name, op=None):
        """The model of the object of ``kind`` named ``name`` (any case);
        refused (not found) if there is none.
        """
        return self.typed(kind, self.must(kind, name, op))

    def load_found(self, kind, name):
        """The model of the object named ``name``, or None."""
        found = self.find(kind, name)
        return None if found is None else self.typed(kind, found)

    def save(self, obj):
        """Store the model ``obj`` (a new one gets its id)."""
        row = obj.to_row(compact=True)
        if not obj.id:
            del row['id']
        row = self.put(obj.KIND, row)
        obj.id = row['id']
        return obj

    def put(self, kind, obj):
        """Store ``obj``, refused unless its model reads it."""
        with self.store.transaction():
            before = None
            if 'id' not in obj:
                obj['id'] = self.store.next_id(kind)
            elif kind == RDS:
                before = self.store.get(kind, obj['id'])
            typed = self.typed(kind, obj)
            self.store.put(kind, obj['id'], obj, keys=models.keys_of(typed),
                           obj=typed)
            if kind == RDS:
                self.usage.changed(before, obj)
        return obj

    def delete(self, kind, obj):
        """Remove the stored object ``obj`` (a row or a model)."""
        obj_id = obj.id if isinstance(obj, models.model.Model) else obj['id']
        with self.store.transaction():
            before = self.store.get(kind, obj_id) if kind == RDS else None
            self.store.delete(kind, obj_id)
            if kind == RDS:
                self.usage.changed(before, None)

    _KINDS = {
        NODES: ('node', 'Node', 'Node'),
        RDS: ('rsc_dfn', 'Resource definition', 'RscDfn'),
        RGS: ('rsc_grp', 'Resource group', 'RscGrp')
    }

    def must(self, kind, name, op=None):
        found = self.find(kind, name)
        if found is None:
            obj, what, ref = self._KINDS[kind]
            raise outcomes.not_found(obj, "%s '%s'" % (what, name), op=op,
                                     refs={ref: name})
        return found

    def named(self, kind, names):
        """Objects of ``kind`` (all, or those named; any case), by id."""
        if not names:
            return self.store.all(kind)
        found = {}
        for name in names:
            obj = self.find(kind, name)
            if obj is not None:
                found[obj['id']] = obj
        return [found[key] for key in sorted(found)]
