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

"""The work of storing new whole chunks (ingest), counted (never timed).

A batch of new chunks is digested, compressed into one buffer laid out
as the segment holds its records, and written with one call; then four
statements per chunk: its map entry looked up (what it replaces), its
digest looked up, its row and its map entry written. No Python object
is made per chunk on the way to the segment.
"""

import collections
import os
from unittest import mock

from reference_array.core import native_engine
from reference_array.core import segments as segments_mod
from reference_array import native
from reference_array.tests import engine_fixture

import testtools

CHUNKS = 64
STATEMENTS_PER_CHUNK = 4


def mixed(chunk, count):
    """Chunks of half-compressible, unique and repeated data."""
    out = []
    for i in range(count):
        if i % 5 == 4:
            out.append(out[i - 3])
        elif i % 2:
            out.append(os.urandom(chunk))
        else:
            half = os.urandom(chunk // 2)
            out.append(half + bytes(chunk // 2))
    return b''.join(out)


@testtools.skipUnless(native.AVAILABLE, engine_fixture.NO_NATIVE)
class IngestShapeTestCase(engine_fixture.EngineTestCase):

    engine_class = native_engine.NativeEngine

    def _store(self, vol, data):
        """Write and flush ``data``: (blobs handed to append_packed,
        record lists handed to append, statements by first words).
        """
        segs = self.engine.segments
        blobs, lists = [], []
        seen = collections.Counter()

        def packed(blob):
            blobs.append(bytes(blob))
            return orig_packed(blob)

        def append(records):
            lists.append(len(records))
            return orig_append(records)
        orig_packed, orig_append = segs.append_packed, segs.append
        self.store.connection.set_trace_callback(
            lambda sql: seen.update([' '.join(sql.split()[:3])]))
        try:
            with mock.patch.object(segs, 'append_packed', packed), \
                    mock.patch.object(segs, 'append', append):
                self.engine.write(vol, 0, data)
                self.engine.flush()
        finally:
            self.store.connection.set_trace_callback(None)
        return blobs, lists, seen

    def test_a_batch_of_new_chunks_is_one_segment_write(self):
        chunk = self.engine.chunk
        vol = self.engine.new_layer()
        data = mixed(chunk, CHUNKS)
        blobs, lists, seen = self._store(vol, data)
        # One blob for the batch, no list of per-chunk records.
        self.assertEqual(1, len(blobs))
        self.assertEqual([], lists)
        rows = self.store.connection.execute(
            'SELECT id, size, seg, off FROM chunks ORDER BY off').fetchall()
        # Every new chunk once (the repeated ones found by digest).
        self.assertEqual(CHUNKS - CHUNKS // 5, len(rows))
        # The blob holds the records as the segment does: header, then
        # the packed bytes, back to back, where the rows point.
        blob, pos = blobs[0], 0
        start = rows[0][3] - segments_mod.HEADER.size
        for chunk_id, size, _seg, off in rows:
            self.assertEqual(off - start, pos + segments_mod.HEADER.size)
            self.assertEqual((chunk_id, size),
                             segments_mod.HEADER.unpack_from(blob, pos))
            pos += segments_mod.HEADER.size + size
        self.assertEqual(len(blob), pos)
        self.assertEqual(data, self.engine.read(vol, 0, len(data)))

    def test_new_chunks_take_a_fixed_number_of_statements(self):
        chunk = self.engine.chunk
        vol = self.engine.new_layer()
        _blobs, _lists, seen = self._store(vol, mixed(chunk, CHUNKS))
        data = sum(count for sql, count in seen.items()
                   if not sql.startswith(('BEGIN', 'COMMIT', 'PRAGMA',
                                          'UPDATE totals', 'UPDATE layers')))
        self.assertLessEqual(data, STATEMENTS_PER_CHUNK * CHUNKS, seen)
        # A repeated chunk adds a reference: no row, no record.
        self.assertEqual(CHUNKS - CHUNKS // 5, seen['INSERT INTO chunks'],
                         seen)

    def test_compressible_chunks_take_one_compression_each(self):
        # A chunk is sampled (512 bytes) before it is compressed whole
        # only while the chunks before it did not shrink: after one that
        # did, it is compressed whole at once.
        chunk = self.engine.chunk
        vol = self.engine.new_layer()
        half = [os.urandom(chunk // 2) + bytes(chunk // 2)
                for _ in range(CHUNKS)]
        before = self.engine.work['compress_calls']
        self._store(vol, b''.join(half))
        calls = self.engine.work['compress_calls'] - before
        # The first chunk's two samples (its random start does not
        # shrink, its middle does), then one call per chunk.
        self.assertLessEqual(calls, CHUNKS + 2)
        self.assertGreaterEqual(calls, CHUNKS)
        self.assertEqual(b''.join(half),
                         self.engine.read(vol, 0, CHUNKS * chunk))

    def test_chunks_that_do_not_shrink_are_sampled(self):
        # Unique data: two 512-byte samples each (the first chunk of a
        # batch, or one after a chunk that shrank, may be compressed
        # whole), stored as it is.
        chunk = self.engine.chunk
        vol = self.engine.new_layer()
        data = os.urandom(CHUNKS * chunk)
        before = self.engine.work['compress_calls']
        self._store(vol, data)
        calls = self.engine.work['compress_calls'] - before
        self.assertLessEqual(calls, 2 * CHUNKS + 1)
        self.assertGreaterEqual(calls, 2 * CHUNKS - 1)
        stored = self.store.connection.execute(
            'SELECT SUM(size), SUM(raw) FROM chunks').fetchone()
        self.assertEqual(stored[1], stored[0])
        self.assertEqual(data, self.engine.read(vol, 0, len(data)))

    def test_a_second_batch_reuses_the_layout(self):
        # The pack buffer is the store's: a later, smaller batch is laid
        # out from its start again, and both read back.
        chunk = self.engine.chunk
        vol = self.engine.new_layer()
        first, second = mixed(chunk, CHUNKS), mixed(chunk, 3)
        self._store(vol, first)
        blobs, _lists, _seen = self._store(vol, second)
        self.assertEqual(1, len(blobs))
        self.assertEqual(first[3 * chunk:],
                         self.engine.read(vol, 3 * chunk,
                                          len(first) - 3 * chunk))
        self.assertEqual(second, self.engine.read(vol, 0, 3 * chunk))
