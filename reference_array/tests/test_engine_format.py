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

"""The stored format: an older database is migrated, and the native and
Python data paths each read what the other wrote."""

import os
import random
import sqlite3

import blake3
import fixtures
import testtools
import zstandard

from reference_array.core import engine
from reference_array.core import native_engine
from reference_array.core import segments
from reference_array.core import store as metadata
from reference_array import native
from reference_array.tests import engine_fixture

CHUNK = engine_fixture.CHUNK


def _filled(test, engine_class, patched=False):
    """(database path, layer, its image) of a store of 8 chunks written
    by ``engine_class``, their first 4 KiB written again if ``patched``.
    """
    path = os.path.join(test.useFixture(fixtures.TempDir()).path, 'a.db')
    store = metadata.Store(path)
    eng = engine_class(store)
    layer = eng.new_layer()
    image = bytearray(os.urandom(8 * CHUNK))
    eng.write(layer, 0, bytes(image))
    eng.flush()
    for idx in range(8 if patched else 0):
        patch = os.urandom(4096)
        image[idx * CHUNK:idx * CHUNK + 4096] = patch
        eng.write(layer, idx * CHUNK, patch)
    eng.close()
    store.close()
    return path, layer, image


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

    def test_a_store_without_the_patch_log_gets_it(self):
        path, layer, data = _filled(self, self.engine_class)
        # The format before the patch log: the same, without its table.
        db = sqlite3.connect(path, isolation_level=None)
        db.execute('DROP TABLE patches')
        db.close()
        store = metadata.Store(path)
        self.addCleanup(store.close)
        eng = self.engine_class(store)
        for idx in range(8):
            patch = os.urandom(4096)
            data[idx * CHUNK + 4096:idx * CHUNK + 8192] = patch
            eng.write(layer, idx * CHUNK + 4096, patch)
        eng.flush()
        self.assertEqual(bytes(data), eng.read(layer, 0, 8 * CHUNK))
        eng.release(layer)
        self.assertEqual({'physical': 0, 'logical': 0, 'stored_raw': 0},
                         eng.totals())
        self.assertEqual((0,), store.connection.execute(
            'SELECT COUNT(*) FROM patches').fetchone())


NativeMigrationTestCase = engine_fixture.on_native(MigrationTestCase)


@testtools.skipUnless(native.AVAILABLE, engine_fixture.NO_NATIVE)
class NativeFormatTestCase(testtools.TestCase):
    """The native store writes what the Python engine reads, and back."""

    def test_digest_is_blake3(self):
        # The CPU's SIMD lanes (AVX2 where it has them) and the portable
        # ones: eight whole 1 KiB nodes at a time, the rest one by one.
        sizes = (0, 1, 64, 1023, 1024, 1025, 4096, 5000, 8191, 8192, 8193,
                 9 * 1024 + 1, CHUNK - 1, CHUNK, CHUNK + 1, 64 * 1024 - 1,
                 64 * 1024)
        for size in sizes:
            data = os.urandom(size)
            for simd in (True, False):
                self.assertEqual(blake3.blake3(data).digest(),
                                 native._native.blake3(data, simd=simd),
                                 (size, simd))

    def test_one_segment_record_header(self):
        # The native store's records are read by segments.py, which
        # refuses to load beside a native store of another header.
        self.assertEqual(segments.HEADER.size, native._native.RECORD_HEADER)

    def test_digest_lanes_chosen_for_the_cpu(self):
        with open('/proc/cpuinfo') as f:
            flags = f.read().split()
        want = 'avx2' if 'avx2' in flags and os.uname().machine == \
            'x86_64' else ''
        self.assertEqual(want, native._native.BLAKE3_SIMD)

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

    def test_logged_slots_are_records_a_segment_scan_finds(self):
        # Recovery and compaction find records by their headers: each
        # logged slot's is its chunk id and length, where its row says.
        path, layer, image = _filled(self, native_engine.NativeEngine,
                                     patched=True)
        store = metadata.Store(path)
        self.addCleanup(store.close)
        eng = native_engine.NativeEngine(store)
        self.addCleanup(eng.close)
        rows = store.connection.execute(
            'SELECT c.id, c.seg, c.off, c.size FROM patches p '
            'JOIN chunks c ON c.id = p.chunk').fetchall()
        self.assertEqual(8, len(rows))
        for seg in {row[1] for row in rows}:
            found = set(eng.segments.records(seg)[0])
            for chunk, at, off, size in rows:
                if at == seg:
                    self.assertIn((chunk, off, size), found)
        self.assertEqual(bytes(image), eng.read(layer, 0, 8 * CHUNK))

    def test_the_python_engine_reads_and_replaces_logged_patches(self):
        path, layer, image = _filled(self, native_engine.NativeEngine,
                                     patched=True)
        store = metadata.Store(path)
        self.addCleanup(store.close)
        self.assertEqual((8,), store.connection.execute(
            'SELECT COUNT(*) FROM patches').fetchone())
        eng = engine.Engine(store)
        self.assertEqual(bytes(image), eng.read(layer, 0, 8 * CHUNK))
        # Whole chunks, a patch over a logged chunk, UNMAP, a merge: each
        # drops what it replaces.
        eng.write(layer, 0, os.urandom(CHUNK))
        eng.write(layer, CHUNK + 8192, os.urandom(100))
        eng.unmap(layer, 2 * CHUNK, 2 * CHUNK)
        eng.flush()
        self.assertEqual(4, eng.merge_patches())
        self.assertEqual((0,), store.connection.execute(
            'SELECT COUNT(*) FROM patches').fetchone())
        self.assertEqual(bytes(image[4 * CHUNK:]),
                         eng.read(layer, 4 * CHUNK, 4 * CHUNK))
        eng.release(layer)
        self.assertEqual({'physical': 0, 'logical': 0, 'stored_raw': 0},
                         eng.totals())

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
