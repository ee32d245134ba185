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

"""The engine's write-back cache: staged writes merge with stored data,
are stored at the limit or once they waited, and outlive a failed store
or a rolled-back transaction."""

import os
import sqlite3
from unittest import mock

import testtools

from reference_array.core import engine
from reference_array.core import store as metadata
from reference_array.tests import engine_fixture

CHUNK = engine_fixture.CHUNK


class StagingTestCase(engine_fixture.EngineTestCase):

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


NativeStagingTestCase = engine_fixture.on_native(StagingTestCase)
