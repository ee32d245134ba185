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

"""The storage engine: thin, deduplicated, compressed, copy-on-write.

Storage model
-------------
* A volume's address space is cut into fixed chunks. A *layer* maps chunk
  indexes to stored chunks; a layer may have a parent, and a chunk absent
  from a layer is read from its ancestors (copy-on-write). Chunk id 0 in
  a map means "zeros", masking whatever an ancestor holds.
* Snapshots freeze a volume's layer and give the volume a new empty layer
  on top; views and clones are new layers over a frozen one. All of these
  cost the same whatever the amount of data written.
* Stored chunks are zstd-compressed. Chunks written to deduplicating
  volumes are indexed by their BLAKE3 digest and shared; every map entry
  holds one reference, and a chunk is freed with its last reference.
* Layers, maps and chunk rows live in the array's SQLite database;
  compressed chunk data lives in append-only segment files beside it
  (``segments``), written before the rows that point at it commit and
  made durable before any durable commit, so a crash never leaves a map
  entry without its data. Chunks stored before segments existed keep
  their data in the ``chunk_data`` table and are read from there.
* The array has a write-back cache, as K2 has (MODE SENSE says WCE=1):
  data-path writes are staged in memory as whole chunks and settled into
  the database in batches, which costs one transaction per batch instead
  of one per write. ``flush`` (SYNCHRONIZE CACHE, FUA) settles and makes
  everything durable; anything that reads the maps or changes the layer
  tree settles first, so only the data path ever sees staged chunks.
  Staged writes are stored before any transaction begins, never inside
  one; writes made inside a caller's transaction are stored within it.
  The array's main loop stores writes that have waited a few seconds.

Where each part lives
---------------------
``Engine`` (here) holds the lock, decides when staged writes are stored
and when anything is made durable, and answers the array's calls. Its
parts, each composed in: ``layers`` (the layer tree and what layers
hold), ``chunk_store`` (compressed, deduplicated chunks, their
references and compaction), ``staging`` (the write-back cache and the
read path over it), ``allocation`` (GET LBA STATUS), ``space`` (the
reserve and a full disk), ``engine_tables`` (its tables and their
migrations), ``accounts`` (bytes written per named set of layers),
``segments`` (the files chunk data lives in), ``unmap`` (the map
entries one step of an UNMAP drops or masks). The native data
path (``native_engine``) replaces staging, reads and storing batches,
on the same files.
"""

import collections
import contextlib
import functools
import itertools
import os
import time

from reference_array.core import accounts
from reference_array.core import allocation
from reference_array.core import chunk_store
from reference_array.core import engine_tables
from reference_array.core import layers as layers_mod
from reference_array.core import patch_log
from reference_array.core import segments as segments_mod
from reference_array.core import space as space_mod
from reference_array.core import staging as staging_mod
from reference_array.core import unmap as unmap_mod

DEFAULT_CHUNK = 16 * 1024
ZERO = 0
# Staged writes settle once this much is waiting; decompressed chunks are
# kept up to this much for reads. Both bound the array's memory.
DIRTY_LIMIT = 32 * 1024 * 1024
PAGE_CACHE = 64 * 1024 * 1024
WAL_CHECKPOINT = 64 * 1024 * 1024
# Chunks stored per data-path transaction once the limit is reached: the
# write that finds the cache full waits for this many, not for all.
SETTLE_BATCH = 128
# Of those, partly written chunks at most (native store): each is read
# and patched, or logged, under the lock, where a whole chunk was
# digested and compressed before it, and every command waits while a
# batch holds the lock. A batch of 128 of them set the 4k random
# writes' p99; whole chunks still go 128 a batch, so a sequential
# write's batches cost what they did (the benchmarks page, "Batches
# bounded by their partly written chunks").
SETTLE_PATCHED = 32
# Between two batches stored in the background.
PAUSE = 0.005
# The oldest staged chunks the server's preparing thread digests and
# compresses ahead of the batches that will store them (the next two),
# a few at a time so that each is handed over before its batch comes;
# and how long it waits before it looks again when it found nothing to
# make: while writes are staged, and while none are.
PREPARE_AHEAD = 2 * SETTLE_BATCH
PREPARE_STEP = 16
PREPARE_LOOK = 0.005
PREPARE_IDLE = 0.05
# Patched chunks stored whole again a transaction, and for how long the
# main loop does so when nothing is staged (the lock is let go between).
MERGE_BATCH = 64
MERGE_SECONDS = 0.2
# Bytes of a segment compacted a transaction (about 64 records of
# 16 KiB), and for how long the main loop compacts each time it looks
# (the lock is let go between steps).
COMPACT_STEP = 1024 * 1024
COMPACT_SECONDS = 0.2
CACHE_LIMIT = 32 * 1024 * 1024
COUNTERS = ('read_ops', 'write_ops', 'read_bytes', 'write_bytes',
            'read_seconds', 'write_seconds')
