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
as they are, a chunk row and a patch row each, and the chunk is neither
read nor compressed again. A write the log does not take (more slots
than its bound, or part of a slot) is stored as the whole patched
chunk: the chunk's old map entry and data are found, the new chunk is
stored and the old one loses its reference. The SQL either takes per
chunk is what the native data path pays per random small write,
whatever the volume's size or history.
"""

import collections
import os

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
# Per logged slot: the map entry (with its patch count), the slot's
# chunk row and its patch row.
STATEMENTS_PER_SLOT = 3
# Past the patch log's bound: stored as the whole chunk.
WHOLE = (native._native.PATCH_BOUND + 1) * patch_log.SLOT if \
    native.AVAILABLE else 3 * patch_log.SLOT


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

    def test_patched_chunks_take_a_fixed_number_of_statements(self):
        chunk = self.engine.chunk
        vol = self._filled()
        seen = self._statements(
            lambda: self._patch_each(vol, lambda i: os.urandom(WHOLE)))
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
        patch = os.urandom(WHOLE)
        # Every other chunk patched alike: one new chunk, and the old one
        # keeps the references of the chunks left alone.
        seen = self._statements(
            lambda: self._patch_each(vol, lambda i: patch, step=2))
        self.assertEqual(0, seen['DELETE FROM chunks'], seen)
        self.assertEqual(1, seen['UPDATE chunks SET'], seen)
        patched = block[:4096] + patch + block[4096 + WHOLE:]
        for i in range(CHUNKS):
            self.assertEqual(patched if i % 2 == 0 else block,
                             self.engine.read(vol, i * chunk, chunk))
