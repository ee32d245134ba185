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

"""The reference array's storage engine, on a real database file."""

import os
import platform
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
from unittest import mock

import blake3
import fixtures
import testtools
import zstandard

from reference_array.core import chunk_store
from reference_array.core import engine
from reference_array.core import native_engine
from reference_array.core import segments
from reference_array.core import store as metadata
from reference_array import native

CHUNK = engine.DEFAULT_CHUNK
NO_NATIVE = 'native data path: %s' % native.WHY_NOT


def _open_engine(test):
    """An engine over a new store in a temporary directory of ``test``."""
    test.dir = test.useFixture(fixtures.TempDir()).path
    test.store = metadata.Store(os.path.join(test.dir, 'a.db'))
    test.addCleanup(test.store.close)
    test.engine = getattr(test, 'engine_class', engine.Engine)(test.store)


class EngineTestCase(testtools.TestCase):

    engine_class = engine.Engine

    def setUp(self):
        super().setUp()
        _open_engine(self)

    def test_thin_and_unaligned(self):
        vol = self.engine.new_layer()
        self.assertEqual(bytes(5000), self.engine.read(vol, 123456, 5000))
        self.assertEqual(0, self.engine.totals()['physical'])
        data = os.urandom(3 * CHUNK + 77)
        self.engine.write(vol, CHUNK - 5, data)
        self.assertEqual(data, self.engine.read(vol, CHUNK - 5, len(data)))
        self.assertEqual(bytes(CHUNK - 5), self.engine.read(vol, 0,
                                                            CHUNK - 5))

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

    def _stored_maps(self):
        """Map entries in the database file, as a new process sees them."""
        db = sqlite3.connect(os.path.join(self.dir, 'a.db'))
        try:
            return db.execute('SELECT COUNT(*) FROM maps').fetchone()[0]
        finally:
            db.close()

    def test_staged_partial_writes_merge_with_stored_data(self):
        vol = self.engine.new_layer()
        base = os.urandom(2 * CHUNK)
        self.engine.write(vol, 0, base)
        self.engine.flush()
        # Small writes into stored chunks, overlapping each other, before
        # anything has looked at the old content.
        self.engine.write(vol, 100, b'a' * 50)
        self.engine.write(vol, 120, b'b' * 50)
        self.engine.write(vol, CHUNK - 10, b'c' * 20)
        expected = bytearray(base)
        expected[100:150] = b'a' * 50
        expected[120:170] = b'b' * 50
        expected[CHUNK - 10:CHUNK + 10] = b'c' * 20
        self.assertEqual(bytes(expected), self.engine.read(vol, 0, 2 * CHUNK))
        self.engine.write(vol, CHUNK + 500, b'd' * 10)
        expected[CHUNK + 500:CHUNK + 510] = b'd' * 10
        self.engine.flush()
        reopened = self.engine_class(metadata.Store(
            os.path.join(self.dir, 'a.db')))
        self.assertEqual(bytes(expected), reopened.read(vol, 0, 2 * CHUNK))
        reopened.store.close()

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

    def test_staged_writes_are_stored_at_the_limit(self):
        small = self.engine_class(self.store, dirty_limit=4 * CHUNK)
        vol = small.new_layer()
        small.write(vol, 0, os.urandom(3 * CHUNK))
        self.assertEqual(0, self._stored_maps())
        small.write(vol, 3 * CHUNK, os.urandom(CHUNK))
        self.assertEqual(4, self._stored_maps())

    def test_settle_stores_only_writes_that_waited(self):
        vol = self.engine.new_layer()
        self.engine.write(vol, 0, os.urandom(CHUNK))
        self.engine.settle(older_than=3600)
        self.assertEqual(0, self._stored_maps())
        self.engine.settle(older_than=0)
        self.assertEqual(1, self._stored_maps())

    def test_a_rolled_back_transaction_keeps_earlier_writes(self):
        vol = self.engine.new_layer()
        data = os.urandom(CHUNK)
        self.engine.write(vol, 0, data)

        class Refused(Exception):
            pass
        with testtools.ExpectedException(Refused):
            with self.store.transaction():
                self.engine.freeze(vol)
                raise Refused()
        self.engine.flush()
        reopened = self.engine_class(metadata.Store(
            os.path.join(self.dir, 'a.db')))
        self.addCleanup(reopened.store.close)
        self.assertEqual(data, reopened.read(vol, 0, CHUNK))

    def test_a_failed_store_keeps_the_staged_writes(self):
        vol = self.engine.new_layer()
        first, second = os.urandom(CHUNK), os.urandom(CHUNK)
        self.engine.write(vol, 0, first)
        # Where each engine stores a batch.
        seam = ('_store_batch' if hasattr(self.engine, '_store_batch')
                else '_put_blocks')
        with mock.patch.object(self.engine, seam,
                               side_effect=sqlite3.OperationalError(
                                   'database or disk is full')):
            self.assertRaises(engine.NoSpace, self.engine.flush)
        self.assertEqual(0, self._stored_maps())
        self.engine.write(vol, CHUNK, second)
        self.assertEqual(first + second, self.engine.read(vol, 0, 2 * CHUNK))
        self.engine.flush()
        self.assertEqual(2, self._stored_maps())
        self.assertEqual(2 * CHUNK, self.engine.totals()['logical'])

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


