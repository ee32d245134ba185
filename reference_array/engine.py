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
  volumes are indexed by their BLAKE2b digest and shared; every map entry
  holds one reference, and a chunk is freed with its last reference.
* Everything lives in the array's SQLite database: a write's data and
  its map entry commit together, so a crash never leaves a map entry
  without its data. ``flush`` makes every committed write durable on disk.
"""

import hashlib
import threading
import time

import zstandard

DEFAULT_CHUNK = 16 * 1024
ZERO = 0

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
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    digest BLOB,
    refs INTEGER NOT NULL,
    raw INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_digest ON chunks(digest)
    WHERE digest IS NOT NULL;
CREATE TABLE IF NOT EXISTS totals (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
"""


class Engine(object):

    def __init__(self, store, chunk_size=DEFAULT_CHUNK, level=1):
        """``store``: the MetadataStore whose database holds the data."""
        self.store = store
        self.db = store._db
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
        with self.lock:
            self.db.executescript(SCHEMA)
        with self.store.transaction():
            for name in ('physical', 'logical', 'stored_raw'):
                self.db.execute('INSERT OR IGNORE INTO totals VALUES (?, 0)',
                                (name,))

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

    def hold(self, layer):
        """One more owner of ``layer`` (a snapshot freezing it)."""
        with self.store.transaction():
            self._ref_layer(layer, +1)

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
                for (chunk,) in self.db.execute(
                        'SELECT chunk FROM maps WHERE layer = ? AND chunk '
                        '!= 0', (layer,)).fetchall():
                    self._unref_chunk(chunk)
                self.db.execute('DELETE FROM maps WHERE layer = ?', (layer,))
                self.db.execute('DELETE FROM layers WHERE id = ?', (layer,))
                layer = row[1]

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
        chain = []
        while layer is not None:
            chain.append(layer)
            row = self.db.execute('SELECT parent FROM layers WHERE id = ?',
                                  (layer,)).fetchone()
            layer = row[0] if row else None
        return chain

    # -- chunks --------------------------------------------------------------
    def _add_total(self, name, delta):
        if delta:
            self.db.execute('UPDATE totals SET value = value + ? WHERE '
                            'name = ?', (delta, name))

    def _unref_chunk(self, chunk):
        self.db.execute('UPDATE chunks SET refs = refs - 1 WHERE id = ?',
                        (chunk,))
        refs, raw, size = self.db.execute(
            'SELECT refs, raw, length(data) FROM chunks WHERE id = ?',
            (chunk,)).fetchone()
        self._add_total('logical', -raw)
        if refs <= 0:
            self.db.execute('DELETE FROM chunks WHERE id = ?', (chunk,))
            self._add_total('physical', -size)
            self._add_total('stored_raw', -raw)

    def _store_chunk(self, data, dedup):
        digest = None
        if dedup:
            digest = hashlib.blake2b(data, digest_size=20).digest()
            row = self.db.execute(
                'SELECT id FROM chunks WHERE digest = ?', (digest,)
            ).fetchone()
            if row is not None:
                self.db.execute('UPDATE chunks SET refs = refs + 1 WHERE '
                                'id = ?', (row[0],))
                self._add_total('logical', len(data))
                return row[0]
        packed = self._codec()[0].compress(data)
        cur = self.db.execute(
            'INSERT INTO chunks (digest, refs, raw, data) VALUES (?,1,?,?)',
            (digest, len(data), packed))
        self._add_total('logical', len(data))
        self._add_total('physical', len(packed))
        self._add_total('stored_raw', len(data))
        return cur.lastrowid

    def _read_chunk(self, chain, idx):
        for layer in chain:
            row = self.db.execute(
                'SELECT chunk FROM maps WHERE layer = ? AND idx = ?',
                (layer, idx)).fetchone()
            if row is None:
                continue
            if row[0] == ZERO:
                return None
            data, = self.db.execute('SELECT data FROM chunks WHERE id = ?',
                                    (row[0],)).fetchone()
            return self._codec()[1].decompress(data)
        return None

    def _set_entry(self, layer, chain, idx, chunk):
        old = self.db.execute(
            'SELECT chunk FROM maps WHERE layer = ? AND idx = ?',
            (layer, idx)).fetchone()
        if old is not None and old[0] != ZERO:
            self._unref_chunk(old[0])
        if chunk == ZERO and not any(
                self.db.execute('SELECT 1 FROM maps WHERE layer = ? AND '
                                'idx = ?', (anc, idx)).fetchone()
                for anc in chain[1:]):
            # Nothing below to mask: an unwritten range costs nothing.
            self.db.execute('DELETE FROM maps WHERE layer = ? AND idx = ?',
                            (layer, idx))
        else:
            self.db.execute('INSERT OR REPLACE INTO maps VALUES (?, ?, ?)',
                            (layer, idx, chunk))

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
        """Write ``data`` at ``offset``; all-zero chunks are unmapped."""
        started = time.monotonic()
        view = memoryview(data)
        with self.store.transaction(durable=False):
            chain = self._chain(layer)
            dedup = bool(self.db.execute(
                'SELECT dedup FROM layers WHERE id = ?',
                (layer,)).fetchone()[0])
            pos, end = offset, offset + len(data)
            while pos < end:
                idx, inner = divmod(pos, self.chunk)
                take = min(self.chunk - inner, end - pos)
                piece = view[pos - offset:pos - offset + take]
                if take == self.chunk:
                    block = bytes(piece)
                else:
                    base = self._read_chunk(chain, idx) or self._zero
                    block = (base[:inner] + bytes(piece) +
                             base[inner + take:])
                if block == self._zero:
                    chunk = ZERO
                else:
                    chunk = self._store_chunk(block, dedup)
                self._set_entry(layer, chain, idx, chunk)
                pos += take
        self._count('write', len(data), started)

    def unmap(self, layer, offset, length):
        """Discard a range: it reads as zeros and frees its space."""
        step = 64 * self.chunk
        pos, end = offset, offset + length
        while pos < end:
            take = min(step, end - pos)
            self.write(layer, pos, bytes(take))
            pos += take

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

    def read_chunks(self, layer, idxs):
        """[(idx, data or None for zeros)] of one image."""
        with self.lock:
            chain = self._chain(layer)
            return [(idx, self._read_chunk(chain, idx)) for idx in idxs]

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
        """Make every committed write durable (SYNCHRONIZE CACHE)."""
        self.store.sync()

    # -- accounting ----------------------------------------------------------
    def totals(self):
        with self.lock:
            rows = dict(self.db.execute('SELECT name, value FROM totals'))
        return {'physical': rows['physical'], 'logical': rows['logical'],
                'stored_raw': rows['stored_raw']}

    def layer_written(self, layer):
        """Bytes of data this layer holds itself (not its ancestors)."""
        with self.lock:
            row = self.db.execute(
                'SELECT COALESCE(SUM(c.raw), 0) FROM maps m JOIN chunks c '
                'ON c.id = m.chunk WHERE m.layer = ?', (layer,)).fetchone()
        return row[0]
