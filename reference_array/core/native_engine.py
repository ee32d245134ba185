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

"""The engine with its data path in native code (``reference_array.native``).

Staging (the write-back cache), reads through the cache of decompressed
chunks, allocation status and storing batches of chunks (BLAKE3 digests,
zstd compression, segment records and rows) run in C, on the engine's
own SQLite connection, inside the engine's transactions and under its
lock; a batch's digests and compression are made before, without the
lock (``native/prepare.c``). Everything else is the engine's: layers,
accounting, compaction and every durable decision. The files and rows
are the same as the pure-Python engine's, so either opens what the other
wrote.

Each iSCSI connection may also run its READ, WRITE and GET LBA STATUS
in C without the GIL (``data_path``); it sees the objects' changes
through ``epoch``, which moves before any transaction but the engine's
own.
"""

import collections
import contextlib
import logging
import time

from reference_array.core import engine as engine_mod
from reference_array import native

LOG = logging.getLogger(__name__)


# The most the data paths may stage between two looks of the engine at
# the filesystem (never more than it saw free above its reserve).
ROOM_GRANT = 8 * 1024 * 1024


def create(store, **kwargs):
    """The engine of ``store``: native when the extension is built."""
    cls = NativeEngine if native.AVAILABLE else engine_mod.Engine
    return cls(store, **kwargs)


