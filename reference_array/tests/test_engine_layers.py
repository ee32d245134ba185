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

"""The engine's layers: thin, copy-on-write snapshots and clones, what
unmap and release free, and the work each costs."""

import os
import sqlite3
from unittest import mock

from reference_array.core import engine
from reference_array.tests import engine_fixture

CHUNK = engine_fixture.CHUNK


class LayersTestCase(engine_fixture.EngineTestCase):

    def test_thin_and_unaligned(self):
        vol = self.engine.new_layer()
        self.assertEqual(bytes(5000), self.engine.read(vol, 123456, 5000))
        self.assertEqual(0, self.engine.totals()['physical'])
        data = os.urandom(3 * CHUNK + 77)
        self.engine.write(vol, CHUNK - 5, data)
        self.assertEqual(data, self.engine.read(vol, CHUNK - 5, len(data)))
        self.assertEqual(bytes(CHUNK - 5), self.engine.read(vol, 0,
                                                            CHUNK - 5))

    def test_snapshot_is_copy_on_write_and_delete_frees(self):
        vol = self.engine.new_layer()
        original = os.urandom(4 * CHUNK)
        self.engine.write(vol, 0, original)
        frozen, vol = vol, self.engine.freeze(vol)
        self.engine.write(vol, CHUNK, b'\xff' * CHUNK)
        self.assertEqual(original, self.engine.read(frozen, 0, 4 * CHUNK))
        self.assertEqual(b'\xff' * CHUNK, self.engine.read(vol, CHUNK, CHUNK))
        clone = self.engine.new_layer(parent=frozen)
        self.engine.unmap(vol, 0, 4 * CHUNK)
        self.assertEqual(bytes(4 * CHUNK), self.engine.read(vol, 0,
                                                            4 * CHUNK))
        self.assertEqual(original, self.engine.read(clone, 0, 4 * CHUNK))
        for layer in (vol, frozen, clone):
            self.engine.release(layer)
        self.assertEqual({'physical': 0, 'logical': 0, 'stored_raw': 0},
                         self.engine.totals())

    def test_zero_writes_cost_nothing(self):
        vol = self.engine.new_layer()
        self.engine.write(vol, 0, bytes(8 * CHUNK))
        self.assertEqual(0, self.engine.totals()['physical'])

    def _steps(self, fn):
        """SQLite virtual-machine steps ``fn`` runs (in hundreds: the
        work of its queries, whatever their number), and its result.
        """
        seen = []
        self.engine.db.set_progress_handler(lambda: seen.append(1), 100)
        try:
            result = fn()
        finally:
            self.engine.db.set_progress_handler(None, 0)
        return len(seen), result

    def _summed(self, layer):
        return self.engine.db.execute(
            'SELECT COALESCE(SUM(c.raw), 0) FROM maps m JOIN chunks c ON '
            'c.id = m.chunk WHERE m.layer = ?', (layer,)).fetchone()[0]

    def test_written_bytes_are_one_row_whatever_the_size(self):
        small, large = self.engine.new_layer(), self.engine.new_layer()
        self.engine.write(small, 0, os.urandom(CHUNK))
        self.engine.write(large, 0, os.urandom(256 * CHUNK))
        # Overwrites, a partial write, zeros and a snapshot on top.
        self.engine.write(large, 5 * CHUNK, os.urandom(3 * CHUNK))
        self.engine.write(large, 7 * CHUNK + 100, b'x' * 100)
        self.engine.write(large, 9 * CHUNK, bytes(2 * CHUNK))
        frozen, large = large, self.engine.freeze(large)
        self.engine.write(large, 0, os.urandom(CHUNK + 10))
        self.engine.flush()
        few, written = self._steps(
            lambda: self.engine.layer_written(small))
        self.assertEqual(CHUNK, written)
        many, written = self._steps(
            lambda: self.engine.layer_written(frozen))
        self.assertEqual(few, many)
        self.assertEqual(self._summed(frozen), written)
        self.assertEqual(254 * CHUNK, written)
        self.assertEqual(self._summed(large),
                         self.engine.layer_written(large))

    def test_partial_write_over_a_snapshot_keeps_the_snapshot(self):
        vol = self.engine.new_layer()
        original = os.urandom(CHUNK)
        self.engine.write(vol, 0, original)
        frozen, vol = vol, self.engine.freeze(vol)
        self.engine.write(vol, 10, b'x' * 10)
        expected = original[:10] + b'x' * 10 + original[20:]
        self.assertEqual(expected, self.engine.read(vol, 0, CHUNK))
        self.assertEqual(original, self.engine.read(frozen, 0, CHUNK))
        self.engine.flush()
        self.assertEqual(expected, self.engine.read(vol, 0, CHUNK))
        self.assertEqual(original, self.engine.read(frozen, 0, CHUNK))

    def test_unmap_work_follows_mapped_data_not_the_range(self):
        vol = self.engine.new_layer()
        self.engine.write(vol, 0, os.urandom(4 * CHUNK))
        self.engine.flush()
        small, _r = self._steps(lambda: self.engine.unmap(
            vol, 64 * CHUNK, 64 * CHUNK))
        # 2^16 times the range, nothing more mapped in it.
        large, _r = self._steps(lambda: self.engine.unmap(
            vol, 64 * CHUNK, 64 * 65536 * CHUNK))
        self.assertLessEqual(large, small + 1)
        self.assertEqual(0, self.engine.work['unmap_entries'])
        self.assertEqual(4 * CHUNK,
                         self.engine.totals()['logical'])

    def test_unmap_in_steps_of_bounded_work(self):
        vol = self.engine.new_layer()
        count = engine.UNMAP_BATCH * 2 + 10
        self.engine.write(vol, 0, os.urandom(count * CHUNK))
        frozen, vol = vol, self.engine.freeze(vol)
        self.engine.write(vol, 3 * CHUNK, os.urandom(CHUNK))
        steps, pos = [], 0
        while pos < count * CHUNK:
            before = self.engine.work['unmap_entries']
            pos = self.engine.unmap_step(vol, pos, count * CHUNK)
            steps.append(self.engine.work['unmap_entries'] - before)
        # Each step masks at most a batch of the snapshot's chunks.
        self.assertEqual(3, len(steps))
        self.assertLessEqual(max(steps), engine.UNMAP_BATCH)
        # The new chunk is still staged: dropped, not counted.
        self.assertEqual(count, sum(steps))
        self.assertEqual(bytes(count * CHUNK),
                         self.engine.read(vol, 0, count * CHUNK))
        self.assertEqual(0, self.engine.layer_written(vol))
        self.assertEqual(count * CHUNK, self.engine.layer_written(frozen))

    def test_unmap_edges_staged_writes_and_snapshots(self):
        vol = self.engine.new_layer()
        original = os.urandom(8 * CHUNK)
        self.engine.write(vol, 0, original)
        frozen, vol = vol, self.engine.freeze(vol)
        staged = os.urandom(2 * CHUNK)
        self.engine.write(vol, 2 * CHUNK, staged)        # not yet stored
        # From inside chunk 1 to inside chunk 6.
        self.engine.unmap(vol, CHUNK + 100, 5 * CHUNK)
        expected = (original[:CHUNK + 100] + bytes(5 * CHUNK) +
                    original[6 * CHUNK + 100:])
        self.assertEqual(expected, self.engine.read(vol, 0, 8 * CHUNK))
        self.engine.flush()
        self.assertEqual(expected, self.engine.read(vol, 0, 8 * CHUNK))
        self.assertEqual(original, self.engine.read(frozen, 0, 8 * CHUNK))
        clone = self.engine.new_layer(parent=frozen)
        self.assertEqual(original, self.engine.read(clone, 0, 8 * CHUNK))
        for layer in (vol, clone, frozen):
            self.engine.release(layer)
        self.assertEqual({'physical': 0, 'logical': 0, 'stored_raw': 0},
                         self.engine.totals())

    def test_a_failed_unmap_keeps_the_staged_writes(self):
        vol = self.engine.new_layer()
        data = os.urandom(2 * CHUNK)
        self.engine.write(vol, 0, data)
        with mock.patch.object(self.engine, '_unref_chunks',
                               side_effect=sqlite3.OperationalError(
                                   'database or disk is full')):
            self.assertRaises(sqlite3.OperationalError, self.engine.unmap,
                              vol, 0, 2 * CHUNK)
        self.assertEqual(data, self.engine.read(vol, 0, 2 * CHUNK))


NativeLayersTestCase = engine_fixture.on_native(LayersTestCase)
