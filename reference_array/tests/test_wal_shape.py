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

"""What a random write costs the database's log, counted (never timed).

A new unique chunk adds its digest at a random place of the digest
index, and a 4 KiB write logged into a stored chunk adds its patch row
at a random place of the patch log; each dirties one page, which goes
whole to the WAL (``store.PAGE_SIZE`` says why the pages are small;
the benchmarks page has the figures). The bounds hold with 1 KiB pages
and fail with 2 KiB or 4 KiB ones.
"""

import os
import random

import fixtures
import testtools

from reference_array.core import engine as engine_mod
from reference_array.core import native_engine
from reference_array.core import store as metadata
from reference_array import native
from reference_array.tests import engine_fixture

# Stored before the measured writes, so that the digest index and the
# patch log span many more pages than one batch touches.
STORED = 8192
MEASURED = 1024
BATCH = 32
# Pages written to the WAL per random write, in bytes (frames times the
# page size; with 1 KiB pages about 2.1 KiB and 1.2 KiB).
NEW_CHUNK_BOUND = 2560
LOGGED_SLOT_BOUND = 1536


@testtools.skipUnless(native.AVAILABLE, engine_fixture.NO_NATIVE)
class WalBytesTestCase(testtools.TestCase):

    engine_class = native_engine.NativeEngine

    def setUp(self):
        super().setUp()
        self.random = random.Random(19)

    def _engine(self, chunk):
        # Stored a batch at a time as writes come, as a connection stores
        # them when it finds the cache full; batches much smaller than the
        # tables, as the cache is much smaller than a volume's maps.
        engine_fixture.open_engine(self, chunk_size=chunk,
                                   dirty_limit=2 * BATCH * chunk,
                                   batch=BATCH)
        # No checkpoint restarts the log while it is counted (on a small
        # filesystem the engine checkpoints sooner).
        self.store.connection.execute('PRAGMA wal_autocheckpoint=0')
        return self.engine

    def _data(self, size):
        return self.random.randbytes(size)

    def _wal_bytes(self, write):
        """Page bytes ``write`` and the flush after it add to the WAL."""
        db = self.store.connection
        with self.store.lock:
            busy, frames, _done = db.execute(
                'PRAGMA wal_checkpoint(TRUNCATE)').fetchone()
        self.assertEqual((0, 0), (busy, frames))
        write()
        self.engine.flush()
        with self.store.lock:
            _busy, frames, _done = db.execute(
                'PRAGMA wal_checkpoint(PASSIVE)').fetchone()
        page = db.execute('PRAGMA page_size').fetchone()[0]
        return frames * page

    def test_a_new_store_has_1_kib_pages(self):
        self._engine(engine_fixture.CHUNK)
        self.assertEqual(1024, self.store.connection.execute(
            'PRAGMA page_size').fetchone()[0])

    def test_a_store_made_with_big_pages_keeps_them_and_its_data(self):
        # A database created before keeps its page size (SQLite changes it
        # only on a new file), everything in it, and a log checkpointed at
        # the same size in bytes.
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'old.db')
        self.useFixture(fixtures.MockPatchObject(metadata, 'PAGE_SIZE',
                                                 4096))
        old = metadata.Store(path)
        engine = native_engine.NativeEngine(old)
        vol = engine.new_layer()
        data = self._data(4 * engine_fixture.CHUNK)
        engine.write(vol, 0, data)
        engine.close()
        old.close()
        self.useFixture(fixtures.MockPatchObject(metadata, 'PAGE_SIZE',
                                                 1024))
        self.store = metadata.Store(path)
        self.addCleanup(self.store.close)
        engine = native_engine.NativeEngine(self.store)
        self.addCleanup(engine.close)
        db = self.store.connection
        self.assertEqual(4096, db.execute('PRAGMA page_size').fetchone()[0])
        fs = os.statvfs(os.path.dirname(path))
        self.assertEqual(
            max(100, min(engine_mod.WAL_CHECKPOINT,
                         fs.f_blocks * fs.f_frsize // 16) // 4096),
            db.execute('PRAGMA wal_autocheckpoint').fetchone()[0])
        self.assertEqual(data, engine.read(vol, 0, len(data)))
        engine.write(vol, 4096, data[:4096])
        engine.flush()
        self.assertEqual(data[:4096] * 2, engine.read(vol, 0, 8192))

    def test_new_unique_chunks_cost_less_than_a_big_page_each(self):
        # 4 KiB chunks: the index is what grows, the data stays small.
        engine = self._engine(4096)
        vol = engine.new_layer()
        engine.write(vol, 0, self._data(STORED * 4096))
        engine.flush()
        base = STORED * 4096

        def write():
            for i in range(MEASURED):
                engine.write(vol, base + i * 4096, self._data(4096))
        per_chunk = self._wal_bytes(write) / MEASURED
        self.assertLessEqual(per_chunk, NEW_CHUNK_BOUND)
        self.assertEqual(STORED + MEASURED, self.store.connection.execute(
            'SELECT COUNT(*) FROM chunks WHERE digest IS NOT NULL'
        ).fetchone()[0])

    def test_4k_writes_logged_at_random_cost_less_than_a_big_page_each(self):
        chunk = 8192
        engine = self._engine(chunk)
        vol = engine.new_layer()
        engine.write(vol, 0, self._data(STORED * chunk))
        engine.flush()
        # Every chunk gets a logged first slot: the log spans the table.
        for i in range(STORED):
            engine.write(vol, i * chunk, self._data(4096))
        engine.flush()
        picked = self.random.sample(range(STORED), MEASURED)

        def write():
            for i in picked:
                engine.write(vol, i * chunk + 4096, self._data(4096))
        before = engine.work['patches_logged']
        per_write = self._wal_bytes(write) / MEASURED
        self.assertEqual(MEASURED, engine.work['patches_logged'] - before)
        self.assertLessEqual(per_write, LOGGED_SLOT_BOUND)
