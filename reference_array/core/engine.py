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
"""

import collections
import contextlib
import errno
import functools
import itertools
import os
import sqlite3
import threading
import time

import blake3
import zstandard

from reference_array.core import segments as segments_mod

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
# Between two batches stored in the background.
PAUSE = 0.005
CACHE_LIMIT = 32 * 1024 * 1024
COUNTERS = ('read_ops', 'write_ops', 'read_bytes', 'write_bytes',
            'read_seconds', 'write_seconds')
# SQLite's default limit on host parameters is well above this.
BATCH = 500
# Bounds of one allocation-status answer: chunks of a data run looked at,
# entries masked by zeros skipped in a run of holes.
RUN_WINDOW = 64
RUN_PROBES = 16
# Map entries one step of an UNMAP drops or masks (the lock is held for
# one step at a time).
UNMAP_BATCH = 2048
# Room the array always leaves on its filesystem, so that metadata
# changes, deletes (which free space), a clean stop and a start still
# work once data has filled the rest: at least this much...
RESERVE_MIN = 8 * 1024 * 1024
# ...and this share of the filesystem.
RESERVE_SHARE = 0.02
# The filesystem's free space is looked at again after this much data.
SPACE_CHECK = 1024 * 1024
# Partly live segments compacted when space is wanted (each is read
# whole); segments nothing refers to are removed without a limit.
RECLAIM_COMPACTIONS = 4

# Reference counts live apart from the data: a count changes on every
# deduplicated write, and SQLite rewrites a whole row to change a column.
CHUNK_TABLES = ("""
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    digest BLOB,
    refs INTEGER NOT NULL,
    raw INTEGER NOT NULL,
    size INTEGER NOT NULL,
    seg INTEGER,
    off INTEGER
)
""", """
CREATE TABLE IF NOT EXISTS chunk_data (
    id INTEGER PRIMARY KEY,
    data BLOB NOT NULL
)
""")

SCHEMA = """
CREATE TABLE IF NOT EXISTS layers (
    id INTEGER PRIMARY KEY,
    parent INTEGER,
    refs INTEGER NOT NULL,
    dedup INTEGER NOT NULL,
    written INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS maps (
    layer INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    PRIMARY KEY (layer, idx)
) WITHOUT ROWID;
%(chunk_tables)s
CREATE INDEX IF NOT EXISTS chunks_digest ON chunks(digest)
    WHERE digest IS NOT NULL;
CREATE TABLE IF NOT EXISTS totals (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
""" % {'chunk_tables': ';'.join(CHUNK_TABLES) + ';'}


def reserve_for(fs_bytes):
    """Room kept free on a filesystem of ``fs_bytes``."""
    return max(RESERVE_MIN, int(fs_bytes * RESERVE_SHARE))


def filesystem_capacity(path):
    """Bytes the array may fill on the filesystem holding ``path``."""
    fs = os.statvfs(path)
    size = fs.f_blocks * fs.f_frsize
    return max(size - reserve_for(size), 0)


class NoSpace(Exception):
    """The filesystem under the array has no room for more data."""


def _is_full(exc):
    """Whether an error from SQLite or a file write means a full disk."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return (isinstance(exc, sqlite3.OperationalError) and
            'full' in str(exc))


class _Patch(object):
    """Bytes written into part of a chunk whose earlier content has not
    been looked up yet: it is, in a batch, when the chunk settles, or
    when the chunk is read first.
    """

    __slots__ = ('data', 'spans')

    def __init__(self, size):
        self.data = bytearray(size)
        self.spans = []

    def put(self, inner, piece):
        self.data[inner:inner + len(piece)] = piece
        self.spans.append((inner, inner + len(piece)))

    def over(self, base):
        """The whole chunk: ``base`` (None: zeros) under what was written."""
        out = bytearray(base) if base is not None else bytearray(
            len(self.data))
        for start, end in self.spans:
            out[start:end] = self.data[start:end]
        return bytes(out)


_MISSING = object()


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
        self.reserve = reserve_for(self.fs_bytes)
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
        self._zero = bytes(chunk_size)
        self._local = threading.local()
        self._level = level
        # ops, bytes and busy seconds per direction, for stats/system.
        self._counters = dict.fromkeys(COUNTERS, 0)
        self._volume_counters = {}
        # Work done, by kind: what the shape tests count.
        self._work = collections.Counter()
        # Layers never change parent, so chains are cached until a layer
        # is deleted; chunk ids are handed out here so a write can insert
        # all its chunks in one statement.
        self._chains = {}
        self._dedup = {}
        # (layer, idx) -> whole chunk, or None for zeros, not yet settled.
        self._dirty = {}
        self._staged_at = 0.0
        self._dirty_limit = max(dirty_limit, chunk_size)
        self._batch = batch
        # chunk id -> decompressed data; stored chunks never change.
        self._cache = collections.OrderedDict()
        self._cache_bytes = 0
        self._cache_limit = cache_limit
        store.call_before_transactions(self._before_transaction)
        with self.lock:
            self._migrate()
            self.db.executescript(SCHEMA)
        with self.store.transaction():
            for name in ('physical', 'logical', 'stored_raw'):
                self.db.execute('INSERT OR IGNORE INTO totals VALUES (?, 0)',
                                (name,))
            self._last_chunk = self.db.execute(
                'SELECT COALESCE(MAX(id), 0) FROM chunks').fetchone()[0]
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
            self._cache.clear()
            self._cache_bytes = 0

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

    def _migrate(self):
        """Bring a database of an earlier version to this schema."""
        self._migrate_chunks()
        columns = [row[1] for row in self.db.execute(
            'PRAGMA table_info(layers)')]
        if columns and 'written' not in columns:
            with self.store.transaction():
                self.db.execute('ALTER TABLE layers ADD COLUMN written '
                                'INTEGER NOT NULL DEFAULT 0')
                self.db.execute(
                    'UPDATE layers SET written = (SELECT COALESCE(SUM('
                    'c.raw), 0) FROM maps m JOIN chunks c ON c.id = m.chunk '
                    'WHERE m.layer = layers.id)')

    def _migrate_chunks(self):
        """Move a database whose chunks kept their data in the same row."""
        columns = [row[1] for row in self.db.execute(
            'PRAGMA table_info(chunks)')]
        if columns and 'seg' not in columns and 'data' not in columns:
            # Chunk data kept in chunk_data: new chunks go to segments.
            with self.store.transaction():
                self.db.execute('ALTER TABLE chunks ADD COLUMN seg INTEGER')
                self.db.execute('ALTER TABLE chunks ADD COLUMN off INTEGER')
            return
        if 'data' not in columns:
            return
        with self.store.transaction():
            for statement in (
                    'DROP INDEX IF EXISTS chunks_digest',
                    'ALTER TABLE chunks RENAME TO chunks_v1',
                    *CHUNK_TABLES,
                    'INSERT INTO chunks (id, digest, refs, raw, size) '
                    'SELECT id, digest, refs, raw, length(data) FROM '
                    'chunks_v1',
                    'INSERT INTO chunk_data SELECT id, data FROM chunks_v1',
                    'DROP TABLE chunks_v1'):
                self.db.execute(statement)

    def count_volume(self, volume_id, direction, nbytes, seconds):
        """Per-volume I/O counters (K2 stats/volumes)."""
        with self.lock:
            mine = self._volume_counters.setdefault(
                volume_id, dict.fromkeys(COUNTERS, 0))
            mine[direction + '_ops'] += 1
            mine[direction + '_bytes'] += nbytes
            mine[direction + '_seconds'] += seconds

    # -- codecs (one per thread: zstd contexts are not thread-safe) ------
    def _codec(self):
        codec = getattr(self._local, 'codec', None)
        if codec is None:
            codec = (zstandard.ZstdCompressor(level=self._level),
                     zstandard.ZstdDecompressor())
            self._local.codec = codec
        return codec

    # -- layers ------------------------------------------------------------
    @_settled
    def new_layer(self, parent=None, dedup=True):
        """A writable layer over ``parent`` (None: all zeros)."""
        with self.store.transaction():
            if parent is not None:
                self._ref_layer(parent, +1)
            cur = self.db.execute(
                'INSERT INTO layers (parent, refs, dedup) VALUES (?, 1, ?)',
                (parent, int(bool(dedup))))
            return cur.lastrowid

    def _ref_layer(self, layer, delta):
        self.db.execute('UPDATE layers SET refs = refs + ? WHERE id = ?',
                        (delta, layer))

    @_settled
    def hold(self, layer):
        """One more owner of ``layer`` (a snapshot freezing it)."""
        with self.store.transaction():
            self._ref_layer(layer, +1)

    @_settled
    def release(self, layer):
        """Drop one owner; frees the layer and unreferenced ancestors."""
        with self.store.transaction():
            while layer is not None:
                self._ref_layer(layer, -1)
                row = self.db.execute(
                    'SELECT refs, parent FROM layers WHERE id = ?',
                    (layer,)).fetchone()
                if row is None or row[0] > 0:
                    return
                self._unref_chunks([chunk for (chunk,) in self.db.execute(
                    'SELECT chunk FROM maps WHERE layer = ? AND chunk != 0',
                    (layer,))])
                self.db.execute('DELETE FROM maps WHERE layer = ?', (layer,))
                self.db.execute('DELETE FROM layers WHERE id = ?', (layer,))
                self._chains.clear()
                self._dedup.pop(layer, None)
                layer = row[1]

    @_settled
    def freeze(self, layer):
        """Snapshot support: return the new top layer over ``layer``.

        The caller keeps ``layer`` as the frozen image (its owner moves
        from the volume to the snapshot) and gives the volume the new one.
        """
        with self.store.transaction():
            dedup = self.db.execute('SELECT dedup FROM layers WHERE id = ?',
                                    (layer,)).fetchone()[0]
            return self.new_layer(parent=layer, dedup=bool(dedup))

    def _chain(self, layer):
        chain = self._chains.get(layer)
        if chain is not None:
            return chain
        chain, walk = [], layer
        while walk is not None:
            chain.append(walk)
            row = self.db.execute('SELECT parent FROM layers WHERE id = ?',
                                  (walk,)).fetchone()
            walk = row[0] if row else None
        chain = self._chains[layer] = tuple(chain)
        return chain

    def _layer_dedup(self, layer):
        dedup = self._dedup.get(layer)
        if dedup is None:
            dedup = bool(self.db.execute(
                'SELECT dedup FROM layers WHERE id = ?',
                (layer,)).fetchone()[0])
            self._dedup[layer] = dedup
        return dedup

    # -- chunks --------------------------------------------------------------
    def _add_total(self, name, delta):
        if delta:
            self.db.execute('UPDATE totals SET value = value + ? WHERE '
                            'name = ?', (delta, name))

    def _unref_chunks(self, chunks):
        """Drop one reference per listed chunk id; free unreferenced ones.

        Returns the bytes (uncompressed) the listed references held.
        """
        counts = collections.Counter(chunks)
        counts.pop(ZERO, None)
        if not counts:
            return 0
        self.db.executemany('UPDATE chunks SET refs = refs - ? WHERE id = ?',
                            [(n, chunk) for chunk, n in counts.items()])
        logical = physical = stored = 0
        freed = []
        legacy = []
        for chunk, refs, raw, size, seg in self._select_in(
                'SELECT id, refs, raw, size, seg FROM chunks WHERE id IN '
                '(%s)', counts):
            logical += raw * counts[chunk]
            if refs <= 0:
                freed.append((chunk,))
                physical += size
                stored += raw
                self._forget(chunk)
                if seg is None:
                    legacy.append((chunk,))
                else:
                    self.segments.freed(seg, size)
        self.db.executemany('DELETE FROM chunks WHERE id = ?', freed)
        if legacy:
            self.db.executemany('DELETE FROM chunk_data WHERE id = ?',
                                legacy)
        self._add_total('logical', -logical)
        self._add_total('physical', -physical)
        self._add_total('stored_raw', -stored)
        return logical

    def _forget(self, chunk):
        data = self._cache.pop(chunk, None)
        if data is not None:
            self._cache_bytes -= len(data)

    def _chunk_data(self, chunk, where=None):
        data = self._cache.get(chunk)
        if data is not None:
            self._cache.move_to_end(chunk)
            return data
        data = self._codec()[1].decompress(self._packed(chunk, where))
        self._work['chunks_fetched'] += 1
        self._work['bytes_decompressed'] += len(data)
        self._cache[chunk] = data
        self._cache_bytes += len(data)
        while self._cache_bytes > self._cache_limit:
            _old, dropped = self._cache.popitem(last=False)
            self._cache_bytes -= len(dropped)
        return data

    def _packed(self, chunk, where=None):
        """The stored (compressed) bytes of a chunk; ``where``: its
        (seg, off, size) row if known.
        """
        seg, off, size = where or self.db.execute(
            'SELECT seg, off, size FROM chunks WHERE id = ?',
            (chunk,)).fetchone()
        if seg is None:
            return self.db.execute('SELECT data FROM chunk_data WHERE id = ?',
                                   (chunk,)).fetchone()[0]
        return self.segments.read(seg, off, size)

    def _read_chunk(self, chain, idx):
        """A chunk of an image (staged or settled), None for zeros."""
        dirty = self._dirty
        for n, layer in enumerate(chain):
            if dirty:
                entry = dirty.get((layer, idx), _MISSING)
                if entry is not _MISSING:
                    if entry.__class__ is not _Patch:
                        return entry
                    chunk = self._map_entry(layer, idx)
                    return self._apply(layer, idx, entry, (
                        self._content(chunk) if chunk is not None
                        else self._read_chunk(chain[n + 1:], idx)))
            self._work['map_probes'] += 1
            row = self.db.execute(
                'SELECT m.chunk, c.seg, c.off, c.size FROM maps m LEFT JOIN '
                'chunks c ON c.id = m.chunk WHERE m.layer = ? AND m.idx = ?',
                (layer, idx)).fetchone()
            if row is not None:
                # Where the data is comes with the map entry: one query.
                return None if row[0] == ZERO else self._chunk_data(
                    row[0], row[1:])
        return None

    def _map_entry(self, layer, idx):
        self._work['map_probes'] += 1
        row = self.db.execute(
            'SELECT chunk FROM maps WHERE layer = ? AND idx = ?',
            (layer, idx)).fetchone()
        return row[0] if row else None

    def _content(self, chunk):
        return None if chunk == ZERO else self._chunk_data(chunk)

    def _apply(self, layer, idx, patch, base):
        """Stage a patch as the whole chunk it makes of ``base``."""
        self._work['patches_resolved'] += 1
        block = patch.over(base)
        block = None if block == self._zero else block
        self._dirty[(layer, idx)] = block
        return block

    def _apply_patches(self, keys=None):
        """Look up the earlier content of the patches among ``keys``
        (default: all staged chunks), a query per batch.
        """
        by_layer = {}
        dirty = self._dirty
        for key in dirty if keys is None else keys:
            entry = dirty[key]
            if entry.__class__ is _Patch:
                by_layer.setdefault(key[0], {})[key[1]] = entry
        for layer, patches in by_layer.items():
            chain = self._chain(layer)
            marks = ','.join('?' * len(chain))
            settled = {(anc, idx): chunk for anc, idx, chunk in
                       self._select_in(
                           'SELECT layer, idx, chunk FROM maps WHERE layer '
                           'IN (' + marks + ') AND idx IN (%s)', patches,
                           *chain)}
            for idx, patch in patches.items():
                base = None
                for n, anc in enumerate(chain):
                    if n and (anc, idx) in self._dirty:
                        # Staged below (rare): the general path.
                        base = self._read_chunk(chain[n:], idx)
                        break
                    if (anc, idx) in settled:
                        base = self._content(settled[(anc, idx)])
                        break
                self._apply(layer, idx, patch, base)

    # -- data path -----------------------------------------------------------
    def _count(self, direction, nbytes, started):
        with self.lock:
            self._counters[direction + '_ops'] += 1
            self._counters[direction + '_bytes'] += nbytes
            self._counters[direction + '_seconds'] += (time.monotonic()
                                                       - started)

    def read(self, layer, offset, length):
        started = time.monotonic()
        out = bytearray()
        with self.lock:
            chain = self._chain(layer)
            end = offset + length
            pos = offset
            while pos < end:
                idx, inner = divmod(pos, self.chunk)
                take = min(self.chunk - inner, end - pos)
                data = self._read_chunk(chain, idx)
                if data is None:
                    out += bytes(take)
                else:
                    out += data[inner:inner + take]
                pos += take
        self._count('read', length, started)
        return bytes(out)

    def write(self, layer, offset, data):
        """Write ``data`` at ``offset``; all-zero chunks are unmapped.

        The data is staged; it settles with the next batch, at a
        ``flush``, or at once inside a caller's transaction.
        """
        started = time.monotonic()
        view = memoryview(data)
        with self.lock:
            self._room(data)
            dirty = self._dirty
            if not dirty:
                self._staged_at = started
            pos, end = offset, offset + len(data)
            while pos < end:
                idx, inner = divmod(pos, self.chunk)
                take = min(self.chunk - inner, end - pos)
                piece = view[pos - offset:pos - offset + take]
                pos += take
                if take == self.chunk:
                    block = bytes(piece)
                else:
                    base = dirty.get((layer, idx), _MISSING)
                    if base is _MISSING or base.__class__ is _Patch:
                        if base is _MISSING:
                            base = dirty[(layer, idx)] = _Patch(self.chunk)
                        base.put(inner, piece)
                        continue
                    base = base or self._zero
                    block = b''.join((base[:inner], piece,
                                      base[inner + take:]))
                dirty[(layer, idx)] = None if block == self._zero else block
            if self.store.in_transaction():
                self._settle()
            elif len(dirty) * self.chunk >= self._dirty_limit:
                # The oldest few: a write never waits for a large batch.
                self._settle(list(itertools.islice(dirty, self._batch)))
        self._count('write', len(data), started)

    def _room(self, data):
        """Refuse data the filesystem has no room for above the reserve.

        The room is the free space last seen less what was staged then
        (it is stored later) and what was accepted since (all counted
        as if it did not compress), looked at again every
        ``SPACE_CHECK`` bytes. Zeros take no room and always pass.
        """
        size = len(data)
        self._since_check += size
        if self._space_left is None or self._since_check >= SPACE_CHECK:
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
        return len(self._dirty) * self.chunk

    def _reclaim(self, compactions=RECLAIM_COMPACTIONS):
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
        """(total, free) bytes of a pool of ``total`` bytes of which
        ``used`` are charged, bounded by the filesystem under the array:
        never larger than it less the reserve, never more free than the
        array's own files leave of that. (Other files on a shared
        filesystem are not counted; writes that find no room are
        refused whatever was reported.)
        """
        capacity = max(self.fs_bytes - self.reserve, 0)
        total = min(total, capacity)
        free = max(min(total - used, capacity - self.disk_bytes()), 0)
        return total, free

    def disk_bytes(self):
        """Bytes of the array's data files: segments and the database."""
        on_disk = sum(self.segments.sizes.values())
        for suffix in ('', '-wal'):
            try:
                on_disk += os.stat(self._db_path + suffix).st_size
            except OSError:
                pass
        return on_disk

    def settle(self, older_than=0.0):
        """Store the staged writes if they have waited ``older_than``
        seconds: they then survive a crash of the array's process (not
        of the machine: that takes a ``flush``). Stored in small
        batches, the lock released between them, so I/O goes on.
        """
        with self.lock:
            now = time.monotonic()
            if not self._dirty or now - self._staged_at < older_than:
                return
            keys = list(self._dirty)
        for start in range(0, len(keys), self._batch):
            if start:
                # Let waiting I/O take the lock (it is not fair).
                time.sleep(PAUSE)
            with self.lock:
                part = [key for key in keys[start:start + self._batch]
                        if key in self._dirty]
                if part:
                    self._settle(part)
        with self.lock:
            # What is still staged was written after ``now``.
            self._staged_at = now

    def _settle(self, keys=None):
        """Store staged chunks (``keys``, default all), one transaction."""
        if not self._dirty:
            return
        self._apply_patches(keys)
        if keys is None:
            staged, self._dirty = self._dirty, {}
        else:
            staged = {key: self._dirty.pop(key) for key in keys}
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
                staged.update(self._dirty)
                self._dirty = staged
            # Look again before accepting more.
            self._space_left = None
            if _is_full(e):
                raise NoSpace('storing staged writes: %s' % e) from e
            raise
        if not theirs:
            try:
                self._compact(self.segments.sparse())
            except Exception as e:
                # Compaction only gives space back; it tries again with
                # the next batch.
                if not _is_full(e):
                    raise
                self._space_left = None

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
        """Move the live chunks of a mostly dead segment to the current
        one; the old file goes at the next durable point (``flush``).
        """
        if seg is None:
            return
        if not self.segments.live[seg]:
            # Nothing in it is referenced: no need to read it.
            self.segments.retire(seg)
            return
        records, data = self.segments.records(seg)
        where = {}
        for chunk, s, off in self._select_in(
                'SELECT id, seg, off FROM chunks WHERE id IN (%s)',
                [chunk for chunk, _o, _s in records]):
            where[chunk] = (s, off)
        live = [(chunk, data[off:off + size]) for chunk, off, size in records
                if where.get(chunk) == (seg, off)]
        with self._own_transaction():
            if live:
                moved = self.segments.append(live)
                self.db.executemany(
                    'UPDATE chunks SET seg = ?, off = ? WHERE id = ?',
                    [(s, off, chunk) for (s, off), (chunk, _d) in
                     zip(moved, live)])
        self._work['segments_compacted'] += 1
        self.segments.retire(seg)

    def _select_in(self, sql, keys, *args):
        """Rows of ``sql`` % placeholders for ``keys``, in batches."""
        keys = list(keys)
        for start in range(0, len(keys), BATCH):
            part = keys[start:start + BATCH]
            yield from self.db.execute(
                sql % ','.join('?' * len(part)), list(args) + part)

    def _put_blocks(self, layer, chain, blocks):
        """Store whole chunks and point the layer at them, in few queries.

        ``blocks``: [(idx, data or None for zeros)], ascending idx.
        """
        dedup = self._layer_dedup(layer)
        idxs = [idx for idx, _block in blocks]
        old = dict(self._select_in(
            'SELECT idx, chunk FROM maps WHERE layer = ? AND idx IN (%s)',
            idxs, layer))
        digests, known = {}, {}
        if dedup:
            digest_of = blake3.blake3
            for idx, block in blocks:
                if block is not None:
                    digests[idx] = digest_of(block).digest()
            known.update((d, i) for i, d in self._select_in(
                'SELECT id, digest FROM chunks WHERE digest IN (%s)',
                set(digests.values())))
        compress = self._codec()[0].compress
        new_rows, entries, zeros = [], [], []
        logical = physical = stored = 0
        for idx, block in blocks:
            if block is None:
                zeros.append(idx)
                continue
            logical += len(block)
            digest = digests.get(idx)
            chunk = known.get(digest) if digest is not None else None
            if chunk is None:
                packed = compress(block)
                self._last_chunk += 1
                chunk = self._last_chunk
                new_rows.append((chunk, digest, len(block), packed))
                physical += len(packed)
                stored += len(block)
                if digest is not None:
                    known[digest] = chunk
            entries.append((layer, idx, chunk))
        # One reference per map entry; new chunks are inserted with theirs.
        # Their data is written first (the rows point at it).
        counts = collections.Counter(chunk for _l, _i, chunk in entries)
        places = self.segments.append(
            [(chunk, packed) for chunk, _d, _r, packed in new_rows])
        self.db.executemany(
            'INSERT INTO chunks (id, digest, refs, raw, size, seg, off) '
            'VALUES (?, ?, ?, ?, ?, ?, ?)',
            [(chunk, digest, counts.pop(chunk), raw, len(packed), seg, off)
             for (chunk, digest, raw, packed), (seg, off) in
             zip(new_rows, places)])
        if counts:
            self.db.executemany(
                'UPDATE chunks SET refs = refs + ? WHERE id = ?',
                [(n, chunk) for chunk, n in counts.items()])
        if zeros:
            masked = set()
            below = chain[1:]
            if below:
                marks = ','.join('?' * len(below))
                masked = {idx for (idx,) in self._select_in(
                    'SELECT DISTINCT idx FROM maps WHERE layer IN (' + marks +
                    ') AND idx IN (%s)', zeros, *below)}
            # A zero range over nothing costs nothing: no entry at all.
            self.db.executemany(
                'DELETE FROM maps WHERE layer = ? AND idx = ?',
                [(layer, idx) for idx in zeros if idx not in masked])
            entries += [(layer, idx, ZERO) for idx in zeros if idx in masked]
        self.db.executemany('INSERT OR REPLACE INTO maps VALUES (?, ?, ?)',
                            entries)
        # What the layer holds itself, kept so that reading it is one row.
        delta = logical - self._unref_chunks(old.values())
        if delta:
            self.db.execute('UPDATE layers SET written = written + ? WHERE '
                            'id = ?', (delta, layer))
        self._add_total('logical', logical)
        self._add_total('physical', physical)
        self._add_total('stored_raw', stored)

    def unmap(self, layer, offset, length):
        """Discard a range: it reads as zeros and frees its space."""
        pos, end = offset, offset + length
        while pos < end:
            pos = self.unmap_step(layer, pos, end)

    def unmap_step(self, layer, offset, end):
        """Discard from ``offset`` toward ``end``; returns where it
        stopped.

        One step drops or masks at most ``UNMAP_BATCH`` map entries, so
        its work is in proportion to the data mapped in the range, never
        to the range's length, and a caller that releases the lock
        between steps lets other volumes' I/O through. Whole chunks lose
        their map entries (a zero entry where an ancestor holds data);
        a partial chunk at either end is written with zeros.
        """
        chunk = self.chunk
        first = -(-offset // chunk)
        last = end // chunk
        with self.lock:
            if offset % chunk or first >= last:
                stop = min(first * chunk, end) if first < last else end
                self.write(layer, offset, bytes(stop - offset))
                return stop
            chain = self._chain(layer)
            rows = self.db.execute(
                'SELECT idx, chunk FROM maps WHERE layer = ? AND idx >= ? '
                'AND idx < ? ORDER BY idx LIMIT ?',
                (layer, first, last, UNMAP_BATCH)).fetchall()
            stop = rows[-1][0] + 1 if len(rows) == UNMAP_BATCH else last
            # Data below shows through unless masked; each ancestor is
            # read in index order, a batch at most.
            below = set()
            for anc in chain[1:]:
                found = [idx for (idx,) in self.db.execute(
                    'SELECT idx FROM maps WHERE layer = ? AND idx >= ? AND '
                    'idx < ? AND chunk != 0 ORDER BY idx LIMIT ?',
                    (anc, first, stop, UNMAP_BATCH))]
                if len(found) == UNMAP_BATCH:
                    stop = found[-1] + 1
                below.update(found)
            masked = sorted(idx for idx in below if idx < stop)
            self._work['unmap_entries'] += len(rows) + len(masked)
            with self._unstaged(layer, first, stop):
                self._drop_entries(layer, first, stop, rows, masked)
            return stop * chunk

    @contextlib.contextmanager
    def _unstaged(self, layer, first, stop):
        """Staged chunks [first, stop) of ``layer`` are dropped, and
        kept again if the step fails.
        """
        dirty = self._dirty
        dropped = {key: dirty.pop(key) for key in [
            key for key in dirty
            if key[0] == layer and first <= key[1] < stop]}
        try:
            yield
        except BaseException:
            dirty.update(dropped)
            raise

    def _drop_entries(self, layer, first, stop, rows, masked):
        """One step of an UNMAP: the layer's entries in [first, stop)
        go (``rows`` among them), zeros mask ``masked`` ancestors' data.
        """
        with self._own_transaction():
            freed = self._unref_chunks(
                [entry for idx, entry in rows if idx < stop])
            self.db.execute('DELETE FROM maps WHERE layer = ? AND idx >= ? '
                            'AND idx < ?', (layer, first, stop))
            self.db.executemany('INSERT INTO maps VALUES (?, ?, %d)' % ZERO,
                                [(layer, idx) for idx in masked])
            if freed:
                self.db.execute('UPDATE layers SET written = written - ? '
                                'WHERE id = ?', (freed, layer))

    @_settled
    def allocated_run(self, layer, offset, limit):
        """(allocated, length) of the run of chunks starting at offset.

        A chunk is allocated when it holds data (not zeros) anywhere in
        the layer's chain. The run stops after ``limit`` bytes, and
        sooner: a run of data after ``RUN_WINDOW`` chunks, a run of holes
        after ``RUN_PROBES`` masked entries. Initiators ask again from
        where a run stops (GET LBA STATUS), and some ask before every
        read (an NBD server answering sparse reads), so the work here is
        bounded whatever the volume holds.
        """
        with self.lock:
            chain = self._chain(layer)
            first = offset // self.chunk
            end = (offset + limit + self.chunk - 1) // self.chunk
            window = min(end, first + RUN_WINDOW)
            if len(chain) == 1:
                self._work['map_probes'] += 1
                count, = self.db.execute(
                    'SELECT COUNT(*) FROM maps WHERE layer = ? AND idx >= ? '
                    'AND idx < ? AND chunk != 0',
                    (chain[0], first, window)).fetchone()
                if count == window - first:
                    # All data (the common answer), counted inside SQLite.
                    return True, min(window * self.chunk,
                                     offset + limit) - offset
            kind = self._allocated(chain, first)
            if kind:
                stop = self._data_run_end(chain, first, window)
            else:
                stop = self._hole_run_end(chain, first, end)
            return kind, min(stop * self.chunk, offset + limit) - offset

    def _allocated(self, chain, idx):
        """Whether chunk ``idx`` of an image holds data: one probe."""
        self._work['map_probes'] += 1
        if len(chain) == 1:
            row = self.db.execute(
                'SELECT chunk FROM maps WHERE layer = ? AND idx = ?',
                (chain[0], idx)).fetchone()
            return bool(row and row[0] != ZERO)
        found = dict(self.db.execute(
            'SELECT layer, chunk FROM maps WHERE idx = ? AND layer IN (%s)'
            % ','.join('?' * len(chain)), (idx, *chain)))
        for anc in chain:
            if anc in found:
                return found[anc] != ZERO
        return False

    def _data_run_end(self, chain, first, end):
        """First chunk in [first, end) that is a hole (or ``end``)."""
        self._work['map_probes'] += 1
        marks = ','.join('?' * len(chain))
        rank = {anc: n for n, anc in enumerate(chain)}
        top = {}
        for anc, idx, chunk in self.db.execute(
                'SELECT layer, idx, chunk FROM maps WHERE layer IN (%s) '
                'AND idx >= ? AND idx < ?' % marks, (*chain, first, end)):
            if idx not in top or rank[anc] < top[idx][0]:
                top[idx] = (rank[anc], chunk)
        for idx in range(first, end):
            entry = top.get(idx)
            if entry is None or entry[1] == ZERO:
                return idx
        return end

    def _hole_run_end(self, chain, first, end):
        """First chunk in [first, end) that holds data (or ``end``)."""
        pos = first
        for _n in range(RUN_PROBES):
            nearest = end
            for anc in chain:
                self._work['map_probes'] += 1
                row = self.db.execute(
                    'SELECT idx FROM maps WHERE layer = ? AND idx >= ? AND '
                    'idx < ? AND chunk != 0 ORDER BY idx LIMIT 1',
                    (anc, pos, nearest)).fetchone()
                if row is not None:
                    nearest = row[0]
            if nearest == end or self._allocated(chain, nearest):
                return nearest
            # Data below, masked by zeros written above it.
            pos = nearest + 1
        return pos

    @_settled
    def changed_chunks(self, layer, base):
        """Chunk indexes whose content may differ between two images.

        ``base`` is an earlier frozen image (or None: the empty volume).
        When ``base`` is an ancestor of ``layer`` only the layers above it
        are looked at, which is what makes replication incremental.
        """
        with self.lock:
            chain = self._chain(layer)
            if base is not None and base in chain:
                layers = chain[:chain.index(base)]
            else:
                layers = chain + (self._chain(base) if base else ())
            idxs = set()
            for anc in layers:
                idxs.update(idx for (idx,) in self.db.execute(
                    'SELECT idx FROM maps WHERE layer = ?', (anc,)))
        return sorted(idxs)

    @_settled
    def read_chunks(self, layer, idxs):
        """[(idx, data or None for zeros)] of one image."""
        with self.lock:
            chain = self._chain(layer)
            return [(idx, self._read_chunk(chain, idx)) for idx in idxs]

    @_settled
    def layer_is_empty(self, layer):
        with self.lock:
            return self.db.execute('SELECT 1 FROM maps WHERE layer = ? '
                                   'LIMIT 1', (layer,)).fetchone() is None

    def parent_of(self, layer):
        with self.lock:
            row = self.db.execute('SELECT parent FROM layers WHERE id = ?',
                                  (layer,)).fetchone()
        return row[0] if row else None

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
            rows = dict(self.db.execute('SELECT name, value FROM totals'))
        return {'physical': rows['physical'], 'logical': rows['logical'],
                'stored_raw': rows['stored_raw']}

    @_settled
    def usage(self, layers):
        """(logical, physical) bytes the maps of ``layers`` hold.

        A chunk shared by several of the layers counts once physically.
        """
        if not layers:
            return 0, 0
        marks = ','.join('?' * len(layers))
        with self.lock:
            logical = self.db.execute(
                'SELECT COALESCE(SUM(c.raw), 0) FROM maps m JOIN chunks c '
                'ON c.id = m.chunk WHERE m.layer IN (%s)' % marks,
                list(layers)).fetchone()[0]
            physical = self.db.execute(
                'SELECT COALESCE(SUM(size), 0) FROM chunks WHERE id '
                'IN (SELECT chunk FROM maps WHERE layer IN (%s))' % marks,
                list(layers)).fetchone()[0]
        return logical, physical

    @_settled
    def layer_written(self, layer):
        """Bytes of data this layer holds itself (not its ancestors)."""
        with self.lock:
            row = self.db.execute('SELECT written FROM layers WHERE id = ?',
                                  (layer,)).fetchone()
        return row[0] if row else 0

    @_settled
    def layers_written(self, layers):
        """layer -> bytes it holds itself, for many layers in one query."""
        layers = [layer for layer in set(layers) if layer is not None]
        written = dict.fromkeys(layers, 0)
        if layers:
            with self.lock:
                written.update(self.db.execute(
                    'SELECT id, written FROM layers WHERE id IN (%s)' %
                    ','.join('?' * len(layers)), layers).fetchall())
        return written