class SpaceTestCase(testtools.TestCase):
    """A filesystem that fills: clean refusals, never a stuck store."""

    def setUp(self):
        super().setUp()
        _open_engine(self)
        self.free = 64 * 1024 * 1024
        real = os.statvfs

        def statvfs(path):
            fs = real(path)
            return os.statvfs_result((
                fs.f_bsize, 4096, 65536, self.free // 4096,
                self.free // 4096) + tuple(fs)[5:])
        self.useFixture(fixtures.MockPatch('os.statvfs', statvfs))
        self.engine.reserve = 8 * 1024 * 1024
        self.engine._space_left = None

    def test_data_beyond_the_reserve_is_refused_zeros_are_not(self):
        vol = self.engine.new_layer()
        self.free = self.engine.reserve + 4 * CHUNK
        self.engine._space_left = None
        self.engine.write(vol, 0, os.urandom(2 * CHUNK))
        self.assertRaises(engine.NoSpace, self.engine.write, vol,
                          2 * CHUNK, os.urandom(4 * CHUNK))
        self.assertEqual(1, self.engine.work['writes_refused'])
        # Zeros and UNMAP free space; they always pass.
        self.engine.write(vol, 0, bytes(CHUNK))
        self.engine.unmap(vol, 0, 2 * CHUNK)
        self.assertEqual(bytes(6 * CHUNK), self.engine.read(vol, 0,
                                                            6 * CHUNK))
        # Room again: accepted again.
        self.free = 1 << 30
        self.engine._space_left = None
        self.engine.write(vol, 0, os.urandom(4 * CHUNK))

    def test_space_is_bounded_by_the_filesystem(self):
        self.free = self.engine.reserve + 10 * 1024 * 1024
        total, room = self.engine.space()
        self.assertEqual(10 * 1024 * 1024, room)
        self.assertEqual(self.engine.fs_bytes, total)
        # A pool larger than the filesystem reports what it can hold.
        self.engine.fs_bytes = 64 * 1024 * 1024
        vol = self.engine.new_layer()
        self.engine.write(vol, 0, os.urandom(64 * CHUNK))
        self.engine.flush()
        on_disk = self.engine.disk_bytes()
        self.assertGreater(on_disk, 64 * CHUNK)
        total, free = self.engine.bounded(1 << 40, 64 * CHUNK)
        self.assertEqual(56 * 1024 * 1024, total)
        self.assertEqual(total - on_disk, free)
        self.assertEqual((1 << 20, (1 << 20) - 64 * CHUNK),
                         self.engine.bounded(1 << 20, 64 * CHUNK))

    def test_a_store_that_finds_the_disk_full_keeps_the_writes(self):
        vol = self.engine.new_layer()
        data = os.urandom(2 * CHUNK)
        self.engine.write(vol, 0, data)
        with mock.patch.object(self.engine.segments, 'append',
                               side_effect=OSError(28, 'No space left')):
            self.assertRaises(engine.NoSpace, self.engine.flush)
        self.assertEqual(data, self.engine.read(vol, 0, 2 * CHUNK))
        self.engine.flush()
        self.assertEqual(data, self.engine.read(vol, 0, 2 * CHUNK))


class _FailingCommit(object):
    """A connection whose next COMMIT fails as on a full disk."""

    def __init__(self, db):
        self.db = db
        self.fail = True

    def execute(self, sql, *args):
        if sql == 'COMMIT' and self.fail:
            self.fail = False
            raise sqlite3.OperationalError('database or disk is full')
        return self.db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.db, name)


class StoreTestCase(testtools.TestCase):

    def test_a_failed_commit_leaves_no_transaction_open(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        store = metadata.Store(os.path.join(tmp, 'a.db'))
        self.addCleanup(store.close)
        store._db = _FailingCommit(store._db)
        with testtools.ExpectedException(sqlite3.OperationalError):
            with store.transaction():
                store.put('volumes', 1, {'name': 'lost'})
        self.assertIsNone(store.get('volumes', 1))
        with store.transaction():
            store.put('volumes', 2, {'name': 'kept'})
        self.assertEqual('kept', store.get('volumes', 2)['name'])


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
        self._overwrite(aged, chunks, passes=3)
        offset = 37 * CHUNK + 8192

        def one_read(vol):
            self.engine.drop_cache()
            return self._work(lambda: self.engine.read(vol, offset, 4096))
        first = one_read(fresh)
        self.assertEqual({'map_probes': 1, 'chunks_fetched': 1,
                          'bytes_decompressed': CHUNK}, first)
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


class MigrationTestCase(testtools.TestCase):

    engine_class = engine.Engine

    def test_chunks_with_data_in_the_row_are_moved(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'a.db')
        data = os.urandom(CHUNK)
        packed = zstandard.ZstdCompressor().compress(data)
        db = sqlite3.connect(path, isolation_level=None)
        db.executescript("""
            CREATE TABLE layers (id INTEGER PRIMARY KEY, parent INTEGER,
                                 refs INTEGER NOT NULL,
                                 dedup INTEGER NOT NULL);
            CREATE TABLE maps (layer INTEGER NOT NULL, idx INTEGER NOT NULL,
                               chunk INTEGER NOT NULL,
                               PRIMARY KEY (layer, idx)) WITHOUT ROWID;
            CREATE TABLE chunks (id INTEGER PRIMARY KEY, digest BLOB,
                                 refs INTEGER NOT NULL, raw INTEGER NOT NULL,
                                 data BLOB NOT NULL);
            CREATE INDEX chunks_digest ON chunks(digest)
                WHERE digest IS NOT NULL;
            CREATE TABLE totals (name TEXT PRIMARY KEY,
                                 value INTEGER NOT NULL);
            INSERT INTO layers VALUES (1, NULL, 1, 1);
            INSERT INTO maps VALUES (1, 2, 1);
        """)
        db.execute('INSERT INTO chunks VALUES (1, ?, 1, ?, ?)',
                   (b'd' * 32, CHUNK, packed))
        for name, value in (('physical', len(packed)), ('logical', CHUNK),
                            ('stored_raw', CHUNK)):
            db.execute('INSERT INTO totals VALUES (?, ?)', (name, value))
        db.close()
        store = metadata.Store(path)
        self.addCleanup(store.close)
        eng = self.engine_class(store)
        self.assertEqual(data, eng.read(1, 2 * CHUNK, CHUNK))
        self.assertEqual((CHUNK, len(packed)), eng.usage([1]))
        eng.release(1)
        self.assertEqual({'physical': 0, 'logical': 0, 'stored_raw': 0},
                         eng.totals())


# Every 16 writes the writer makes them durable (flush) or only stored
# (settle), and says how far it got.
WRITER = textwrap.dedent("""
    import os, sys
    from reference_array.core import engine
    from reference_array.core import native_engine
    from reference_array.core import store as metadata
    ENGINES = {'Engine': engine.Engine,
               'NativeEngine': native_engine.NativeEngine}
    store = metadata.Store(sys.argv[1])
    eng = ENGINES[sys.argv[3]](store)
    layer = eng.new_layer()
    print(layer, flush=True)
    n = 0
    while True:
        eng.write(layer, n * 4096, (b'%08d' % n) * 512)
        if n % 16 == 15:
            getattr(eng, sys.argv[2])()
            print(n, flush=True)
        n += 1
""")


class CrashTestCase(testtools.TestCase):

    engine_class = engine.Engine

    def test_flushed_writes_survive_kill_9(self):
        self._crash_and_check('flush')

    def test_stored_writes_survive_kill_9(self):
        self._crash_and_check('settle')

    def _crash_and_check(self, how):
        tmp = self.useFixture(fixtures.TempDir()).path
        db = os.path.join(tmp, 'a.db')
        for _round in range(3):
            if os.path.exists(db):
                os.unlink(db)
            proc = subprocess.Popen([sys.executable, '-c', WRITER, db, how,
                                     self.engine_class.__name__],
                                    stdout=subprocess.PIPE, text=True)
            layer = int(proc.stdout.readline())
            acked = -1
            while acked < 200:
                acked = int(proc.stdout.readline())
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc.stdout.close()
            store = metadata.Store(db)
            eng = self.engine_class(store)
            for n in range(acked + 1):
                self.assertEqual((b'%08d' % n) * 512,
                                 eng.read(layer, n * 4096, 4096), n)
            store.close()


def _on_native(case):
    """``case`` run again on the native data path (reference_array/native)."""
    return testtools.skipUnless(native.AVAILABLE, NO_NATIVE)(type(
        'Native' + case.__name__, (case,),
        {'engine_class': native_engine.NativeEngine}))


NativeEngineTestCase = _on_native(EngineTestCase)
NativeSegmentsTestCase = _on_native(SegmentsTestCase)
NativeMigrationTestCase = _on_native(MigrationTestCase)
NativeCrashTestCase = _on_native(CrashTestCase)


@testtools.skipUnless(native.AVAILABLE, NO_NATIVE)
class NativeFormatTestCase(testtools.TestCase):
    """The native store writes what the Python engine reads, and back."""

    def test_digest_is_blake3(self):
        for size in (0, 1, 64, 1023, 1024, 1025, 4096, 5000, CHUNK):
            data = os.urandom(size)
            self.assertEqual(blake3.blake3(data).digest(),
                             native._native.blake3(data), size)

    def test_chunks_stored_as_they_are_read_by_either_engine(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'a.db')
        data = {}
        for writer in (native_engine.NativeEngine, engine.Engine):
            store = metadata.Store(path)
            eng = writer(store)
            layer = data.setdefault('layer', eng.new_layer())
            data[writer] = os.urandom(2 * CHUNK)
            eng.write(layer, len(data) * 2 * CHUNK, data[writer])
            eng.close()
            store.close()
        for reader in (native_engine.NativeEngine, engine.Engine):
            store = metadata.Store(path)
            eng = reader(store)
            self.assertEqual(
                data[native_engine.NativeEngine] + data[engine.Engine],
                eng.read(data['layer'], 4 * CHUNK, 4 * CHUNK))
            self.assertEqual(4 * CHUNK, eng.usage([data['layer']])[1])
            eng.close()
            store.close()

    def test_each_engine_reads_what_the_other_wrote(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'a.db')
        image = {}
        for writer in (native_engine.NativeEngine, engine.Engine,
                       native_engine.NativeEngine):
            store = metadata.Store(path)
            eng = writer(store)
            layer = image.setdefault('layer', eng.new_layer())
            for _n in range(64):
                offset = random.randrange(256) * 4096
                data = os.urandom(2048) * 2
                eng.write(layer, offset, data)
                image[offset] = data
            eng.close()
            store.close()
            store = metadata.Store(path)
            other = (engine.Engine if writer is not engine.Engine
                     else native_engine.NativeEngine)(store)
            for offset, data in image.items():
                if offset != 'layer':
                    self.assertEqual(data, other.read(layer, offset, 4096))
            other.close()
            store.close()


@testtools.skipUnless(native.AVAILABLE, NO_NATIVE)
class NativeRoomTestCase(SpaceTestCase):
    """Connections' data paths stage only the room the engine granted."""

    engine_class = native_engine.NativeEngine

    def test_room_is_granted_from_what_is_free_above_the_reserve(self):
        vol = self.engine.new_layer()
        self.assertEqual(0, self.engine._native.room)
        self.free = self.engine.reserve + 4 * CHUNK
        self.engine._space_left = None
        self.engine.write(vol, 0, os.urandom(2 * CHUNK))
        # What is left above the reserve, less what was just staged.
        self.assertEqual(2 * CHUNK, self.engine._native.room)
        # The engine takes it back before it accepts a write itself.
        self.assertRaises(engine.NoSpace, self.engine.write, vol,
                          2 * CHUNK, os.urandom(4 * CHUNK))
        self.assertEqual(0, self.engine._native.room)

    def test_a_failed_store_takes_the_room_back(self):
        vol = self.engine.new_layer()
        self.engine.write(vol, 0, os.urandom(CHUNK))
        self.assertGreater(self.engine._native.room, 0)
        with mock.patch.object(self.engine.segments, 'append',
                               side_effect=OSError(28, 'No space left')):
            self.assertRaises(engine.NoSpace, self.engine.flush)
        self.assertEqual(0, self.engine._native.room)
        self.assertIsNone(self.engine._space_left)

    def test_built_for_this_python_and_sqlite(self):
        self.assertEqual(platform.python_version(),
                         native._native.PYTHON_VERSION)
        self.assertEqual(sqlite3.sqlite_version,
                         native._native.SQLITE_VERSION)
