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

"""The work of storing small writes, counted (never timed).

A write of whole 4 KiB slots into a stored chunk of the layer's own goes
to the patch log (``native/store_patches.c``): the slots are appended
as they are, a chunk row and a patch row each (a slot logged before
loses its earlier record), and the chunk is neither read nor compressed
again. A write the log does not take (part of a slot) is stored as the
whole patched chunk: the chunk's old map entry and data are found, the
new chunk is stored and the old one loses its reference. The SQL
either takes per chunk is what the native data path pays per random
small write, whatever the volume's size or history.
"""

import collections
import os
import sqlite3

import testtools

from reference_array.core import native_engine
from reference_array.core import patch_log
from reference_array import native
from reference_array.tests import engine_fixture

CHUNKS = 64
# Per patched chunk: the map entry with its data's place, the digest
# lookup, the chunk row, the map entry, and the old chunk's row read and
# deleted.
STATEMENTS_PER_CHUNK = 6
# Per logged slot: the map entry (with its logged slots), the slot's
# chunk row and its patch row.
STATEMENTS_PER_SLOT = 3
# Not of whole slots: the patch log takes none of it, the chunk is
# stored whole.
PARTIAL = 2 * patch_log.SLOT + 512


@testtools.skipUnless(native.AVAILABLE, engine_fixture.NO_NATIVE)
class SmallWriteShapeTestCase(engine_fixture.EngineTestCase):

    engine_class = native_engine.NativeEngine

    def _statements(self, write):
        """{first words of a statement: count} while ``write`` runs and
        its chunks are stored.
        """
        seen = collections.Counter()
        self.store.connection.set_trace_callback(
            lambda sql: seen.update([' '.join(sql.split()[:3])]))
        try:
            write()
            self.engine.flush()
        finally:
            self.store.connection.set_trace_callback(None)
        return seen

    def _patch_each(self, vol, data, step=1):
        chunk = self.engine.chunk
        for i in range(0, CHUNKS, step):
            self.engine.write(vol, i * chunk + 4096, data(i))

    def _filled(self):
        return engine_fixture.stored(
            self.engine, os.urandom(CHUNKS * self.engine.chunk))

    def _data_statements(self, seen):
        return sum(count for sql, count in seen.items()
                   if not sql.startswith(('BEGIN', 'COMMIT', 'PRAGMA',
                                          'UPDATE totals')))

    def test_4k_writes_into_stored_chunks_are_logged(self):
        vol = self._filled()
        before = self.engine.work
        written = {}

        def write():
            for i in range(CHUNKS):
                written[i] = os.urandom(4096)
                self.engine.write(vol, i * self.engine.chunk + 4096,
                                  written[i])
        seen = self._statements(write)
        work = self.engine.work
        work.subtract(before)
        self.assertLessEqual(self._data_statements(seen),
                             STATEMENTS_PER_SLOT * CHUNKS + 1, seen)
        # Nothing read, compressed or freed: one slot record each.
        self.assertEqual(CHUNKS, work['patches_logged'], work)
        self.assertEqual(0, work['chunks_fetched'], work)
        self.assertEqual(0, seen['DELETE FROM chunks'], seen)
        self.assertEqual(CHUNKS, seen['INSERT INTO chunks'], seen)
        for i in range(CHUNKS):
            self.assertEqual(written[i], self.engine.read(
                vol, i * self.engine.chunk + 4096, 4096))

    def test_slots_written_again_are_replaced_not_merged(self):
        chunk = self.engine.chunk
        slots = chunk // patch_log.SLOT
        vol = self._filled()
        image = {}

        def write(slot):
            for i in range(CHUNKS):
                image[i, slot] = os.urandom(patch_log.SLOT)
                self.engine.write(vol, i * chunk + slot * patch_log.SLOT,
                                  image[i, slot])
        # Each chunk's slots one batch at a time, the first twice: every
        # chunk ends with all its slots logged, its first written again.
        before = self.engine.work
        seen = collections.Counter()
        for slot in [0] + list(range(slots)):
            seen.update(self._statements(lambda: write(slot)))
        work = self.engine.work
        work.subtract(before)
        # No chunk read, decompressed or compressed again: every write
        # is a slot record, and the first slot's earlier record is gone.
        self.assertEqual(CHUNKS * (slots + 1), work['patches_logged'], work)
        self.assertEqual(0, work['chunks_fetched'], work)
        self.assertEqual(0, work['compress_calls'], work)
        self.assertEqual(CHUNKS, seen['DELETE FROM chunks'], seen)
        whole = {i: b''.join(image[i, slot] for slot in range(slots))
                 for i in range(CHUNKS)}
        # A chunk whose every slot is logged is read from its records:
        # the chunk under them is not fetched.
        self.engine.drop_cache()
        before = self.engine.work
        self.assertEqual(whole[5], self.engine.read(vol, 5 * chunk, chunk))
        work = self.engine.work
        work.subtract(before)
        self.assertEqual(slots, work['chunks_fetched'], work)
        self.assertEqual(slots, work['patch_log_reads'], work)
        self.assertEqual(chunk, work['bytes_decompressed'], work)
        # Merged, likewise from the records alone, and read back whole.
        self.engine.drop_cache()
        before = self.engine.work
        while self.engine.merge_patches():
            pass
        work = self.engine.work
        work.subtract(before)
        self.assertEqual(CHUNKS * slots, work['chunks_fetched'], work)
        for i in range(CHUNKS):
            self.assertEqual(whole[i], self.engine.read(vol, i * chunk,
                                                        chunk))
            self.assertEqual(image[i, 0], self.engine.read(vol, i * chunk,
                                                           4096))

    def test_every_slot_logged_and_a_record_missing_is_an_error(self):
        chunk, slot = self.engine.chunk, patch_log.SLOT
        vol = self._filled()
        for j in range(chunk // slot):
            self.engine.write(vol, j * slot, os.urandom(slot))
            self.engine.flush()
        # A damaged store: one slot's record row gone. Nothing is read
        # under four logged slots, so the read fails rather than return
        # what the buffer held before.
        with self.store.transaction():
            self.store.connection.execute(
                'DELETE FROM chunks WHERE id = (SELECT chunk FROM patches '
                'WHERE layer = ? AND idx = 0 AND slot = 2)', (vol,))
        self.engine.drop_cache()
        self.engine.read(vol, chunk, chunk)
        error = self.assertRaises(sqlite3.OperationalError, self.engine.read,
                                  vol, 0, chunk)
        self.assertIn('a logged slot has no record', str(error))

    def test_a_slot_read_takes_the_record_of_the_layer_that_maps_it(self):
        chunk, slot = self.engine.chunk, patch_log.SLOT
        parent = self._filled()
        under = {i: self.engine.read(parent, i * chunk, chunk)
                 for i in range(4)}
        logged = {i: os.urandom(slot) for i in range(4)}
        for i in range(4):
            self.engine.write(parent, i * chunk + slot, logged[i])
        self.engine.flush()
        child = self.engine.new_layer(parent)
        # Chunk 1 made the child's own (stored whole, the parent's slot in
        # it), then a slot of it logged in the child; chunk 2 made the
        # child's by a write over the parent's logged slot, which the
        # child's entry now hides.
        self.engine.write(child, chunk + 3 * slot, os.urandom(slot))
        self.engine.flush()
        own = os.urandom(slot)
        self.engine.write(child, chunk + 2 * slot, own)
        self.engine.write(child, 2 * chunk + slot, own)
        self.engine.flush()
        self.engine.drop_cache()
        read = self.engine.read
        for i in range(4):
            # The parent reads its own records, whatever the child holds.
            self.assertEqual(logged[i], read(parent, i * chunk + slot, slot))
            self.assertEqual(under[i][:slot], read(parent, i * chunk, slot))
        # Through the child: the parent's record where the child maps
        # nothing, the parent's slot as the child's chunk holds it, the
        # child's own record, and the chunk under it elsewhere.
        self.assertEqual(logged[0], read(child, slot, slot))
        self.assertEqual(logged[1], read(child, chunk + slot, slot))
        self.assertEqual(own, read(child, chunk + 2 * slot, slot))
        self.assertEqual(own, read(child, 2 * chunk + slot, slot))
        self.assertEqual(under[3][:slot], read(child, 3 * chunk, slot))
        self.assertEqual(under[2][:slot], read(child, 2 * chunk, slot))

    def test_patched_chunks_take_a_fixed_number_of_statements(self):
        chunk = self.engine.chunk
        vol = self._filled()
        seen = self._statements(
            lambda: self._patch_each(vol, lambda i: os.urandom(PARTIAL)))
        self.assertLessEqual(self._data_statements(seen),
                             STATEMENTS_PER_CHUNK * CHUNKS + 1, seen)
        # The old chunks were replaced: one row each, deleted.
        self.assertEqual(CHUNKS, seen['DELETE FROM chunks'], seen)
        self.assertEqual(0, seen['UPDATE chunks SET'], seen)
        for i in range(CHUNKS):
            got = self.engine.read(vol, i * chunk, chunk)
            self.assertEqual(chunk, len(got))

    def test_shared_chunk_keeps_its_other_references(self):
        chunk = self.engine.chunk
        block = os.urandom(chunk)
        vol = self.engine.new_layer()
        # Every chunk the same: one stored chunk, CHUNKS references.
        self.engine.write(vol, 0, block * CHUNKS)
        self.engine.flush()
        patch = os.urandom(PARTIAL)
        # Every other chunk patched alike: one new chunk, and the old one
        # keeps the references of the chunks left alone.
        seen = self._statements(
            lambda: self._patch_each(vol, lambda i: patch, step=2))
        self.assertEqual(0, seen['DELETE FROM chunks'], seen)
        self.assertEqual(1, seen['UPDATE chunks SET'], seen)
        patched = block[:4096] + patch + block[4096 + PARTIAL:]
        for i in range(CHUNKS):
            self.assertEqual(patched if i % 2 == 0 else block,
                             self.engine.read(vol, i * chunk, chunk))
