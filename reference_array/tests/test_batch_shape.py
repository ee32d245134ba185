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

"""What one batch of the native store holds while it has the engine's
lock, counted (never timed): ``SETTLE_BATCH`` chunks at most, of them
``SETTLE_PATCHED`` partly written ones, which are read and patched under
the lock; whole chunks were prepared before it.
"""

import os

from reference_array.core import engine as engine_mod
from reference_array.core import native_engine
from reference_array.tests import engine_fixture
from reference_array.tests import test_ingest_shape

SLOT = 4096


@engine_fixture.on_native
class BatchShapeTestCase(engine_fixture.EngineTestCase):

    engine_class = native_engine.NativeEngine

    def _batches(self):
        """The number of keys of each batch stored from now on."""
        sizes = []
        store_batch = self.engine._store_batch

        def counting(keys):
            sizes.append(None if keys is None else len(keys))
            return store_batch(keys)
        self.engine._store_batch = counting
        return sizes

    def _stored(self, count):
        """A layer of ``count`` stored chunks, and its data."""
        data = test_ingest_shape.mixed(self.engine.chunk, count)
        return engine_fixture.stored(self.engine, data), bytearray(data)

    def _patch_each(self, vol, data, count):
        """One 4 KiB slot of each of ``count`` stored chunks written."""
        chunk = self.engine.chunk
        for n in range(count):
            at = n * chunk + SLOT * (n % (chunk // SLOT))
            slot = os.urandom(SLOT)
            data[at:at + SLOT] = slot
            self.engine.write(vol, at, slot)

    def test_the_main_loop_stores_few_partly_written_chunks_a_batch(self):
        count = engine_mod.SETTLE_PATCHED * 3 + 5
        vol, data = self._stored(count)
        self._patch_each(vol, data, count)
        sizes = self._batches()
        self.engine.settle()
        self.assertEqual([engine_mod.SETTLE_PATCHED] * 3 + [5], sizes)
        self.engine.drop_cache()
        self.assertEqual(bytes(data), self.engine.read(vol, 0, len(data)))

    def test_the_main_loop_stops_once_others_stored_what_it_would(self):
        # A flush, a REST transaction or a connection's batch may store
        # the oldest chunks while the main loop stores them too: it then
        # stops, not looking once for each chunk it meant to store.
        count = engine_mod.SETTLE_PATCHED * 3
        vol, data = self._stored(count)
        self._patch_each(vol, data, count)
        looks = []
        next_batch = self.engine._next_batch

        def stored_meanwhile(ready=False):
            looks.append(ready)
            if len(looks) == 2:
                self.engine._settle()
            return next_batch(ready)
        self.engine._next_batch = stored_meanwhile
        self.engine.settle()
        self.assertEqual(2, len(looks))
        self.engine.drop_cache()
        self.assertEqual(bytes(data), self.engine.read(vol, 0, len(data)))

    def test_whole_chunks_go_in_full_batches(self):
        count = engine_mod.SETTLE_BATCH * 2 + 7
        vol = self.engine.new_layer()
        data = test_ingest_shape.mixed(self.engine.chunk, count)
        self.engine.write(vol, 0, data)
        sizes = self._batches()
        self.engine.settle()
        self.assertEqual([engine_mod.SETTLE_BATCH] * 2 + [7], sizes)
        self.engine.drop_cache()
        self.assertEqual(data, self.engine.read(vol, 0, len(data)))

    def test_a_write_that_finds_the_cache_full_stores_few_patched(self):
        # A cache of 2.5 bounds of partly written chunks: the write that
        # fills it stores the oldest 32, not all of them, before it is
        # answered.
        limit = engine_mod.SETTLE_PATCHED * 5 // 2
        engine_fixture.open_engine(
            self, dirty_limit=limit * engine_fixture.CHUNK)
        vol, data = self._stored(limit)
        sizes = self._batches()
        self._patch_each(vol, data, limit)
        self.assertEqual([engine_mod.SETTLE_PATCHED], sizes)
        self.engine.flush()
        self.engine.drop_cache()
        self.assertEqual(bytes(data), self.engine.read(vol, 0, len(data)))
