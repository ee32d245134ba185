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

"""A batch's digests and compression are made without the engine's lock
(``native/prepare.c``), counted (never timed).

Only the dedup lookup, the rows, the maps and the segment append are
left for the batch under the lock: a chunk prepared from content that
was overwritten meanwhile is not used, and a new chunk prepared twice
(two connections writing the same data at once) is stored once.
"""

import os
import threading
import time

import testtools

from reference_array.core import native_engine
from reference_array import native
from reference_array.tests import engine_fixture
from reference_array.tests import test_ingest_shape

CHUNKS = 32


@testtools.skipUnless(native.AVAILABLE, engine_fixture.NO_NATIVE)
class PrepareShapeTestCase(engine_fixture.EngineTestCase):

    engine_class = native_engine.NativeEngine

    def work(self):
        return dict(self.engine.work)

    def delta(self, before, name):
        return self.engine.work[name] - before.get(name, 0)

    def test_a_background_batch_compresses_nothing_under_the_lock(self):
        chunk = self.engine.chunk
        vol = self.engine.new_layer()
        data = test_ingest_shape.mixed(chunk, CHUNKS)
        self.engine.write(vol, 0, data)
        before = self.work()
        # The main loop's store of what is staged (``settle``).
        self.engine.settle()
        self.assertEqual(0, self.delta(before, 'compress_calls'))
        self.assertEqual(CHUNKS, self.delta(before, 'chunks_prepared'))
        self.assertGreater(self.delta(before, 'compress_calls_unlocked'), 0)
        # Every new chunk's record came from its preparation.
        rows = self.store.connection.execute(
            'SELECT COUNT(*) FROM chunks').fetchone()[0]
        self.assertEqual(rows, self.delta(before, 'prepared_stored'))
        self.engine.drop_cache()
        self.assertEqual(data, self.engine.read(vol, 0, len(data)))

    def _preparing(self):
        """The preparing thread started (a daemon: a hung one does not
        keep the runner), and the end of the pipe that stops it.
        """
        stop_r, stop_w = os.pipe()
        self.addCleanup(os.close, stop_r)
        self.addCleanup(os.close, stop_w)
        thread = threading.Thread(target=self.engine.prepare_ahead,
                                  args=(stop_r,), daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(os.write, stop_w, b'.')
        return thread, stop_w

    def test_a_chunk_written_again_and_again_is_not_prepared_each_time(self):
        # Far from full, the cache's chunks wait for the main loop or a
        # flush: the preparing thread leaves them alone, so a chunk
        # rewritten every few milliseconds is not compressed each time
        # (before: every version the thread saw).
        chunk = self.engine.chunk
        vol = self.engine.new_layer()
        data = test_ingest_shape.mixed(chunk, 2)
        before = self.work()
        self._preparing()
        for n in range(100):
            self.engine.write(vol, 0, data[n % 2 * chunk:][:chunk])
            time.sleep(0.002)
        self.assertEqual(0, self.delta(before, 'chunks_prepared'))
        self.engine.flush()
        self.assertEqual(data[chunk:], self.engine.read(vol, 0, chunk))

    def test_a_writes_batch_passes_over_chunks_being_prepared(self):
        # While a preparation holds some of the oldest chunks, the batch
        # a write stores is the oldest ``limit`` but those: their records
        # come, and a later batch stores them as made.
        chunk = self.engine.chunk
        vol = self.engine.new_layer()
        native = self.engine._native
        for attempt in range(50):
            self.engine.write(vol, 0, test_ingest_shape.mixed(chunk, CHUNKS))
            # The oldest quarter held while it is made.
            thread = threading.Thread(target=native.prepare,
                                      args=(self.engine.lock, CHUNKS // 4))
            thread.start()
            held = None
            while thread.is_alive() and held is None:
                with self.engine.lock:
                    every = native.staged_keys()
                    ready = native.staged_keys(-1, True)
                    first = native.staged_keys(CHUNKS // 2, True)
                if len(ready) < len(every):
                    held = set(every) - set(ready)
            thread.join(30)
            if held:
                break
        self.assertTrue(held, 'no preparation seen holding chunks')
        self.assertEqual(set(every[:CHUNKS // 4]), held)
        self.assertEqual([k for k in every if k not in held], ready)
        self.assertEqual([k for k in every[:CHUNKS // 2] if k not in held],
                         first)
        self.engine.flush()

    def test_staged_chunks_are_prepared_ahead_by_a_thread_of_their_own(self):
        # The server's preparing thread digests and compresses what is
        # staged before any batch: the flush then stores those records
        # and compresses nothing (before: no such thread; the batch, or
        # the connection just before it, made them all).
        chunk = self.engine.chunk
        # A cache of a chunk more than is written: full but for one.
        self.engine._dirty_limit = (CHUNKS + 1) * chunk
        vol = self.engine.new_layer()
        data = test_ingest_shape.mixed(chunk, CHUNKS)
        self.engine.write(vol, 0, data)
        before = self.work()
        thread, stop_w = self._preparing()
        until = time.monotonic() + 30
        while (self.delta(before, 'chunks_prepared') < CHUNKS and
               time.monotonic() < until):
            time.sleep(0.01)
        self.assertEqual(CHUNKS, self.delta(before, 'chunks_prepared'))
        self.engine.flush()
        self.assertEqual(0, self.delta(before, 'compress_calls'))
        rows = self.store.connection.execute(
            'SELECT COUNT(*) FROM chunks').fetchone()[0]
        self.assertEqual(rows, self.delta(before, 'prepared_stored'))
        os.write(stop_w, b'.')
        thread.join(10)
        self.assertFalse(thread.is_alive())
        self.engine.drop_cache()
        self.assertEqual(data, self.engine.read(vol, 0, len(data)))

    def test_prepared_records_are_what_the_batch_would_store(self):
        chunk = self.engine.chunk
        data = test_ingest_shape.mixed(chunk, CHUNKS)
        sizes = []
        for prepare in (False, True):
            vol = self.engine.new_layer(dedup=False)
            self.engine.write(vol, 0, data)
            if prepare:
                self.assertEqual(CHUNKS, self.engine._native.prepare(
                    self.engine.lock, CHUNKS))
            self.engine.flush()
            sizes.append(self.store.connection.execute(
                'SELECT size FROM chunks WHERE id IN (SELECT chunk FROM '
                'maps WHERE layer = ?) ORDER BY id', (vol,)).fetchall())
        self.assertEqual(sizes[0], sizes[1])

    def test_a_chunk_overwritten_while_prepared_is_stored_as_written(self):
        chunk = self.engine.chunk
        vol = self.engine.new_layer()
        self.engine.write(vol, 0, os.urandom(2 * chunk))
        self.engine._native.prepare(self.engine.lock, 2)
        # Written again before the batch: the new content wins.
        newer = os.urandom(chunk)
        self.engine.write(vol, 0, newer)
        before = self.work()
        self.engine.flush()
        self.assertEqual(1, self.delta(before, 'prepared_stored'))
        self.engine.drop_cache()
        self.assertEqual(newer, self.engine.read(vol, 0, chunk))

    def test_the_same_new_chunk_prepared_twice_is_stored_once(self):
        # Two volumes (two connections) write the same new data; both
        # are prepared without the lock before either is stored.
        chunk = self.engine.chunk
        one, two = self.engine.new_layer(), self.engine.new_layer()
        data = os.urandom(chunk)
        self.engine.write(one, 0, data)
        self.engine._native.prepare(self.engine.lock, 1)
        self.engine.write(two, 0, data)
        self.engine._native.prepare(self.engine.lock, 2)
        before = self.work()
        # Stored in two batches, one after the other.
        with self.engine.lock:
            self.engine._settle([(one, 0)])
            self.engine._settle([(two, 0)])
        self.assertEqual(1, self.delta(before, 'prepared_stored'))
        rows = self.store.connection.execute(
            'SELECT refs FROM chunks').fetchall()
        self.assertEqual([(2,)], rows)
        self.assertEqual(data, self.engine.read(two, 0, chunk))

    def test_a_repeated_chunk_is_compressed_once_before_the_batch(self):
        # Its twin's digest finds it in the batch: no record is made.
        chunk = self.engine.chunk
        vol = self.engine.new_layer()
        twice = os.urandom(chunk) * 2
        self.engine.write(vol, 0, twice)
        before = self.work()
        self.engine.settle()
        # Two 512-byte samples of one incompressible chunk, not four.
        self.assertEqual(2, self.delta(before, 'compress_calls_unlocked'))
        self.assertEqual(0, self.delta(before, 'compress_calls'))
        self.assertEqual(twice, self.engine.read(vol, 0, 2 * chunk))
