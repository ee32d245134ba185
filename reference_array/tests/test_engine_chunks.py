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

"""How the engine stores chunks: compressed, deduplicated or as they are,
in segment files that are compacted as data is overwritten."""

import os
import random

import fixtures
import testtools

from reference_array.core import chunk_store
from reference_array.core import engine
from reference_array.core import segments
from reference_array.core import store as metadata
from reference_array import native
from reference_array.tests import engine_fixture

CHUNK = engine_fixture.CHUNK


class ChunksTestCase(engine_fixture.EngineTestCase):

    def test_compression_and_dedup(self):
        text = (b'{"mNumber": 12345, "state": "ready", "pad": "abc"}\n'
                * (CHUNK // 50 + 1))[:CHUNK]
        dedup = self.engine.new_layer(dedup=True)
        for n in range(8):
            self.engine.write(dedup, n * CHUNK, text)
        after_dedup = self.engine.totals()
        self.assertEqual(8 * CHUNK, after_dedup['logical'])
        # One stored chunk, compressed well below its size.
        self.assertLess(after_dedup['physical'], CHUNK // 4)
        plain = self.engine.new_layer(dedup=False)
        for n in range(8):
            self.engine.write(plain, n * CHUNK, text)
        grown = (self.engine.totals()['physical']
                 - after_dedup['physical'])
        self.assertEqual(8 * after_dedup['physical'], grown)

    def test_data_that_does_not_shrink_is_stored_as_it_is(self):
        unique = os.urandom(4 * CHUNK)
        # Begins as a zstd frame does: always stored as a frame.
        framed = chunk_store.FRAME_MAGIC + os.urandom(CHUNK - 4)
        # Its start does not shrink, its middle does.
        half = os.urandom(CHUNK // 2) + bytes(CHUNK // 2)
        layers = []
        for data in (unique, framed, half):
            layers.append(self.engine.new_layer())
            self.engine.write(layers[-1], 0, data)
        self.engine.flush()
        self.engine.drop_cache()
        for layer, data in zip(layers, (unique, framed, half)):
            self.assertEqual(data, self.engine.read(layer, 0, len(data)))
        physical = [self.engine.usage([layer])[1] for layer in layers]
        self.assertEqual(4 * CHUNK, physical[0])
        self.assertGreater(physical[1], CHUNK)
        self.assertLess(physical[2], CHUNK * 3 // 4)


class SegmentsTestCase(testtools.TestCase):

    engine_class = engine.Engine
    """Chunk data in segment files: overwrites, compaction, bounded reads."""

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(self.dir, 'a.db')
        self.store = metadata.Store(self.path)
        self.engine = self.engine_class(self.store)
        self.addCleanup(self._close)
        self.engine.segments.segment_bytes = 256 * 1024
        # Many small segments, few open at once.
        self.useFixture(fixtures.MockPatchObject(segments, 'OPEN_FILES', 4))

    def _close(self):
        self.engine.segments.close()
        self.store.close()

    def _segment_bytes(self):
        folder = self.path + '-chunks'
        return sum(os.path.getsize(os.path.join(folder, name))
                   for name in os.listdir(folder))

    def _overwrite(self, vol, chunks, passes, seed=3):
        """4 KiB writes of unique data at random offsets, flushed."""
        rng = random.Random(seed)
        image = {}
        for _pass in range(passes):
            for _n in range(chunks * 4):
                offset = rng.randrange(chunks * 4) * 4096
                data = rng.randbytes(4096)
                self.engine.write(vol, offset, data)
                image[offset] = data
            self.engine.flush()
        return image

    def test_overwrites_are_compacted_and_read_back(self):
        vol = self.engine.new_layer()
        chunks = 64
        self.engine.write(vol, 0, os.urandom(chunks * CHUNK))
        self.engine.flush()
        image = self._overwrite(vol, chunks, passes=4)
        self.assertGreater(self.engine.work['segments_compacted'], 0)
        # Live data plus at most a few segments being written or waiting
        # for their compaction, not four passes of garbage.
        physical = self.engine.totals()['physical']
        self.assertLess(self._segment_bytes(), 2 * physical + 4 * 256 * 1024)
        for offset, data in image.items():
            self.assertEqual(data, self.engine.read(vol, offset, 4096))
        self._close()
        self.store = metadata.Store(self.path)
        self.engine = self.engine_class(self.store)
        for offset, data in sorted(image.items())[:64]:
            self.assertEqual(data, self.engine.read(vol, offset, 4096))

    def _work(self, fn):
        before = dict(self.engine.work)
        fn()
        return {key: value - before.get(key, 0)
                for key, value in self.engine.work.items()
                if value != before.get(key, 0)}

    def test_a_4k_read_does_the_same_work_after_overwrites(self):
        chunks = 128
        fresh, aged = self.engine.new_layer(), self.engine.new_layer()
        for vol in (fresh, aged):
            self.engine.write(vol, 0, os.urandom(chunks * CHUNK))
        self.engine.flush()
        offset = 37 * CHUNK + 8192
        # The native data path logs 4 KiB writes into stored chunks: a
        # read resolves the chunk's logged slots, a bounded number.
        bound = native._native.PATCH_BOUND if getattr(
            self.engine, '_native', None) else 0

        def one_read(vol):
            self.engine.drop_cache()
            return self._work(lambda: self.engine.read(vol, offset, 4096))
        first = one_read(fresh)
        self.assertEqual({'map_probes': 1, 'chunks_fetched': 1,
                          'bytes_decompressed': CHUNK}, first)
        for _history in range(2):
            self._overwrite(aged, chunks, passes=3)
            # Every chunk's read resolves the bound at most.
            for idx in range(chunks):
                self.engine.drop_cache()
                work = self._work(lambda: self.engine.read(
                    aged, idx * CHUNK, 4096))
                self.assertLessEqual(work.get('patch_log_reads', 0), bound)
            # The chunk written whole, then a slot of it logged (on the
            # native path).
            rest = os.urandom(3 * 4096)
            self.engine.write(aged, 37 * CHUNK, os.urandom(4096) + rest)
            self.engine.flush()
            slot = os.urandom(4096)
            self.engine.write(aged, 37 * CHUNK, slot)
            self.engine.flush()
            # A slot that is not logged: the chunk under it alone.
            work = one_read(aged)
            self.assertEqual(dict(first, patch_log_reads=0),
                             dict({'patch_log_reads': 0}, **work))
            # The logged slot: its record alone, nothing decompressed.
            self.engine.drop_cache()
            work = self._work(lambda: self.assertEqual(
                slot, self.engine.read(aged, 37 * CHUNK, 4096)))
            records = work.pop('patch_log_reads', 0)
            self.assertEqual(min(bound, 1), records, work)
            self.assertEqual({'map_probes': 1, 'chunks_fetched': 1,
                              'bytes_decompressed': 4096 if records
                              else CHUNK}, work)
            # Across slots: the chunk with its logged slots applied.
            self.engine.drop_cache()
            work = self._work(lambda: self.assertEqual(
                slot + rest[:4096], self.engine.read(aged, 37 * CHUNK,
                                                     8192)))
            records = work.pop('patch_log_reads', 0)
            self.assertEqual(min(bound, 1), records, work)
            self.assertEqual({'map_probes': 1, 'chunks_fetched': 1 + records,
                              'bytes_decompressed': CHUNK + records * 4096},
                             work)
            self.assertEqual(rest[4096:8192], self.engine.read(
                aged, 37 * CHUNK + 8192, 4096))
        # Once merged, the same work as on a fresh volume.
        while self.engine.merge_patches():
            pass
        self.assertEqual(first, one_read(aged))

    def test_allocation_status_work_is_bounded(self):
        vol = self.engine.new_layer()
        # 512 chunks of data, a hole of 4096, 8 more chunks of data.
        self.engine.write(vol, 0, os.urandom(512 * CHUNK))
        self.engine.write(vol, 4608 * CHUNK, os.urandom(8 * CHUNK))
        self.engine.flush()
        limit = 1 << 30
        status = {}
        work = self._work(lambda: status.update(
            data=self.engine.allocated_run(vol, 0, limit)))
        self.assertEqual((True, engine.RUN_WINDOW * CHUNK), status['data'])
        self.assertLessEqual(work['map_probes'], 2)
        work = self._work(lambda: status.update(
            hole=self.engine.allocated_run(vol, 512 * CHUNK, limit)))
        self.assertEqual((False, 4096 * CHUNK), status['hole'])
        self.assertLessEqual(work['map_probes'], 4)
        # The same answers after overwrites of the data run.
        self._overwrite(vol, 512, passes=1)
        work = self._work(lambda: status.update(
            aged=self.engine.allocated_run(vol, 0, limit)))
        self.assertEqual(status['data'], status['aged'])
        self.assertLessEqual(work['map_probes'], 2)


NativeChunksTestCase = engine_fixture.on_native(ChunksTestCase)
NativeSegmentsTestCase = engine_fixture.on_native(SegmentsTestCase)
