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

"""The LINSTOR objects, typed: one model per stored kind, one part per
object kept inside another's row.

A resource definition's row holds its volume definitions, its resources
(one per node) and its snapshots, so that every call changes one row in
one transaction and a refused call leaves nothing behind; a node's row
holds its storage pools, a resource group's its volume groups. Rows keep
the layout they had as plain objects (an engine layer as ``_layer``), so
a database keeps working across the change.

The store finds each kind under the keys its model gives
(``KEY_FUNCTIONS``): any object by its name in any case
(``name.folded``, upper-cased: LINSTOR compares names so, and lists
them in that order); a definition by its resource group (``rg``), by the
nodes of its resources (``resources.key``), by the nodes holding its
snapshots (``snapshot_nodes``) and by the DRBD minors it uses
(``minors.key``).
"""

import dataclasses
import time
import typing
import uuid

from reference_array.core import model
from reference_array.core import store
from reference_array.core import views as stored_views
from reference_array.linstor import views

Dict = typing.Dict
List = typing.List
Optional = typing.Optional
private = model.private
ls = dataclasses.dataclass(kw_only=True, slots=True)
# DRBD peer slots of a definition that names none.
DEFAULT_PEER_SLOTS = 7


def now_ms():
    return int(time.time() * 1000)


def _empty(kind):
    return dataclasses.field(default_factory=kind)


# -- nodes -------------------------------------------------------------------
# Fields are in the order rows have always been written in, the order of
# the wire forms built from them.
@ls
class StoragePool(model.Part):
    provider_kind: str
    uuid: str
    props: dict = _empty(dict)


@ls
class Node(model.Model):
    KIND = 'ls_nodes'
    name: str
    flags: List[str] = _empty(list)
    props: dict = _empty(dict)
    uuid: str
    pools: Dict[str, StoragePool] = _empty(dict)

    def keys(self):
        return model.Model.keys(self) + [('pools.key', p) for p in self.pools]

    def evacuate(self):
        self.flags = sorted(set(self.flags) | {'EVACUATE'})

    def restore(self):
        self.flags = [f for f in self.flags
                      if f not in ('EVACUATE', 'EVICTED')]


@ls
class Controller(model.Model):
    KIND = 'ls_ctrl'
    name: str = 'controller'
    props: dict = _empty(dict)


# -- resource groups ---------------------------------------------------------
@ls
class VolumeGroup(model.Part):
    volume_number: int
    props: dict = _empty(dict)
    flags: List[str] = _empty(list)
    uuid: str


@ls
class ResourceGroup(model.Model):
    KIND = 'ls_rgs'
    name: str
    description: str = ''
    props: dict = _empty(dict)
    peer_slots: Optional[int] = None
    # The group's autoplace filter, as the wire's select_filter.
    select_filter: dict = _empty(dict)
    uuid: str
    volume_groups: List[VolumeGroup] = _empty(list)


# -- resource definitions ----------------------------------------------------
@ls
class VolumeDefinition(model.Part):
    volume_number: int
    size_kib: int
    props: dict = _empty(dict)
    flags: List[str] = _empty(list)
    uuid: str
    minor: int
    # The engine layer holding the volume's data.
    layer: int = private(0)
    # What the replicas hold while a resize the satellites could not
    # make is pending (None: ``size_kib``).
    usable_kib: Optional[int] = None

    def usable(self):
        return self.size_kib if self.usable_kib is None else self.usable_kib

    def resize_pending(self, old_kib):
        """The replicas could not take the new size: they keep what they
        held (``old_kib``, unless a resize is pending already).
        """
        if self.usable_kib is None:
            self.usable_kib = old_kib
        if 'RESIZE' not in self.flags:
            self.flags.append('RESIZE')

    def resized(self):
        """The replicas hold the volume's size."""
        self.usable_kib = None
        self.flags = [f for f in self.flags if f != 'RESIZE']


@ls
class Resource(model.Part):
    """A definition's replica on one node (the node names it)."""
    diskless: bool
    # None: a diskless replica on a node without a diskless pool.
    pool: Optional[str]
    props: dict = _empty(dict)
    uuid: str
    node_id: int
    # ms since the epoch.
    created: int


@ls
class SnapshotVolume(model.Part):
    volume_number: int
    size_kib: int
    # The frozen image of the volume, never written.
    layer: int = private(0)


