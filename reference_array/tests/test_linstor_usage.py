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


"""The usage each storage pool keeps (``linstor/usage.py``) is what the
definitions hold, summed from scratch, after any sequence of calls: the
ones that place, grow, snapshot, restore, clone, toggle and delete, and
the ones refused half-way; and a store without it has it built on open.
"""

import collections
import os
import random

import testtools

from reference_array.http import server as httpd
from reference_array.linstor import backend as backend_mod
from reference_array.linstor import models
from reference_array.linstor import records as records_mod
from reference_array.tests import test_linstor_scale as scale

RD = '/v1/resource-definitions/'
NODES = ('sat-1', 'sat-2', 'sat-3', 'client-1', scale.PROBE)
# Every pool of the fixture holds 2^40 KiB: two volumes of the larger
# sizes do not fit in a thick pool, and their placement or growth there
# is refused.
SIZES = (1024, 4096, 1 << 39, 3 << 38)


def summed(store):
    """(node, pool) -> (sorted engine layers, reserved KiB), summed over
    the stored definitions' rows as they are: each replica's pool holds
    its definition's volumes, each snapshot's pool on a node its images.
    """
    total = {}

    def add(node, pool, layers, kib):
        was_layers, was_kib = total.get((node, pool), ([], 0))
        total[(node, pool)] = (was_layers + layers, was_kib + kib)
    for rd in store.all(records_mod.RDS):
        for node, rsc in rd['resources'].items():
            if rsc.get('pool'):
                add(node, rsc['pool'], [vd['_layer'] for vd in rd['vds']],
                    sum(vd['size_kib'] for vd in rd['vds']))
        for snap in rd['snapshots'].values():
            for node in snap['nodes']:
                if snap.get('pools', {}).get(node):
                    add(node, snap['pools'][node],
                        [vd['_layer'] for vd in snap['vds']], 0)
    return {place: (sorted(layers), kib)
            for place, (layers, kib) in total.items() if layers or kib}


def written(store, engine):
    """(node, pool) -> bytes the maps of the pool's layers hold, from the
    maps (a layer held twice counted twice), for the pools that hold
    any layer; staged writes are stored first.
    """
    engine.flush()
    out = {}
    for place, (layers, _kib) in summed(store).items():
        out[place] = sum(engine.db.execute(
            'SELECT COALESCE(SUM(c.raw), 0) FROM maps m JOIN chunks c ON '
            'c.id = m.chunk WHERE m.layer = ?', (layer,)).fetchone()[0]
            for layer in layers)
    return out


class Mutations(object):
    """Random LINSTOR calls a driver and an operator make, with the
    answers the array gives (refusals included).
    """

    def __init__(self, ls, seed):
        self.ls = ls
        self.rng = random.Random(seed)
        self.names = []
        self.snaps = {}

    def call(self, method, path, body=None):
        try:
            status, _payload = self.ls.api.route(method, path, [], body)
        except httpd.HTTPError as exc:
            return exc.status
        return status

    def step(self):
        calls = [self.create]
        if self.names:
            calls += [self.volume, self.resize, self.delete_volume,
                      self.resource, self.autoplace, self.delete_resource,
                      self.toggle, self.snapshot, self.delete_snapshot,
                      self.restore, self.clone, self.delete, self.write,
                      self.write, self.unmap]
        return self.rng.choice(calls)()

    def _layer(self):
        """An engine layer of a definition's volume, or None."""
        row = self.ls.backend.records.find(records_mod.RDS, self._rd())
        vds = row['vds'] if row else []
        return self.rng.choice(vds)['_layer'] if vds else None

    def write(self):
        """Data written to a volume through the engine, as an initiator
        does (whole chunks, a 4 KiB piece, zeros).
        """
        layer = self._layer()
        if layer is None:
            return 404
        self.ls.engine.write(layer, self.rng.randrange(64) * 4096,
                             self.rng.choice((
                                 os.urandom(16384), os.urandom(4096),
                                 bytes(16384), os.urandom(40960))))
        return 200

    def unmap(self):
        layer = self._layer()
        if layer is None:
            return 404
        self.ls.engine.unmap(layer, self.rng.randrange(64) * 4096,
                             self.rng.randrange(1, 32) * 4096)
        return 200

    def _rd(self):
        return self.rng.choice(self.names)

    def create(self):
        name = 'rd-%d' % len(self.names)
        self.names.append(name)
        self.call('POST', RD[:-1], {'resource_definition': {'name': name}})
        return self.volume(name)

    def volume(self, name=None):
        return self.call('POST', RD + (name or self._rd()) +
                         '/volume-definitions', {'volume_definition': {
                             'size_kib': self.rng.choice(SIZES[:2])}})

    def resize(self):
        return self.call('PUT', RD + self._rd() + '/volume-definitions/0',
                         {'size_kib': self.rng.choice(SIZES)})

    def delete_volume(self):
        return self.call('DELETE', RD + self._rd() + '/volume-definitions/%d'
                         % self.rng.randrange(2))

    def resource(self):
        pool = self.rng.choice((records_mod.DEFAULT_POOL, 'thickpool'))
        return self.call('POST', RD + self._rd() + '/resources', [{
            'resource': {'node_name': self.rng.choice(NODES),
                         'props': {'StorPoolName': pool},
                         'flags': self.rng.choice(([], ['DRBD_DISKLESS']))}}])

    def autoplace(self):
        return self.call('POST', RD + self._rd() + '/autoplace', {
            'select_filter': {'place_count': self.rng.randrange(1, 4)}})

    def delete_resource(self):
        return self.call('DELETE', RD + self._rd() + '/resources/' +
                         self.rng.choice(NODES))

    def toggle(self):
        return self.call('PUT', RD + self._rd() + '/resources/%s/toggle-disk'
                         % self.rng.choice(NODES), {
                             'operation': self.rng.choice((
                                 'INTO_DRBD_DISKFUL', 'INTO_DRBD_DISKLESS')),
                             'storage_pool': self.rng.choice((
                                 records_mod.DEFAULT_POOL, 'thickpool'))})

    def snapshot(self):
        name = self._rd()
        snap = 'snap-%d' % self.rng.randrange(3)
        self.snaps.setdefault(name, set()).add(snap)
        return self.call('POST', RD + name + '/snapshots', {'name': snap})

    def delete_snapshot(self):
        name = self._rd()
        return self.call('DELETE', RD + name + '/snapshots/snap-%d'
                         % self.rng.randrange(3))

    def restore(self):
        name = self._rd()
        target = 'rd-%d' % len(self.names)
        self.names.append(target)
        self.call('POST', RD[:-1], {'resource_definition': {'name': target}})
        snap = 'snap-%d' % self.rng.randrange(3)
        self.call('POST', RD + name + '/snapshot-restore-volume-definition/'
                  + snap, {'to_resource': target})
        return self.call('POST', RD + name + '/snapshot-restore-resource/' +
                         snap, {'to_resource': target})

    def clone(self):
        target = 'rd-%d' % len(self.names)
        self.names.append(target)
        return self.call('POST', RD + self._rd() + '/clone', {'name': target})

    def delete(self):
        return self.call('DELETE', RD + self._rd())


class PoolUsageTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.ls = self.useFixture(scale.InProcessLinstor())
        self.usage = self.ls.backend.records.usage

    def kept_written(self):
        """(node, pool) -> the bytes its engine account holds, for the
        pools ``summed`` names.
        """
        return {place: self.usage.of(*place)[0]
                for place in summed(self.ls.store)}

    def test_the_kept_usage_is_the_sum_after_every_call(self):
        for seed in range(3):
            mutations = Mutations(self.ls, seed)
            statuses = set()
            for number in range(120):
                statuses.add(mutations.step())
                self.assertEqual(summed(self.ls.store),
                                 self.usage.maintained(),
                                 'seed %d, call %d' % (seed, number))
                self.assertEqual(written(self.ls.store, self.ls.engine),
                                 self.kept_written(),
                                 'seed %d, call %d' % (seed, number))
            # Placed, refused and not found: the sequence met each.
            self.assertTrue({200, 201} & statuses, statuses)
            self.assertTrue({400, 404, 409, 500} & statuses, statuses)
        found = summed(self.ls.store)
        self.assertTrue(any(kib for _layers, kib in found.values()))
        self.assertTrue(any(written(self.ls.store,
                                    self.ls.engine).values()))
        snapped = [models.ResourceDefinition.from_row(rd).snapshots
                   for rd in self.ls.store.all(records_mod.RDS)]
        self.assertTrue(any(snapped))

    def _mutated(self, seed):
        """What the pools hold after 60 random calls."""
        mutations = Mutations(self.ls, seed)
        for _ in range(60):
            mutations.step()
        kept = self.usage.maintained()
        self.assertNotEqual({}, kept)
        return kept

    def _reopened(self, kept):
        """The dialect opened again over the store, with ``kept`` as what
        the pools hold afterwards; the engine's accounts are dropped
        first (a store from before them).
        """
        store = self.ls.store
        with store.transaction():
            store.connection.execute('DELETE FROM account_layers')
            store.connection.execute(
                "DELETE FROM kept_totals WHERE name LIKE 'account:%'")
        backend_mod.LinstorBackend(store, self.ls.engine,
                                   records_mod.default_nodes('client-1'),
                                   1 << 40)
        self.assertEqual(kept, self.usage.maintained())
        self.assertEqual(written(store, self.ls.engine), self.kept_written())

    def test_a_store_without_the_usage_has_it_built_on_open(self):
        kept = self._mutated(7)
        store = self.ls.store
        with store.transaction():
            for row in store.all(models.PoolUsage.KIND):
                store.delete(models.PoolUsage.KIND, row['id'])
        self._reopened(kept)
        pools = {models.PoolUsage.name_of(node.name, pool)
                 for node in self.ls.backend.records.nodes()
                 for pool in node.pools}
        self.assertEqual(pools, {row['name'] for row in store.all(
            models.PoolUsage.KIND)})

    def test_rows_that_listed_their_layers_hand_them_to_the_accounts(self):
        kept = self._mutated(11)
        # The rows as stored before the engine kept accounts: each lists
        # its pool's layers.
        store = self.ls.store
        with store.transaction():
            for row in store.all(models.PoolUsage.KIND):
                usage = models.PoolUsage.from_row(row)
                layers = kept.get((usage.node, usage.pool), ([], 0))[0]
                usage.layers = {str(k): n for k, n in sorted(
                    collections.Counter(layers).items())}
                store.put(models.PoolUsage.KIND, usage.id, usage.to_row(),
                          keys=models.keys_of(usage))
        self._reopened(kept)
        # Kept once: the rows no longer list them.
        self.assertEqual([], [row['name'] for row in store.all(
            models.PoolUsage.KIND) if models.PoolUsage.from_row(row).layers])
