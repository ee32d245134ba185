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

"""LINSTOR objects as rows of the store, found by name (any case).

Resource definitions keep their volume definitions, resources (one per
node) and snapshots in one stored object, so every call changes one
record inside one transaction, and a refused call leaves nothing behind.
"""

import time

from reference_array.linstor import outcomes

NODES, RGS, RDS, CTRL = 'ls_nodes', 'ls_rgs', 'ls_rds', 'ls_ctrl'
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
DEFAULT_PEER_SLOTS = 7
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


def usable_kib(vd):
    """What a volume's replicas hold: its size, unless a resize failed."""
    return vd.get('usable_kib', vd['size_kib'])


def now_ms():
    return int(time.time() * 1000)


class Records(object):

    def __init__(self, store):
        self.store = store

    def find(self, kind, name):
        if not isinstance(name, str):
            return None
        return self.store.first(kind, 'name.folded', name.lower())

    def find_definition(self, name):
        return self.find(RDS, name)

    def definitions_on(self, node):
        return self.store.find(RDS, 'resources.key', node)

    def put(self, kind, obj):
        if 'id' not in obj:
            obj['id'] = self.store.next_id(kind)
        self.store.put(kind, obj['id'], obj)
        return obj

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

    def node(self, name):
        return self.must(NODES, name)

    def rd(self, name, op=None):
        return self.must(RDS, name, op)

    def rg(self, name, op=None):
        return self.must(RGS, name, op)

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
