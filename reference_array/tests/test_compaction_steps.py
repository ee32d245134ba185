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

"""Segment compaction in bounded steps outside a write's batch, counted
(never timed): a batch a write waits for compacts nothing; the main
loop's steps move a bounded number of records each, one a look of the
main loop while the host only reads; a crash between steps loses
nothing.
"""

import os

import fixtures
import testtools

from reference_array.core import engine
from reference_array.core import segments
from reference_array.core import store as metadata
from reference_array.tests import engine_fixture

CHUNK = engine_fixture.CHUNK
CHUNKS = 64
# Two records of unique chunks a step.
RECORDS = 2
STEP = RECORDS * (segments.HEADER.size + CHUNK)


class CompactionStepsTestCase(testtools.TestCase):

    engine_class = engine.Engine

    def setUp(self):
        super().setUp()
        self.path = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'a.db')
        self.store = metadata.Store(self.path)
        self.engine = self.engine_class(self.store)
        self.addCleanup(self._close)
        self.engine.segments.segment_bytes = 256 * 1024

    def _close(self):
        self.engine.segments.close()
        self.store.close()

    def _sparse(self):
        """A volume whose first segments are a quarter live: its image."""
        vol = self.vol = self.engine.new_layer()
        image = [os.urandom(CHUNK) for _ in range(CHUNKS)]
        self.engine.write(vol, 0, b''.join(image))
        self.engine.flush()
        for idx in range(CHUNKS):
            if idx % 4:
                image[idx] = os.urandom(CHUNK)
                self.engine.write(vol, idx * CHUNK, image[idx])
        with self.engine.lock:
            self.engine._settle()
        self.assertIsNotNone(self.engine.segments.sparse())
        return image

    def _check(self, image):
        self.engine.drop_cache()
        self.assertEqual(b''.join(image),
                         self.engine.read(self.vol, 0, CHUNKS * CHUNK))

    def test_a_write_batch_compacts_nothing(self):
        image = self._sparse()
        before = dict(self.engine.work)
        for idx in range(0, CHUNKS, 4):
            image[idx] = os.urandom(CHUNK)
            self.engine.write(self.vol, idx * CHUNK, image[idx])
            # A batch as a write that finds the cache full stores it.
            with self.engine.lock:
                self.engine._settle()
        for kind in ('compaction_steps', 'segments_compacted'):
            self.assertEqual(before.get(kind, 0), self.engine.work[kind],
                             kind)
        self._check(image)

    def test_the_main_loop_compacts_in_bounded_steps(self):
        image = self._sparse()
        live = sum(1 for idx in range(CHUNKS) if not idx % 4)
        before = dict(self.engine.work)
        moved = []
        append = self.engine.segments.append

        def counting(records):
            moved.append(len(records))
            return append(records)
        self.engine.segments.append = counting
        steps = self.engine.compact_some(seconds=60, step=STEP)
        self.engine.segments.append = append
        self.assertIsNone(self.engine.segments.sparse())
        self.assertGreaterEqual(self.engine.work['segments_compacted'] -
                                before.get('segments_compacted', 0), 1)
        # No step moved more than its bound; every live record moved.
        self.assertLessEqual(max(moved), RECORDS)
        self.assertGreaterEqual(sum(moved), live // 2)
        self.assertGreaterEqual(steps, sum(moved) // RECORDS)
        self._check(image)
        self.engine.flush()
        self._check(image)

    def test_a_look_takes_one_step_of_each_while_the_host_only_reads(self):
        image = self._sparse()
        budgets = {}

        def recorder(name):
            def record(seconds, **kwargs):
                budgets[name] = seconds
                return 0
            return record
        for name in ('merge_patches', 'compact_some'):
            self.useFixture(fixtures.MockPatchObject(
                self.engine, name, recorder(name)))

        def look():
            budgets.clear()
            self.engine.settle(older_than=60)
            return dict(budgets)
        full = {'merge_patches': engine.MERGE_SECONDS,
                'compact_some': engine.COMPACT_SECONDS}
        one_step = dict.fromkeys(full, 0.0)
        self.assertEqual(full, look())
        self.engine.read(self.vol, 0, 4096)
        self.assertEqual(one_step, look())
        self.engine.read(self.vol, CHUNK, 4096)
        self.assertEqual(one_step, look())
        # Nothing since: the whole time again.
        self.assertEqual(full, look())
        # Reads and a write: the write's patches and garbage count.
        self.engine.read(self.vol, 0, 4096)
        self.engine.write(self.vol, 0, image[0])
        self.engine.flush()
        self.assertEqual(full, look())
        self._check(image)

    def test_a_crash_between_steps_loses_nothing(self):
        image = self._sparse()
        with self.engine.lock:
            for _step in range(3):
                self.engine.chunks.compact_step(
                    self.engine._own_transaction, STEP)
        seg = self.engine.chunks._compacting[0]
        # The process ends with a segment half compacted, nothing flushed
        # after the steps (its page cache holds what they wrote).
        self._close()
        self.store = metadata.Store(self.path)
        self.engine = self.engine_class(self.store)
        self.assertIn(seg, self.engine.segments.sizes)
        self._check(image)
        # Found sparse again, and finished; its file goes at the flush.
        self.engine.compact_some(seconds=60, step=STEP)
        self.assertIsNone(self.engine.segments.sparse())
        self.engine.flush()
        self.assertNotIn(seg, self.engine.segments.sizes)
        self._check(image)


NativeCompactionStepsTestCase = engine_fixture.on_native(
    CompactionStepsTestCase)
