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

"""What a batch costs under the engine's lock, the engine alone.

CPU-seconds of the storing thread (``time.thread_time``, so the figure
does not move with the machine's load), per batch of 128 whole 16 KiB
chunks of fio-like mixed data (half compressible, unique and repeated,
``test_ingest_shape.mixed``) stored on the native engine the way a
connection that finds the write-back cache full stores it: with the
digests and compression made before, without the lock (``prepare``), or
inside the batch (``--inline``, the code before). Then a half-live
16 MiB segment compacted whole under the lock against the longest of
its bounded steps (``compact_some``).

    python tools/bench_lock.py [--batches N]
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from reference_array.core import engine as engine_mod  # noqa: E402
from reference_array.core import native_engine  # noqa: E402
from reference_array.core import store as metadata  # noqa: E402
from reference_array.tests import test_ingest_shape  # noqa: E402


def batches(eng, count, prepare):
    vol = eng.new_layer()
    chunk, size = eng.chunk, eng._batch
    held = unlocked = 0.0
    for n in range(count):
        data = test_ingest_shape.mixed(chunk, size)
        eng.write(vol, n * size * chunk, data)
        if prepare:
            started = time.thread_time()
            eng._native.prepare(eng.lock, size)
            unlocked += time.thread_time() - started
        started = time.thread_time()
        with eng.lock:
            eng._settle(eng._native.staged_keys(size))
        held += time.thread_time() - started
    return held / count, unlocked / count


def _sparse_segment(eng, vol):
    """Segments of mixed data of which 60% is then overwritten."""
    chunk = eng.chunk
    per_segment = 2 * eng.segments.segment_bytes // chunk
    with eng.lock:
        eng._settle()
    eng.segments.current = None
    eng.write(vol, 0, test_ingest_shape.mixed(chunk, per_segment))
    with eng.lock:
        eng._settle()
        for idx in range(per_segment):
            if idx % 5 < 3:
                eng._stage(vol, idx * chunk,
                           test_ingest_shape.mixed(chunk, 1))
        eng._settle()
    return eng.segments.sparse()


def compaction(eng):
    """(CPU-s of one whole compaction, of the longest step, steps)."""
    vol = eng.new_layer()
    seg = _sparse_segment(eng, vol)
    started = time.thread_time()
    with eng.lock:
        eng._compact(seg)
    whole = time.thread_time() - started
    _sparse_segment(eng, vol)
    longest, steps = 0.0, 0
    while True:
        started = time.thread_time()
        with eng.lock:
            more = eng.chunks.compact_step(eng._own_transaction,
                                           engine_mod.COMPACT_STEP)
        longest = max(longest, time.thread_time() - started)
        steps += more
        if not more:
            return whole, longest, steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--batches', type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, prepare in (('inline', False), ('prepared', True)):
            store = metadata.Store(os.path.join(tmp, name + '.db'))
            eng = native_engine.NativeEngine(store)
            held, unlocked = batches(eng, args.batches, prepare)
            work = eng.work
            print('%-9s under the lock %6.2f ms, before it %6.2f ms CPU per '
                  'batch of %d; zstd calls under the lock %d, without %d'
                  % (name, held * 1e3, unlocked * 1e3, eng._batch,
                     work['compress_calls'],
                     work['compress_calls_unlocked']))
            if prepare:
                whole, step, steps = compaction(eng)
                print('compaction of a 16 MiB segment, CPU under the lock: '
                      'whole %.1f ms; %d steps of %d KiB, the longest '
                      '%.1f ms' % (whole * 1e3, steps,
                                   engine_mod.COMPACT_STEP // 1024,
                                   step * 1e3))
            store.close()


if __name__ == '__main__':
    main()
