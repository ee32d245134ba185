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

"""What each node's storage pool holds, kept as one row per pool.

A pool holds the volumes of the replicas placed in it and the images of
the snapshots taken there. Every stored change of a definition (volumes
created, resized or deleted, replicas placed or removed, snapshots taken
or deleted, the definition deleted) moves the rows of the pools it
touches by the difference between what it held before and after, inside
the change's transaction: a refused call rolls them back with it. So
placement reads one row per candidate pool whatever the number of
definitions.

A row holds the sizes placed in its pool. The pool's layers, and the
bytes they hold, are kept by the engine in an account named after the
pool (``core/accounts.py``): each change moves the account by the
layers it put in or took out, in the same transaction, and every write,
UNMAP, snapshot and free of a layer moves its bytes from then on. So a
row and an account stay the same size whatever the pool holds.

The rows and accounts are built from the definitions when the dialect
opens a store that lacks a row for any pool (a database written before
they existed); rows written before the accounts, which listed their
layers, hand them to the accounts.
"""

import collections

from reference_array.linstor import models

KIND = models.PoolUsage.KIND
RDS = models.ResourceDefinition.KIND


def held(rd):
    """(node, pool) -> (Counter of engine layers, reserved KiB) of what
    the definition ``rd`` (a model) puts in each pool.
    """
    out = {}

    def add(node, pool, layers, kib):
        layers_of, kib_of = out.get((node, pool), (collections.Counter(), 0))
        layers_of.update(layers)
        out[(node, pool)] = (layers_of, kib_of + kib)
    size = sum(vd.size_kib for vd in rd.vds)
    for node, rsc in rd.resources.items():
        if rsc.pool:
            add(node, rsc.pool, [vd.layer for vd in rd.vds], size)
    for snap in rd.snapshots.values():
        for node in snap.nodes:
            if snap.pools.get(node):
                add(node, snap.pools[node], [v.layer for v in snap.vds], 0)
    return out


def account_of(node, pool):
    """The engine account of one node's pool."""
    return 'linstor;' + models.PoolUsage.name_of(node, pool)


def _held_row(row):
    return held(models.ResourceDefinition.from_row(row)) if row else {}


class Usage(object):

    def __init__(self, store, engine):
        self.store = store
        self.engine = engine

    def _row(self, node, pool):
        name = models.PoolUsage.name_of(node, pool)
        found = self.store.first(KIND, 'name', name)
        if found is None:
            return models.PoolUsage(name=name, node=node, pool=pool)
        return models.PoolUsage.from_row(found)

    def _put(self, usage):
        if not usage.id:
            usage.id = self.store.next_id(KIND)
        self.store.put(KIND, usage.id, usage.to_row(),
                       keys=models.keys_of(usage))

    def of(self, node, pool):
        """(bytes written, reserved KiB) of one node's pool: what its
        layers hold (a layer two volumes share counted twice) and the
        sizes of its volumes.
        """
        return (self.engine.accounts.written(account_of(node, pool)),
                self._row(node, pool).reserved_kib)

    def changed(self, before, after):
        """Move the pools' rows and accounts by what a definition's change
        (its row ``before`` and ``after``, either None) put in or took
        out.
        """
        old, new = _held_row(before), _held_row(after)
        with self.store.transaction():
            for place in sorted(set(old) | set(new)):
                empty = (collections.Counter(), 0)
                old_layers, old_kib = old.get(place, empty)
                new_layers, new_kib = new.get(place, empty)
                moved = collections.Counter(new_layers)
                moved.subtract(old_layers)
                if any(moved.values()):
                    self.engine.accounts.charge(account_of(*place),
                                                dict(moved))
                if new_kib != old_kib:
                    usage = self._row(*place)
                    usage.reserved_kib += new_kib - old_kib
                    self._put(usage)

    def add_pool(self, node, pool):
        """An empty row for a new pool."""
        self._put(self._row(node, pool))

    # -- the rows from scratch ----------------------------------------------
    def from_scratch(self):
        """(node, pool) -> (sorted layers, reserved KiB), summed over every
        definition: what the rows must say (pools holding nothing left
        out).
        """
        total = {}
        for row in self.store.all(RDS):
            for place, (layers, kib) in _held_row(row).items():
                was_layers, was_kib = total.get(place, (
                    collections.Counter(), 0))
                was_layers.update(layers)
                total[place] = (was_layers, was_kib + kib)
        return {place: (sorted(layers.elements()), kib)
                for place, (layers, kib) in total.items()
                if kib or +layers}

    def maintained(self):
        """The rows and accounts, in ``from_scratch``'s form."""
        out = {}
        for row in self.store.all(KIND):
            usage = models.PoolUsage.from_row(row)
            layers = sorted(collections.Counter(self.engine.accounts.layers(
                account_of(usage.node, usage.pool))).elements())
            if layers or usage.reserved_kib:
                out[(usage.node, usage.pool)] = (layers, usage.reserved_kib)
        return out

    def open(self, nodes):
        """Build the rows and accounts unless every pool of ``nodes``
        (models) has a row; move the layers rows kept before the
        engine's accounts into them.
        """
        pools = [(n.name, p) for n in nodes for p in n.pools]
        if all(self.store.count(KIND, 'name', models.PoolUsage.name_of(
                *place)) for place in pools):
            return self._accounts()
        with self.store.transaction():
            for row in self.store.all(KIND):
                self.store.delete(KIND, row['id'])
            found = self.from_scratch()
            for node, pool in sorted(set(pools) | set(found)):
                layers, kib = found.get((node, pool), ([], 0))
                self._put(models.PoolUsage(
                    name=models.PoolUsage.name_of(node, pool), node=node,
                    pool=pool, reserved_kib=kib))
                self.engine.accounts.set_layers(
                    account_of(node, pool), collections.Counter(layers))

    def _accounts(self):
        """Rows that still list their layers (a store from before the
        engine's accounts) hand them to their pools' accounts.
        """
        with self.store.transaction():
            for row in self.store.all(KIND):
                usage = models.PoolUsage.from_row(row)
                if not usage.layers:
                    continue
                self.engine.accounts.set_layers(
                    account_of(usage.node, usage.pool),
                    {int(k): v for k, v in usage.layers.items()})
                usage.layers = {}
                self._put(usage)
