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
  volumes are indexed by their SHA-256 digest and shared; every map entry
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
        # Layers never change parent, so chains are cached until a layer
        # is deleted; chunk ids are handed out here so a write can insert
        # all its chunks in one statement.
        self._chains = {}
        self._dedup = {}
        with self.lock:
            self.db.executescript(SCHEMA)
        with self.store.transaction():
            for name in ('physical', 'logical', 'stored_raw'):
                self.db.execute('INSERT OR IGNORE INTO totals VALUES (?, 0)',
                                (name,))
            self._last_chunk = self.db.execute(
                'SELECT COALESCE(MAX(id), 0) FROM chunks').fetchone()[0]

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
                self._chains.clear()
                self._dedup.pop(layer, None)
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
            blocks = []
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
                blocks.append((idx, None if block == self._zero else block))
                pos += take
            if blocks:
                self._put_blocks(layer, chain, blocks)
        self._count('write', len(data), started)

    def _put_blocks(self, layer, chain, blocks):
        """Store whole chunks and point the layer at them, in few queries.

        ``blocks``: [(idx, data or None for zeros)], ascending idx.
        """
        dedup = self._layer_dedup(layer)
        lo, hi = blocks[0][0], blocks[-1][0]
        old = dict(self.db.execute(
            'SELECT idx, chunk FROM maps WHERE layer = ? AND idx BETWEEN ? '
            'AND ?', (layer, lo, hi)))
        digests, known = {}, {}
        if dedup:
            for idx, block in blocks:
                if block is not None:
                    digests[idx] = hashlib.sha256(block).digest()
            wanted = list(set(digests.values()))
            for start in range(0, len(wanted), 500):
                part = wanted[start:start + 500]
                known.update((d, i) for i, d in self.db.execute(
                    'SELECT id, digest FROM chunks WHERE digest IN (%s)' %
                    ','.join('?' * len(part)), part))
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
        counts = {}
        for _layer, _idx, chunk in entries:
            counts[chunk] = counts.get(chunk, 0) + 1
        self.db.executemany(
            'INSERT INTO chunks (id, digest, refs, raw, data) VALUES '
            '(?, ?, ?, ?, ?)', [(chunk, digest, counts.pop(chunk), raw, packed)
                                for chunk, digest, raw, packed in new_rows])
        if counts:
            self.db.executemany(
                'UPDATE chunks SET refs = refs + ? WHERE id = ?',
                [(n, chunk) for chunk, n in counts.items()])
        if zeros:
            masked = set()
            below = chain[1:]
            if below:
                masked = {idx for (idx,) in self.db.execute(
                    'SELECT DISTINCT idx FROM maps WHERE layer IN (%s) AND '
                    'idx BETWEEN ? AND ?' % ','.join('?' * len(below)),
                    below + [zeros[0], zeros[-1]])}
            # A zero range over nothing costs nothing: no entry at all.
            self.db.executemany(
                'DELETE FROM maps WHERE layer = ? AND idx = ?',
                [(layer, idx) for idx in zeros if idx not in masked])
            entries += [(layer, idx, ZERO) for idx in zeros if idx in masked]
        self.db.executemany('INSERT OR REPLACE INTO maps VALUES (?, ?, ?)',
                            entries)
        for idx, _block in blocks:
            previous = old.get(idx)
            if previous:
                self._unref_chunk(previous)
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
                'SELECT COALESCE(SUM(length(data)), 0) FROM chunks WHERE id '
                'IN (SELECT chunk FROM maps WHERE layer IN (%s))' % marks,
                list(layers)).fetchone()[0]
        return logical, physical

    def layer_written(self, layer):
        """Bytes of data this layer holds itself (not its ancestors)."""
        with self.lock:
            row = self.db.execute(
                'SELECT COALESCE(SUM(c.raw), 0) FROM maps m JOIN chunks c '
                'ON c.id = m.chunk WHERE m.layer = ?', (layer,)).fetchone()
        return row[0]