UNMAP_BATCH = unmap_mod.UNMAP_BATCH
# Names other parts of the array know the engine's by.
RUN_WINDOW = allocation.RUN_WINDOW
NoSpace = space_mod.NoSpace
filesystem_capacity = space_mod.filesystem_capacity
_is_full = space_mod.is_full


def _settled(method):
    """Settle staged writes before ``method`` reads maps or changes layers."""
    @functools.wraps(method)
    def settled(self, *args, **kwargs):
        with self.lock:
            self._settle()
            return method(self, *args, **kwargs)
    return settled


class Engine(object):

    def __init__(self, store, chunk_size=DEFAULT_CHUNK, level=1,
                 dirty_limit=DIRTY_LIMIT, cache_limit=CACHE_LIMIT,
                 segment_dir=None, batch=SETTLE_BATCH):
        """``store``: the MetadataStore whose database holds the maps;
        chunk data goes to ``segment_dir`` (default: beside the database
        file, ``<database>-chunks``).
        """
        self.store = store
        self.db = store.connection
        self._db_path = self.db.execute(
            'PRAGMA database_list').fetchone()[2]
        if segment_dir is None:
            if not self._db_path:
                raise ValueError('the engine needs a database file')
            segment_dir = self._db_path + '-chunks'
        self.segments = segments_mod.Segments(segment_dir)
        fs = os.statvfs(segment_dir)
        self.fs_bytes = fs.f_blocks * fs.f_frsize
        self.reserve = space_mod.reserve_for(self.fs_bytes)
        self._space_left = None
        self._since_check = 0
        # Maps and chunk rows change in scattered small pieces: keep their
        # pages cached, and checkpoint the WAL at a size, not a page count.
        page = self.db.execute('PRAGMA page_size').fetchone()[0]
        self.db.execute('PRAGMA cache_size=-%d' % (PAGE_CACHE // 1024))
        # On a small filesystem the log is checkpointed (and cut back)
        # sooner: it is part of what the reserve leaves room for.
        wal = min(WAL_CHECKPOINT, self.fs_bytes // 16)
        self.db.execute('PRAGMA wal_autocheckpoint=%d' % max(
            100, wal // page))
        self.db.execute('PRAGMA journal_size_limit=%d' % wal)
        # True while the engine's own (non-durable) transactions begin.
        self._storing = False
        self.lock = store.lock
        self.chunk = chunk_size
        # ops, bytes and busy seconds per direction, for stats/system.
        self._counters = dict.fromkeys(COUNTERS, 0)
        # (read ops, write ops) when the main loop last looked.
        self._io_seen = None
        self._volume_counters = {}
        # Work done, by kind: what the shape tests count.
        self._work = collections.Counter()
        self.layers = layers_mod.LayerTree(self.db, store)
        self.chunks = chunk_store.ChunkStore(
            self.db, self.segments, self._work, level, cache_limit)
        self.staging = staging_mod.Staging(self.db, self.chunks, self.layers,
                                           self._work, chunk_size)
        self._staged_at = 0.0
        self._dirty_limit = max(dirty_limit, chunk_size)
        self._batch = batch
        store.call_before_transactions(self._before_transaction)
        with self.lock:
            engine_tables.migrate(self.db, self.store)
            self.db.executescript(engine_tables.SCHEMA)
        with self.store.transaction():
            for name in ('physical', 'logical', 'stored_raw'):
                self.db.execute('INSERT OR IGNORE INTO totals VALUES (?, 0)',
                                (name,))
            self.chunks.last_chunk = self.db.execute(
                'SELECT COALESCE(MAX(id), 0) FROM chunks').fetchone()[0]
            accounts.verify(self.db)
        self.accounts = accounts.Accounts(self)
        self._recover_segments()

    @property
    def work(self):
        """Work done, by kind: what the shape tests count."""
        return self._work

    @property
    def counters(self):
        """I/O so far: ops, bytes and busy seconds per direction."""
        return self._counters

    @property
    def volume_counters(self):
        """{volume id: its counters} (volumes that had I/O)."""
        return self._volume_counters

    def drop_cache(self):
        """Forget every decompressed chunk (the next reads fetch)."""
        with self.lock:
            self.chunks.drop_cache()

    def _drop_retired(self):
        """Remove the segments retired (their records moved or freed)."""
        self.segments.drop_retired()

    def _recover_segments(self):
        """Count what each segment holds; remove those nothing points at.

        What this process sees may not be durable yet (a crash of the
        process before): it is made durable before anything is removed.
        """
        with self.lock:
            self.segments.count_live(self.db.execute(
                'SELECT seg, SUM(size), COUNT(*) FROM chunks WHERE seg IS '
                'NOT NULL GROUP BY seg'))
            for seg in list(self.segments.sizes):
                if not self.segments.live[seg]:
                    self.segments.retire(seg)
            self.segments.sync(everything=True)
            self.store.sync()
            self._drop_retired()

    def _before_transaction(self):
        """Staged writes are stored before a transaction begins; before a
        durable one (anyone's but the engine's), the segments are synced.
        """
        if not self._storing:
            self._settle()
            self.segments.sync()

    def count_volume(self, volume_id, direction, nbytes, seconds):
        """Per-volume I/O counters (K2 stats/volumes)."""
        with self.lock:
            mine = self._volume_counters.setdefault(
                volume_id, dict.fromkeys(COUNTERS, 0))
            mine[direction + '_ops'] += 1
            mine[direction + '_bytes'] += nbytes
            mine[direction + '_seconds'] += seconds

    # -- layers (see ``layers``) ------------------------------------------
    @_settled
    def new_layer(self, parent=None, dedup=True):
        """A writable layer over ``parent`` (None: all zeros)."""
        return self.layers.new(parent, dedup)

    @_settled
    def hold(self, layer):
        """One more owner of ``layer`` (a snapshot freezing it)."""
        self.layers.hold(layer)

    @_settled
    def release(self, layer):
        """Drop one owner; frees the layer and unreferenced ancestors."""
        self.layers.release(layer, self._unref_chunks)

    @_settled
    def freeze(self, layer):
        """Snapshot support: return the new top layer over ``layer``."""
        return self.layers.freeze(layer)

    def _chain(self, layer):
        return self.layers.chain(layer)

    def _layer_dedup(self, layer):
        return self.layers.dedup(layer)

    def _unref_chunks(self, chunks):
        """Drop one reference per listed chunk id (see ChunkStore.unref)."""
        return self.chunks.unref(chunks)

    # -- data path -----------------------------------------------------------
    def _count(self, direction, nbytes, started):
        with self.lock:
            self._counters[direction + '_ops'] += 1
            self._counters[direction + '_bytes'] += nbytes
            self._counters[direction + '_seconds'] += (time.monotonic()
                                                       - started)

    def read(self, layer, offset, length):
        started = time.monotonic()
        with self.lock:
            data = self._read_image(self._chain(layer), offset, length)
        self._count('read', length, started)
        return data

    def _read_image(self, chain, offset, length):
        """``length`` bytes at ``offset`` of the image ``chain``."""
        return self.staging.read(chain, offset, length)

    def write(self, layer, offset, data):
        """Write ``data`` at ``offset``; all-zero chunks are unmapped.

        The data is staged; it settles with the next batch, at a
        ``flush``, or at once inside a caller's transaction.
        """
        started = time.monotonic()
        with self.lock:
            self._room(data)
            if not self.staging:
                self._staged_at = started
            self.staging.stage(layer, offset, data)
            if self.store.in_transaction():
                self._settle()
            elif len(self.staging) * self.chunk >= self._dirty_limit:
                # The oldest few: a write never waits for a large batch.
                self._settle(list(itertools.islice(self.staging.dirty,
                                                   self._batch)))
        self._count('write', len(data), started)

    def _room(self, data):
        """Refuse data the filesystem has no room for above the reserve.

        The room is the free space last seen less what was staged then
        (it is stored later) and what was accepted since (all counted
        as if it did not compress), looked at again every
        ``space.SPACE_CHECK`` bytes. Zeros take no room and always pass.
        """
        size = len(data)
        self._since_check += size
        if (self._space_left is None or
                self._since_check >= space_mod.SPACE_CHECK):
            fs = os.statvfs(self.segments.dir)
            self._space_left = (fs.f_bavail * fs.f_frsize -
                                self._staged_bytes())
            self._since_check = size
        if self._space_left - self._since_check >= self.reserve:
            return
        self._since_check -= size
        if bytes(data).count(0) == size:
            return
        if self._reclaim():
            return self._room(data)
        self._work['writes_refused'] += 1
        raise NoSpace('%d bytes free on the filesystem, %d kept in reserve'
                      % (max(self._space_left - self._since_check, 0),
                         self.reserve))

    def _staged_bytes(self):
        """Bytes staged, not yet stored (counted as if uncompressed)."""
        return len(self.staging) * self.chunk

    def _reclaim(self, compactions=space_mod.RECLAIM_COMPACTIONS):
        """Give back the space of segments freed by deletes and UNMAP:
        dead ones go at once, a few partly live ones are compacted; all
        is made durable. True if a segment file was removed.
        """
        compacted = 0
        while compacted < compactions:
            seg = self.segments.sparse()
            if seg is None:
                break
            compacted += bool(self.segments.live[seg])
            try:
                with self._own_transaction():
                    self._compact(seg)
            except Exception as e:
                if not _is_full(e):
                    raise
                break
        dropped = bool(self.segments.retired)
        self.segments.sync()
        self.store.sync()
        self._drop_retired()
        if dropped:
            self._space_left = None
        return dropped

    def space(self):
        """(filesystem bytes, bytes free for data above the reserve)."""
        fs = os.statvfs(self.segments.dir)
        with self.lock:
            staged = self._staged_bytes()
        return self.fs_bytes, max(fs.f_bavail * fs.f_frsize - staged -
                                  self.reserve, 0)

    def bounded(self, total, used):
        """(total, free) bytes of a pool of ``total`` bytes, ``used``
        charged, bounded by the filesystem (see ``space.bounded``).
        """
        return space_mod.bounded(self.fs_bytes, self.reserve,
                                 self.disk_bytes(), total, used)

    def disk_bytes(self):
        """Bytes of the array's data files: segments and the database."""
        return space_mod.disk_bytes(self.segments, self._db_path)

    def settle(self, older_than=0.0):
        """Store the staged writes if they have waited ``older_than``
        seconds: they then survive a crash of the array's process (not
        of the machine: that takes a ``flush``). Stored in small
        batches, the lock released between them, so I/O goes on.
        """
        self._background(older_than)
        with self.lock:
            now = time.monotonic()
            if not self.staging or now - self._staged_at < older_than:
                return
            keys = list(self.staging.dirty)
        for start in range(0, len(keys), self._batch):
            if start:
                # Let waiting I/O take the lock (it is not fair).
                time.sleep(PAUSE)
            with self.lock:
                part = [key for key in keys[start:start + self._batch]
                        if key in self.staging.dirty]
                if part:
                    self._settle(part)
        with self.lock:
            # What is still staged was written after ``now``.
            self._staged_at = now

    def prepare_ahead(self, stop_fd):
        """Make staged chunks' digests and records ahead of their batch,
        until ``stop_fd`` is readable (a thread of the server's). This
        engine makes them inside its batches: nothing to do.
        """

    def _background(self, older_than):
        """The main loop's merging and compaction, before it stores.

        Both hold the lock a step at a time, and a read waits for the
        step. While the host only reads, each takes one step a look:
        reads leave nothing to compact, and a read of one slot of a
        patched chunk reads that slot alone, which a merge would save
        little of. Writes leave patches and garbage behind, so when the
        host writes, or does nothing, both take their time.
        """
        merge, compact = MERGE_SECONDS, COMPACT_SECONDS
        if older_than:
            now = self.counters
            seen = (now['read_ops'], now['write_ops'])
            last, self._io_seen = self._io_seen, seen
            if last and seen[0] != last[0] and seen[1] == last[1]:
                merge = compact = 0.0
            if not self._staged_bytes():
                self.merge_patches(seconds=merge)
        # Segments are compacted here, a step at a time, never in a
        # write's batch.
        self.compact_some(seconds=compact)

    def _in_steps(self, step, seconds):
        """Run ``step() -> (count, more)`` under the lock, letting it go
        between steps, until no more is left or ``seconds`` have gone
        by; the sum of the counts.
        """
        done, until = 0, time.monotonic() + seconds
        while True:
            with self.lock:
                count, more = step()
            done += count
            if not more or time.monotonic() >= until:
                return done
            time.sleep(PAUSE)

    def merge_patches(self, limit=MERGE_BATCH, seconds=0.0):
        """Store patched chunks whole, ``limit`` a transaction; how many."""
        def step():
            self._settle()
            keys = patch_log.patched(self.db, limit)
            for layer, idx in keys:
                offset = idx * self.chunk
                self._stage(layer, offset, self._read_image(
                    self._chain(layer), offset, self.chunk))
            self._settle(keys)
            return len(keys), len(keys) == limit
        return self._in_steps(step, seconds)

    def _stage(self, layer, offset, data):
        self.staging.stage(layer, offset, data)

    def _settle(self, keys=None):
        """Store staged chunks (``keys``, default all), one transaction."""
        if not self.staging:
            return
        staged = self.staging.take(keys)
        by_layer = {}
        for (layer, idx), block in staged.items():
            by_layer.setdefault(layer, []).append((idx, block))
        # Inside a caller's transaction only the caller's own writes are
        # staged (the rest were stored when it began); they go with it.
        theirs = self.store.in_transaction()
        try:
            with self._own_transaction():
                for layer, blocks in by_layer.items():
                    blocks.sort(key=lambda entry: entry[0])
                    self._put_blocks(layer, self._chain(layer), blocks)
        except BaseException as e:
            if not theirs:
                # Nothing was stored: keep the staged data, newer on top.
                self.staging.restore(staged)
            # Look again before accepting more.
            self._space_left = None
            if _is_full(e):
                raise NoSpace('storing staged writes: %s' % e) from e
            raise

    @contextlib.contextmanager
    def _own_transaction(self):
        """A data-path transaction: not durable, segments not synced."""
        self._storing = True
        try:
            with self.store.transaction(durable=False):
                self._storing = False
                yield
        finally:
            self._storing = False

    def _compact(self, seg):
        """Compact a segment (ChunkStore.compact) in its own transaction."""
        self.chunks.compact(seg, self._own_transaction)

    def compact_some(self, seconds=COMPACT_SECONDS, step=COMPACT_STEP):
        """Compact sparse segments ``step`` bytes a transaction, the
        lock let go between steps, for up to ``seconds`` (the main loop):
        a write's batch never compacts, so no write waits behind a whole
        segment. How many steps.
        """
        def one():
            try:
                if self.chunks.compact_step(self._own_transaction, step):
                    return 1, True
            except Exception as e:
                # Compaction only gives space back; it tries again the
                # next time.
                if not _is_full(e):
                    raise
                self._compaction_full()
            return 0, False
        return self._in_steps(one, seconds)

    def _compaction_full(self):
        """The filesystem was full while compacting: look again."""
        self._space_left = None

    def _put_blocks(self, layer, chain, blocks):
        """Store whole chunks of ``layer`` (see ChunkStore.put_blocks)."""
        self.chunks.put_blocks(layer, self._layer_dedup(layer), chain,
                               blocks)

    def unmap(self, layer, offset, length):
        """Discard a range: it reads as zeros and frees its space."""
        pos, end = offset, offset + length
        while pos < end:
            pos = self.unmap_step(layer, pos, end)

    def unmap_step(self, layer, offset, end):
        """Discard from ``offset`` toward ``end``; returns where it
        stopped (see ``unmap``: one step's work is bounded).
        """
        chunk = self.chunk
        first = -(-offset // chunk)
        last = end // chunk
        with self.lock:
            if offset % chunk or first >= last:
                stop = min(first * chunk, end) if first < last else end
                self.write(layer, offset, bytes(stop - offset))
                return stop
            rows, masked, stop = unmap_mod.step_entries(
                self.db, self._chain(layer), first, last)
            self._work['unmap_entries'] += len(rows) + len(masked)
            with self._unstaged(layer, first, stop):
                with self._own_transaction():
                    unmap_mod.drop_entries(self.db, self._unref_chunks,
                                           layer, first, stop, rows, masked)
            return stop * chunk

    @contextlib.contextmanager
    def _unstaged(self, layer, first, stop):
        """Staged chunks [first, stop) of ``layer`` are dropped, and
        kept again if the step fails.
        """
        dropped = self.staging.drop(layer, first, stop)
        try:
            yield
        except BaseException:
            self.staging.dirty.update(dropped)
            raise

    @_settled
    def allocated_run(self, layer, offset, limit):
        """(allocated, length) of the run of chunks starting at offset
        (see ``allocation.allocated_run``).
        """
        with self.lock:
            return allocation.allocated_run(self.db, self._work,
                                            self._chain(layer), self.chunk,
                                            offset, limit)

    @_settled
    def changed_chunks(self, layer, base):
        """Chunk indexes whose content may differ between two images
        (see ``LayerTree.changed_chunks``).
        """
        with self.lock:
            return self.layers.changed_chunks(layer, base)

    @_settled
    def read_chunks(self, layer, idxs):
        """[(idx, data or None for zeros)] of one image."""
        with self.lock:
            chain = self._chain(layer)
            return [(idx, self.staging.read_chunk(chain, idx))
                    for idx in idxs]

    @_settled
    def layer_is_empty(self, layer):
        with self.lock:
            return self.layers.is_empty(layer)

    def parent_of(self, layer):
        with self.lock:
            return self.layers.parent_of(layer)

    def flush(self):
        """Make every write so far durable (SYNCHRONIZE CACHE, FUA)."""
        with self.lock:
            self._settle()
            try:
                # Space freed since the last flush comes back now.
                self._reclaim(compactions=1)
            except Exception as e:
                if _is_full(e):
                    raise NoSpace('making writes durable: %s' % e) from e
                raise

    def close(self):
        with self.lock:
            self.flush()
            self.segments.close()

    # -- accounting ----------------------------------------------------------
    @_settled
    def totals(self):
        with self.lock:
            return self.chunks.totals()

    @_settled
    def usage(self, layers):
        """(logical, physical) bytes the maps of ``layers`` hold.

        A chunk shared by several of the layers counts once physically.
        """
        with self.lock:
            return self.layers.usage(layers)

    @_settled
    def layer_written(self, layer):
        """Bytes of data this layer holds itself (not its ancestors)."""
        with self.lock:
            return self.layers.written(layer)

    @_settled
    def layers_written(self, layers):
        """layer -> bytes it holds itself, for many layers in one query."""
        with self.lock:
            return self.layers.written_of(layers)
