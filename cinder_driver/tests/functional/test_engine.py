"""The reference array's storage engine, on a real database file."""

import os
import signal
import subprocess
import sys
import textwrap

import fixtures
import testtools

from reference_array import engine
from reference_array import metadata

CHUNK = engine.DEFAULT_CHUNK


class EngineTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.store = metadata.MetadataStore(os.path.join(self.dir, 'a.db'))
        self.addCleanup(self.store.close)
        self.engine = engine.Engine(self.store)

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


WRITER = textwrap.dedent("""
    import os, sys
    from reference_array import engine, metadata
    store = metadata.MetadataStore(sys.argv[1])
    eng = engine.Engine(store)
    layer = eng.new_layer()
    print(layer, flush=True)
    n = 0
    while True:
        eng.write(layer, n * 4096, (b'%08d' % n) * 512)
        if n % 16 == 15:
            eng.flush()
            print(n, flush=True)
        n += 1
""")


class CrashTestCase(testtools.TestCase):

    def test_flushed_writes_survive_kill_9(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        db = os.path.join(tmp, 'a.db')
        for _round in range(3):
            if os.path.exists(db):
                os.unlink(db)
            proc = subprocess.Popen([sys.executable, '-c', WRITER, db],
                                    stdout=subprocess.PIPE, text=True)
            layer = int(proc.stdout.readline())
            acked = -1
            while acked < 200:
                acked = int(proc.stdout.readline())
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc.stdout.close()
            store = metadata.MetadataStore(db)
            eng = engine.Engine(store)
            for n in range(acked + 1):
                self.assertEqual((b'%08d' % n) * 512,
                                 eng.read(layer, n * 4096, 4096), n)
            store.close()