@ls
class Snapshot(model.Part):
    name: str
    nodes: List[str] = _empty(list)
    props: dict = _empty(dict)
    # node -> the storage pool its image is in.
    pools: dict = _empty(dict)
    uuid: str
    # ms since the epoch.
    created: int
    vds: List[SnapshotVolume] = _empty(list)
    # The definition's properties when the snapshot was taken.
    rd_props: dict = _empty(dict)


@ls
class ResourceDefinition(model.Model):
    KIND = 'ls_rds'
    name: str
    # The resource group's name.
    rg: str
    props: dict = _empty(dict)
    layers: List[str] = _empty(list)
    uuid: str
    port: int
    secret: str
    peer_slots: int = DEFAULT_PEER_SLOTS
    vds: List[VolumeDefinition] = _empty(list)
    # DRBD minor (text) -> volume number, so the store finds a minor in
    # use by key.
    minors: dict = _empty(dict)
    # node name -> the replica there.
    resources: Dict[str, Resource] = _empty(dict)
    snapshots: Dict[str, Snapshot] = _empty(dict)
    # clone name -> its status.
    clones: dict = _empty(dict)
    external_name: Optional[str] = None

    def keys(self):
        found = model.Model.keys(self)
        found.extend(('resources.key', n) for n in self.resources)
        found.extend(('minors.key', m) for m in self.minors)
        found.extend(('snapshot_nodes', n)
                     for s in self.snapshots.values() for n in s.nodes)
        return found

    def volume(self, number):
        """The volume definition numbered ``number``, or None."""
        return next((vd for vd in self.vds if vd.volume_number == number),
                    None)

    def add_volume(self, vd):
        self.vds.append(vd)
        self.minors[str(vd.minor)] = vd.volume_number

    def remove_volume(self, vd):
        self.vds.remove(vd)
        self.minors.pop(str(vd.minor), None)

    def diskful(self):
        """Names of the nodes holding a diskful replica, sorted."""
        return sorted(n for n, r in self.resources.items() if not r.diskless)

    def add_resource(self, node, pool, diskless, props):
        """A replica on ``node`` (its exact name), with the next free
        DRBD node id.
        """
        ids = [r.node_id for r in self.resources.values()]
        self.resources[node] = Resource(
            diskless=bool(diskless), pool=pool, props=dict(props or {}),
            uuid=str(uuid.uuid4()), node_id=max(ids + [-1]) + 1,
            created=now_ms())

    def snapshot(self, name):
        """The snapshot so named in any case (as LINSTOR), or None."""
        if not isinstance(name, str):
            return None
        found = self.snapshots.get(name)
        if found is None:
            folded = name.lower()
            found = next((s for key, s in self.snapshots.items()
                          if key.lower() == folded), None)
        return found


# -- storage pool usage -----------------------------------------------------
@ls
class PoolUsage(model.Model):
    """What one node's storage pool holds, kept up to date by every
    change of a definition (``usage``), so that placement reads one row
    per pool instead of every definition on the node.

    Named ``<node>;<pool>``, LINSTOR's free space manager name.
    """
    KIND = 'ls_pool_usage'
    name: str
    node: str
    pool: str
    # The sizes of the volumes placed in the pool: a thick pool's used
    # space, what a thin pool's oversubscription counts.
    reserved_kib: int = private(0)
    # Engine layer (text) -> how many volumes or snapshot images in the
    # pool are it, in rows stored before the engine kept them (its
    # accounts, ``usage.account_of``): moved there when the store opens.
    layers: dict = private(factory=dict)

    @staticmethod
    def name_of(node, pool):
        return '%s;%s' % (node, pool)


def keys_of(obj):
    """The keys of a stored object: its model's, and its name in any
    case.

    The name is folded to upper case, as LINSTOR's names compare
    (``GenericName``): the key also orders a page as the controller
    lists (a map sorted by the upper-cased name), where lower case
    would put ``_`` before the letters instead of after.
    """
    return set(obj.keys()) | {('name.folded', obj.name.upper())}


STORED = (Node, Controller, ResourceGroup, ResourceDefinition, PoolUsage)
BY_KIND = {m.KIND: m for m in STORED}
KEY_FUNCTIONS = {m.KIND: (lambda m: lambda row: keys_of(m.from_row(row)))(m)
                 for m in STORED}
# The views the store keeps of each definition (its wire views, with
# and without its volumes), written with its row: a page of definitions
# is their texts joined.
VIEW_FUNCTIONS = {ResourceDefinition.KIND: stored_views.Views(
    ResourceDefinition, views.stored_views, views.FORM)}
# Totals the store keeps: every stored kind's number of objects (the
# total of a page).
KEPT = tuple((m.KIND, store.COUNT) for m in STORED)