class NativeEngine(engine_mod.Engine):

    def __init__(self, store, chunk_size=engine_mod.DEFAULT_CHUNK, level=1,
                 dirty_limit=engine_mod.DIRTY_LIMIT,
                 cache_limit=engine_mod.CACHE_LIMIT, segment_dir=None,
                 batch=engine_mod.SETTLE_BATCH):
        db = store.connection
        path = db.execute('PRAGMA database_list').fetchone()[2]
        if segment_dir is None:
            if not path:
                raise ValueError('the engine needs a database file')
            segment_dir = path + '-chunks'
        # Before the engine's own set-up, which begins transactions.
        self._native = native._native.Store(db, path, segment_dir,
                                            chunk_size, level, cache_limit)
        super().__init__(store, chunk_size, level, dirty_limit, cache_limit,
                         segment_dir, batch)
        store.call_before_close(self._native.close)
        with self.lock:
            # Chunk ids are handed out by the native store.
            self._native.last_chunk = self.chunks.last_chunk

    # -- what the native store counts as well ----------------------------
    @property
    def work(self):
        out = collections.Counter(self._work)
        out.update(self._native.work())
        return out

    @property
    def counters(self):
        with self.lock:
            native_io, _volumes = self._native.counters()
            return {key: value + native_io[key]
                    for key, value in self._counters.items()}

    @property
    def volume_counters(self):
        with self.lock:
            _io, out = self._native.counters()
            for volume, mine in self._volume_counters.items():
                theirs = out.setdefault(
                    volume, dict.fromkeys(engine_mod.COUNTERS, 0))
                for key, value in mine.items():
                    theirs[key] += value
            return out

    def drop_cache(self):
        with self.lock:
            self._native.clear_cache()

    def _drop_retired(self):
        for seg in self.segments.retired:
            self._native.forget_segment(seg)
        super()._drop_retired()

    def _before_transaction(self):
        super()._before_transaction()
        if not self._storing:
            # Connections look up their LUNs' layers again.
            self._native.bump_epoch()

    @property
    def epoch(self):
        """Changes before any transaction but the engine's own: what a
        connection resolved (LUNs, layers) may have changed.
        """
        return self._native.epoch

    def chain(self, layer):
        """The layer and its ancestors, nearest first."""
        with self.lock:
            return self._chain(layer)

    def _layer_info(self, layer):
        """(chain, dedup) of a layer, for the native store."""
        return self._chain(layer), self._layer_dedup(layer)

    # -- chunks -----------------------------------------------------------
    def _unref_chunks(self, chunks):
        logical, freed = self._native.unref(list(chunks))
        for seg, size in freed:
            self.segments.freed(seg, size)
        return logical

    # -- data path --------------------------------------------------------
    def _read_image(self, chain, offset, length):
        return self._native.read(chain, offset, length)

    def _staged_bytes(self):
        return self._native.staged * self.chunk

    def _grant_room(self):
        """Let the connections' data paths stage what is left of the
        room ``_room`` last saw (counted now, as if accepted), up to its
        next look at the filesystem; a write beyond it comes here.
        """
        grant = min(self._space_left - self.reserve - self._since_check,
                    ROOM_GRANT)
        grant = max(grant, 0)
        self._since_check += grant
        self._native.room = grant

    def _refill_room(self):
        """A connection's data path used up its room: look at the
        filesystem again as a write here would, and grant what is left
        (a write that still finds too little comes here, which may
        refuse it), so that the data path need not hand a write to the
        session only to have room granted again.
        """
        with self.lock:
            self._revoke_room()
            # Nothing to admit: only ``_room``'s look at the filesystem,
            # when one is due.
            self._room(b'')
            self._grant_room()

    def _revoke_room(self):
        """Take back what the data paths have not used of their room."""
        self._since_check = max(self._since_check - self._native.room, 0)
        self._native.room = 0

    def write(self, layer, offset, data):
        started = time.monotonic()
        with self.lock:
            self._revoke_room()
            self._room(data)
            self._grant_room()
            if not self._native.staged:
                self._staged_at = started
            staged = self._native.write(layer, offset, data)
            if self.store.in_transaction():
                self._settle()
            elif staged * self.chunk >= self._dirty_limit:
                # The oldest few: a write never waits for a large batch.
                self._settle(self._next_batch(ready=True))
        self._count('write', len(data), started)

    def _stage(self, layer, offset, data):
        self._native.write(layer, offset, data)

    def settle(self, older_than=0.0):
        self._background(older_than)
        with self.lock:
            now = time.monotonic()
            if not self._native.staged or \
                    now - self._staged_at < older_than:
                return
            left = self._native.staged
        # As many as are staged now, oldest first (a chunk written again
        # keeps its place): what the connections stage meanwhile waits
        # for the next look, unless others stored the oldest meanwhile.
        while left > 0:
            # Digests and compression without the lock (it takes it
            # only to copy the chunks and to hand the results over).
            self._native.prepare(self.lock, self._batch)
            with self.lock:
                keys = self._next_batch()
                if not keys:
                    break
                self._settle(keys)
            left -= len(keys)
            if left > 0:
                # Let waiting I/O take the lock (it is not fair).
                time.sleep(engine_mod.PAUSE)
        with self.lock:
            # What is still staged was written after ``now``.
            self._staged_at = now

    def _settle(self, keys=None):
        """Store staged chunks (``keys``, default all), one transaction.

        They stay staged until it commits (or, inside a caller's
        transaction, until they are in it).
        """
        if not self._native.staged:
            return
        try:
            with self._own_transaction():
                freed = self._store_batch(keys)
        except BaseException as e:
            # Nothing was stored: the chunks stay staged. The data paths
            # stage no more until the engine has looked again.
            self._space_left = None
            self._revoke_room()
            if engine_mod._is_full(e):
                raise engine_mod.NoSpace(
                    'storing staged writes: %s' % e) from e
            raise
        self._native.drop_staged(keys)
        for seg, size in freed:
            self.segments.freed(seg, size)

    def _compaction_full(self):
        super()._compaction_full()
        self._revoke_room()

    @contextlib.contextmanager
    def _unstaged(self, layer, first, stop):
        # Staged chunks sit above the map: dropped once the step's
        # entries are gone, kept if it fails.
        yield
        self._native.drop_staged([
            key for key in self._native.staged_keys()
            if key[0] == layer and first <= key[1] < stop])

    def prepare_ahead(self, stop_fd):
        """Digest and compress the oldest whole staged chunks ahead of the
        batch that will store them, until ``stop_fd`` is readable.

        Run on a thread of its own (the server's), so on another core than
        the connections': a connection's writes are received and staged
        while the chunks before them are compressed, and the batch a
        connection stores when it finds the cache full takes the records
        made here (``native/prepare.c``) instead of making them in line.
        Only once the cache is within two batches of full: a chunk written
        again and again while staged is not compressed each time. The lock
        is taken only to copy the chunks and to hand the records over; a
        chunk written again meanwhile is made again by its batch.
        """
        near = max(0, self._dirty_limit // self.chunk -
                   engine_mod.PREPARE_AHEAD)
        try:
            self._native.prepare_ahead(
                self.lock, engine_mod.PREPARE_AHEAD, engine_mod.PREPARE_STEP,
                near, stop_fd, int(engine_mod.PREPARE_LOOK * 1000),
                int(engine_mod.PREPARE_IDLE * 1000))
        except Exception:
            # The batches make what is not made here.
            LOG.exception('preparing staged chunks ahead stopped')

    def _next_batch(self, ready=False):
        """The oldest staged keys a batch stores: ``SETTLE_BATCH`` at most,
        ``SETTLE_PATCHED`` of them partly written. ``ready``: but not
        those being prepared right now (``prepare_ahead``), for the batch
        of a write that found the cache full: their records come, and a
        later batch stores them as made instead of making them in line.
        """
        return self._native.staged_keys(self._batch, ready,
                                        engine_mod.SETTLE_PATCHED)

    def _settle_some(self):
        """Store the oldest staged chunks (a connection's data path
        found the cache full).
        """
        with self.lock:
            if self._native.staged * self.chunk >= self._dirty_limit:
                try:
                    self._settle(self._next_batch(ready=True))
                except engine_mod.NoSpace as e:
                    # The write was staged within the room granted; it
                    # stays staged, and the data paths hand the next
                    # writes to the engine, which refuses them.
                    LOG.warning('Staged writes not stored: %s', e)

    def _store_batch(self, keys):
        """Digest, compress, append and write the rows of staged chunks
        (native); the records freed, [(seg, size)].
        """
        return self._native.settle(keys, self._layer_info, self.segments)

    def data_path(self, fd, timeout, negotiated):
        """The native data path of one iSCSI connection on socket ``fd``
        (``native/path.c``), with its session's negotiated lengths.
        """
        return native._native.DataPath(
            fd, self._native, self.lock, self, timeout,
            negotiated.max_send_segment, negotiated.max_burst,
            negotiated.first_burst, negotiated.immediate_data,
            max(1, self._dirty_limit // self.chunk), self._batch)

    @engine_mod._settled
    def allocated_run(self, layer, offset, limit):
        with self.lock:
            return self._native.allocated_run(self._chain(layer), offset,
                                              limit)

    @engine_mod._settled
    def read_chunks(self, layer, idxs):
        with self.lock:
            idxs = list(idxs)
            return list(zip(idxs, self._native.read_chunks(
                self._chain(layer), idxs)))

    def close(self):
        with self.lock:
            super().close()
            self._native.close()
