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

A 4 KiB write into a stored chunk is stored as the whole patched chunk:
the chunk's old map entry and data are found, the new chunk is stored
and the old one loses its reference. The SQL this takes per chunk is
what the native data path pays per random 4 KiB write, whatever the
volume's size or history.
"""

import collections
import os

import testtools

from reference_array.core import native_engine
from reference_array import native
from reference_array.tests import engine_fixture

CHUNKS = 64
# Per patched chunk: the map entry with its data's place, the digest
# lookup, the chunk row, the map entry, and the old chunk's row read and
# deleted.
STATEMENTS_PER_CHUNK = 6


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

    def test_patched_chunks_take_a_fixed_number_of_statements(self):
        chunk = self.engine.chunk
        vol = self.engine.new_layer()
        self.engine.write(vol, 0, os.urandom(CHUNKS * chunk))
        self.engine.flush()
        seen = self._statements(
            lambda: self._patch_each(vol, lambda i: os.urandom(4096)))
        data = sum(count for sql, count in seen.items()
                   if not sql.startswith(('BEGIN', 'COMMIT', 'PRAGMA',
                                          'UPDATE totals')))
        self.assertLessEqual(data, STATEMENTS_PER_CHUNK * CHUNKS + 1, seen)
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
        patch = os.urandom(4096)
        # Every other chunk patched alike: one new chunk, and the old one
        # keeps the references of the chunks left alone.
        seen = self._statements(
            lambda: self._patch_each(vol, lambda i: patch, step=2))
        self.assertEqual(0, seen['DELETE FROM chunks'], seen)
        self.assertEqual(1, seen['UPDATE chunks SET'], seen)
        patched = block[:4096] + patch + block[8192:]
        for i in range(CHUNKS):
            self.assertEqual(patched if i % 2 == 0 else block,
                             self.engine.read(vol, i * chunk, chunk))
