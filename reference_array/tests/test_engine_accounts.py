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

"""Bytes written per account (``core/accounts.py``) are what the
accounts' layers hold, summed from their maps, after any sequence of
engine calls: writes (whole chunks, 4 KiB patches, zeros, duplicates),
snapshots, clones, UNMAP, patch merges and frees; and an account's total
that is off is put right when the engine opens.
"""

import collections
import os
import random

from reference_array.tests import engine_fixture

CHUNK = engine_fixture.CHUNK
SPAN = 24 * CHUNK
ACCOUNTS = ('a', 'b', 'c')


def summed(db, held):
    """account -> bytes its layers' map entries hold, from the maps."""
    out = {}
    for account, layers in held.items():
        out[account] = sum(times * db.execute(
            'SELECT COALESCE(SUM(c.raw), 0) FROM maps m JOIN chunks c ON '
            'c.id = m.chunk WHERE m.layer = ?', (layer,)).fetchone()[0]
            for layer, times in layers.items())
    return out


class Calls(object):
    """Random engine calls over volumes, snapshots and clones, with what
    each account holds, kept apart from the engine's own.
    """

    def __init__(self, engine, seed):
        self.engine = engine
        self.rng = random.Random(seed)
        self.volumes, self.snaps = [], []
        # Accounts of their own: each sequence begins with none held.
        self.held = {'%d-%s' % (seed, name): collections.Counter()
                     for name in ACCOUNTS}
        self.pieces = [os.urandom(CHUNK) for _ in range(4)]

    def step(self):
        calls = [self.create]
        if self.volumes:
            calls += [self.write, self.write, self.patch, self.zeros,
                      self.unmap, self.snapshot, self.clone, self.charge,
                      self.charge, self.merge, self.release]
        self.rng.choice(calls)()
        self.engine.flush()
        live = {layer for (layer,) in self.engine.db.execute(
            'SELECT id FROM layers')}
        for layers in self.held.values():
            for layer in set(layers) - live:
                del layers[layer]

    def _volume(self):
        return self.rng.choice(self.volumes)

    def create(self):
        self.volumes.append(self.engine.new_layer(
            dedup=self.rng.random() < 0.7))

    def write(self):
        offset = self.rng.randrange(0, SPAN - CHUNK, 512)
        length = self.rng.choice((CHUNK, 2 * CHUNK + 4096, 3 * CHUNK))
        data = b''.join(self.rng.choice(self.pieces + [os.urandom(CHUNK)])
                        for _ in range(4))[:length]
        self.engine.write(self._volume(), offset,
                          data[:min(length, SPAN - offset)])

    def patch(self):
        self.engine.write(self._volume(), self.rng.randrange(
            SPAN // 4096) * 4096, os.urandom(4096))

    def zeros(self):
        self.engine.write(self._volume(), self.rng.randrange(
            0, SPAN - CHUNK, 4096), bytes(self.rng.choice((4096, CHUNK))))

    def unmap(self):
        start = self.rng.randrange(0, SPAN, 512)
        self.engine.unmap(self._volume(), start,
                          self.rng.randrange(1, SPAN - start + 1))

    def snapshot(self):
        n = self.rng.randrange(len(self.volumes))
        frozen = self.volumes[n]
        self.volumes[n] = self.engine.freeze(frozen)
        self.snaps.append(frozen)

    def clone(self):
        if self.snaps:
            self.volumes.append(self.engine.new_layer(
                parent=self.rng.choice(self.snaps)))

    def charge(self):
        account = self.rng.choice(sorted(self.held))
        layer = self.rng.choice(self.volumes + self.snaps)
        times = self.rng.choice((1, 1, 2, -1))
        self.engine.accounts.charge(account, {layer: times})
        layers = self.held[account]
        layers[layer] = max(layers[layer] + times, 0)
        if not layers[layer]:
            del layers[layer]

    def merge(self):
        self.engine.merge_patches()

    def release(self):
        owned = self.rng.choice([self.volumes, self.snaps] if self.snaps
                                else [self.volumes])
        self.engine.release(owned.pop(self.rng.randrange(len(owned))))


class AccountsTestCase(engine_fixture.EngineTestCase):

    def written(self, accounts):
        return {account: self.engine.accounts.written(account)
                for account in accounts}

    def test_an_account_is_what_its_layers_hold_after_every_call(self):
        kinds = collections.Counter()
        for seed in range(2):
            calls = Calls(self.engine, seed)
            for number in range(150):
                calls.step()
                kinds[bool(sum(self.written(calls.held).values()))] += 1
                self.assertEqual(summed(self.engine.db, calls.held),
                                 self.written(calls.held),
                                 'seed %d, call %d' % (seed, number))
        # Accounts held data most of the time.
        self.assertGreater(kinds[True], kinds[False])

    def test_what_an_account_holds_is_one_row_to_read(self):
        costs = []
        for count in (10, 1000):
            with self.store.transaction():
                layers = [self.engine.new_layer() for _ in range(count)]
                for layer in layers[:count // 10 or 1]:
                    self.engine.write(layer, 0, os.urandom(CHUNK))
                self.engine.accounts.charge('pool-%d' % count, dict.fromkeys(
                    layers, 1))
            steps = [0]

            def step():
                steps[0] += 1
                return 0
            self.engine.db.set_progress_handler(step, 1)
            try:
                written = self.engine.accounts.written('pool-%d' % count)
            finally:
                self.engine.db.set_progress_handler(None, 1)
            self.assertEqual((count // 10 or 1) * CHUNK, written)
            costs.append(steps[0])
        self.assertEqual(costs[0], costs[1])

    def test_a_total_that_is_off_is_put_right_on_open(self):
        layer = self.engine.new_layer()
        self.engine.write(layer, 0, os.urandom(3 * CHUNK))
        self.engine.accounts.charge('a', {layer: 2})
        self.engine.flush()
        with self.store.transaction():
            self.store.connection.execute(
                "UPDATE kept_totals SET total = 7 WHERE name = 'account:a'")
        self.assertEqual(7, self.engine.accounts.written('a'))
        self.engine = self.engine_class(self.store)
        self.assertEqual(6 * CHUNK, self.engine.accounts.written('a'))

    def test_accounts_kept_in_their_own_table_move_to_the_kept_totals(self):
        layer = self.engine.new_layer()
        self.engine.write(layer, 0, os.urandom(2 * CHUNK))
        self.engine.accounts.charge('a', {layer: 1})
        self.engine.flush()
        # As a database from before the kept totals held them.
        db = self.store.connection
        with self.store.transaction():
            db.execute('CREATE TABLE accounts (name TEXT PRIMARY KEY, '
                       'written INTEGER NOT NULL DEFAULT 0)')
            db.execute("INSERT INTO accounts VALUES ('a', ?)", (2 * CHUNK,))
            db.execute("DELETE FROM kept_totals WHERE name = 'account:a'")
            db.execute('CREATE TRIGGER account_written AFTER UPDATE OF '
                       'written ON layers BEGIN UPDATE accounts SET '
                       'written = -1; END')
        self.engine = self.engine_class(self.store)
        self.assertEqual(2 * CHUNK, self.engine.accounts.written('a'))
        self.engine.write(layer, 2 * CHUNK, os.urandom(CHUNK))
        self.engine.flush()
        self.assertEqual(3 * CHUNK, self.engine.accounts.written('a'))
        self.assertEqual([], db.execute(
            "SELECT name FROM sqlite_master WHERE name IN ('accounts', "
            "'account_written')").fetchall())


NativeAccountsTestCase = engine_fixture.on_native(AccountsTestCase)
