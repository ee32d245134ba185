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
* Everything lives in the array's SQLite database: a chunk's data and
  its map entry commit together, so a crash never leaves a map entry
  without its data.
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
import functools
import threading
import time

import blake3
import zstandard

DEFAULT_CHUNK = 16 * 1024
ZERO = 0
# Staged writes settle once this much is waiting; decompressed chunks are
# kept up to this much for reads. Both bound the array's memory.
DIRTY_LIMIT = 32 * 1024 * 1024
CACHE_LIMIT = 32 * 1024 * 1024
# SQLite's default limit on host parameters is well above this.
BATCH = 500

# Reference counts live apart from the data: a count changes on every
# deduplicated write, and SQLite rewrites a whole row to change a column.
CHUNK_TABLES = ("""
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    digest BLOB,
    refs INTEGER NOT NULL,
    raw INTEGER NOT NULL,
    size INTEGER NOT NULL
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
    dedup INTEGER NOT NULL
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
                 dirty_limit=DIRTY_LIMIT, cache_limit=CACHE_LIMIT):
        """``store``: the core Store whose database holds the data."""
        self.store = store
        self.db = store.connection
        self.lock = store.lock
        self.chunk = chunk_size
        self._zero = bytes(chunk_size)
        self._local = threading.local()
        self._level = level
        # ops, bytes and busy seconds per direction, for stats/system.
        self.counters = {'read_ops': 0, 'write_ops': 0, 'read_bytes': 0,
                         'write_bytes': 0, 'read_seconds': 0.0,
                         'write_seconds': 0.0}
        self.volume_counters = {}
        # Layers never change parent, so chains are cached until a layer
        # is deleted; chunk ids are handed out here so a write can insert
        # all its chunks in one statement.
        self._chains = {}
        self._dedup = {}
        # (layer, idx) -> whole chunk, or None for zeros, not yet settled.
        self._dirty = {}
        self._staged_at = 0.0
        self._dirty_limit = max(dirty_limit, chunk_size)
        # chunk id -> decompressed data; stored chunks never change.
        self._cache = collections.OrderedDict()
        self._cache_bytes = 0
        self._cache_limit = cache_limit
        store.call_before_transactions(self._settle)
        with self.lock:
            self._migrate()
            self.db.executescript(SCHEMA)
        with self.store.transaction():
            for name in ('physical', 'logical', 'stored_raw'):
                self.db.execute('INSERT OR IGNORE INTO totals VALUES (?, 0)',
                                (name,))
            self._last_chunk = self.db.execute(
                'SELECT COALESCE(MAX(id), 0) FROM chunks').fetchone()[0]

    def _migrate(self):
        """Move a database whose chunks kept their data in the same row."""
        columns = [row[1] for row in self.db.execute(
            'PRAGMA table_info(chunks)')]
        if 'data' not in columns:
            return
        with self.store.transaction():
            for statement in (
                    'DROP INDEX IF EXISTS chunks_digest',
                    'ALTER TABLE chunks RENAME TO chunks_v1',
                    *CHUNK_TABLES,
                    'INSERT INTO chunks SELECT id, digest, refs, raw, '
                    'length(data) FROM chunks_v1',
                    'INSERT INTO chunk_data SELECT id, data FROM chunks_v1',
                    'DROP TABLE chunks_v1'):
                self.db.execute(statement)

    def count_volume(self, volume_id, direction, nbytes, seconds):
        """Per-volume I/O counters (K2 stats/volumes)."""
        with self.lock:
            mine = self.volume_counters.setdefault(
                volume_id, dict.fromkeys(self.counters, 0))
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
        self._chains[layer] = chain
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
        """Drop one reference per listed chunk id; free unreferenced ones."""
        counts = collections.Counter(chunks)
        counts.pop(ZERO, None)
        if not counts:
            return
        self.db.executemany('UPDATE chunks SET refs = refs - ? WHERE id = ?',
                            [(n, chunk) for chunk, n in counts.items()])
        logical = physical = stored = 0
        freed = []
        for chunk, refs, raw, size in self._select_in(
                'SELECT id, refs, raw, size FROM chunks WHERE id IN (%s)',
                counts):
            logical += raw * counts[chunk]
            if refs <= 0:
                freed.append((chunk,))
                physical += size
                stored += raw
                self._forget(chunk)
        self.db.executemany('DELETE FROM chunks WHERE id = ?', freed)
        self.db.executemany('DELETE FROM chunk_data WHERE id = ?', freed)
        self._add_total('logical', -logical)
        self._add_total('physical', -physical)
        self._add_total('stored_raw', -stored)

    def _forget(self, chunk):
        data = self._cache.pop(chunk, None)
        if data is not None:
            self._cache_bytes -= len(data)

    def _chunk_data(self, chunk):
        data = self._cache.get(chunk)
        if data is not None:
            self._cache.move_to_end(chunk)
            return data
        packed, = self.db.execute('SELECT data FROM chunk_data WHERE id = ?',
                                  (chunk,)).fetchone()
        data = self._codec()[1].decompress(packed)
        self._cache[chunk] = data
        self._cache_bytes += len(data)
        while self._cache_bytes > self._cache_limit:
            _old, dropped = self._cache.popitem(last=False)
            self._cache_bytes -= len(dropped)
        return data

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
            chunk = self._map_entry(layer, idx)
            if chunk is not None:
                return self._content(chunk)
        return None

    def _map_entry(self, layer, idx):
        row = self.db.execute(
            'SELECT chunk FROM maps WHERE layer = ? AND idx = ?',
            (layer, idx)).fetchone()
        return row[0] if row else None

    def _content(self, chunk):
        return None if chunk == ZERO else self._chunk_data(chunk)

    def _apply(self, layer, idx, patch, base):
        """Stage a patch as the whole chunk it makes of ``base``."""
        block = patch.over(base)
        block = None if block == self._zero else block
        self._dirty[(layer, idx)] = block
        return block

    def _apply_patches(self):
        """Look up the earlier content of every patch, a query per batch."""
        by_layer = {}
        for (layer, idx), entry in self._dirty.items():
            if entry.__class__ is _Patch:
                by_layer.setdefault(layer, {})[idx] = entry
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
            self.counters[direction + '_ops'] += 1
            self.counters[direction + '_bytes'] += nbytes
            self.counters[direction + '_seconds'] += (time.monotonic()
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
            if (self.store.in_transaction() or
                    len(dirty) * self.chunk >= self._dirty_limit):
                self._settle()
        self._count('write', len(data), started)

    def settle(self, older_than=0.0):
        """Store the staged writes if they have waited ``older_than``
        seconds: they then survive a crash of the array's process (not
        of the machine: that takes a ``flush``).
        """
        with self.lock:
            if self._dirty and (time.monotonic() - self._staged_at
                                >= older_than):
                self._settle()

    def _settle(self):
        """Store every staged chunk, in one transaction."""
        if not self._dirty:
            return
        self._apply_patches()
        staged, self._dirty = self._dirty, {}
        by_layer = {}
        for (layer, idx), block in staged.items():
            by_layer.setdefault(layer, []).append((idx, block))
        # Inside a caller's transaction only the caller's own writes are
        # staged (the rest were stored when it began); they go with it.
        theirs = self.store.in_transaction()
        try:
            with self.store.transaction(durable=False):
                for layer, blocks in by_layer.items():
                    blocks.sort(key=lambda entry: entry[0])
                    self._put_blocks(layer, self._chain(layer), blocks)
        except BaseException:
            if not theirs:
                # Nothing was stored: keep the staged data, newer on top.
                staged.update(self._dirty)
                self._dirty = staged
            raise

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
        counts = collections.Counter(chunk for _l, _i, chunk in entries)
        self.db.executemany(
            'INSERT INTO chunks (id, digest, refs, raw, size) VALUES '
            '(?, ?, ?, ?, ?)', [(chunk, digest, counts.pop(chunk), raw,
                                 len(packed))
                                for chunk, digest, raw, packed in new_rows])
        self.db.executemany(
            'INSERT INTO chunk_data (id, data) VALUES (?, ?)',
            [(chunk, packed) for chunk, _d, _r, packed in new_rows])
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
        self._unref_chunks(old.values())
        self._add_total('logical', logical)
        self._add_total('physical', physical)
        self._add_total('stored_raw', stored)

    def unmap(self, layer, offset, length):
        """Discard a range: it reads as zeros and frees its space."""
        step = 64 * self.chunk
        pos, end = offset, offset + length
        while pos < end:
            take = min(step, end - pos)
            self.write(layer, pos, bytes(take))
            pos += take

    @_settled
    def allocated_run(self, layer, offset, limit):
        """(allocated, length) of the run of chunks starting at offset.

        A chunk is allocated when it holds data (not zeros) anywhere in
        the layer's chain; the run stops after ``limit`` bytes.
        """
        with self.lock:
            chain = self._chain(layer)

            def state(idx):
                for anc in chain:
                    row = self.db.execute(
                        'SELECT chunk FROM maps WHERE layer = ? AND idx = ?',
                        (anc, idx)).fetchone()
                    if row is not None:
                        return row[0] != ZERO
                return False
            first = offset // self.chunk
            kind = state(first)
            idx = first + 1
            end = (offset + limit + self.chunk - 1) // self.chunk
            while idx < end and state(idx) == kind:
                idx += 1
            return kind, min(idx * self.chunk, offset + limit) - offset

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
                layers = chain + (self._chain(base) if base else [])
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
            self.store.sync()

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
            row = self.db.execute(
                'SELECT COALESCE(SUM(c.raw), 0) FROM maps m JOIN chunks c '
                'ON c.id = m.chunk WHERE m.layer = ?', (layer,)).fetchone()
        return row[0]
