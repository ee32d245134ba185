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

"""Durability: what a writer killed with SIGKILL acknowledged reads back,
and a failed commit leaves the store usable."""

import collections
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import fixtures
import testtools

from reference_array.core import engine
from reference_array.core import store as metadata
from reference_array.tests import engine_fixture


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


# Every 16 writes the writer makes them durable (flush) or only stored
# (settle), and says how far it got.
# Both writers: the database and engine class, from argv[1] and argv[3].
WRITER_ENGINE = textwrap.dedent("""
    import os, sys
    from reference_array.core import engine
    from reference_array.core import native_engine
    from reference_array.core import store as metadata
    ENGINES = {'Engine': engine.Engine,
               'NativeEngine': native_engine.NativeEngine}
    store = metadata.Store(sys.argv[1])
    eng = ENGINES[sys.argv[3]](store)
    layer = eng.new_layer()
""")
WRITER = WRITER_ENGINE + textwrap.dedent("""
    print(layer, flush=True)
    n = 0
    while True:
        eng.write(layer, n * 4096, (b'%08d' % n) * 512)
        if n % 16 == 15:
            getattr(eng, sys.argv[2])()
            print(n, flush=True)
        n += 1
""")


# 4 KiB overwrites of stored chunks, scattered (on the native data path
# they go to the patch log), made durable every 16 writes and merged
# every third time (``merge`` printed first: the kill may land in it).
SLOTS = 256
PATCH_WRITER = WRITER_ENGINE + textwrap.dedent("""
    eng.write(layer, 0, b''.join(b'fill%04d' % i * 512
                                 for i in range(SLOTS)))
    eng.flush()
    print(layer, flush=True)
    n = 0
    while True:
        eng.write(layer, (n * 97 % SLOTS) * 4096, (b'%08d' % n) * 512)
        if n % 16 == 15:
            eng.flush()
            print(n, flush=True)
            if n % 48 == 47:
                print('merge', flush=True)
                eng.merge_patches()
        n += 1
""").replace('SLOTS', str(SLOTS))


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

    def test_flushed_overwrites_survive_kill_9_in_a_merge(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        db = os.path.join(tmp, 'a.db')
        for round_ in range(3):
            if os.path.exists(db):
                os.unlink(db)
            proc = subprocess.Popen([sys.executable, '-c', PATCH_WRITER, db,
                                     'flush', self.engine_class.__name__],
                                    stdout=subprocess.PIPE, text=True)
            layer = int(proc.stdout.readline())
            acked = -1
            # Killed at once after a merge began, or a little later.
            while True:
                line = proc.stdout.readline().strip()
                if line == 'merge':
                    if acked >= 400 + 48 * round_:
                        break
                    continue
                acked = int(line)
            if round_:
                time.sleep(0.001 * round_)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc.stdout.close()
            # The last acknowledged write of each slot; a slot written
            # again after it may hold either.
            expected, later = {}, collections.defaultdict(set)
            for n in range(acked + 1):
                expected[n * 97 % SLOTS] = (b'%08d' % n) * 512
            for n in range(acked + 1, acked + 64):
                later[n * 97 % SLOTS].add((b'%08d' % n) * 512)
            store = metadata.Store(db)
            eng = self.engine_class(store)
            for slot in range(SLOTS):
                got = eng.read(layer, slot * 4096, 4096)
                want = expected.get(slot, b'fill%04d' % slot * 512)
                if got != want:
                    self.assertIn(got, later[slot], slot)
            store.close()


NativeCrashTestCase = engine_fixture.on_native(CrashTestCase)
