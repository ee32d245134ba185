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

"""The engine's chunk store: compressed, deduplicated chunks and their
reference counts.

A chunk is stored once (zstd-compressed, in a segment record) with a
row giving its digest (deduplicating layers only), its reference count,
its sizes and where its data is. Every map entry holds one reference;
a chunk is freed with its last. Reads go through a cache of
decompressed chunks (stored chunks never change). Compaction moves the
live chunks of a mostly dead segment to the current one.

The engine owns the transactions and the lock; everything here runs
inside them, on the engine's connection.
"""

import collections
import threading

import blake3
import zstandard

from reference_array.core import patch_log

ZERO = 0
# SQLite's default limit on host parameters is well above this.
BATCH = 500
# Every zstd frame begins with these bytes. A record that does not is
# the chunk stored as it is: compressing data that does not shrink costs
# a write more CPU than anything else and saves nothing. A chunk that
# itself begins with them is always stored as a frame.
FRAME_MAGIC = b'\x28\xb5\x2f\xfd'
# Bytes of a chunk compressed first, at its start and at its middle: if
# neither shrinks, the chunk is stored as it is without compressing it.
SAMPLE = 512


def pack(compress, block):
    """The record of a whole chunk: a zstd frame, or the chunk as it is
    if samples of it (or the whole) do not shrink.
    """
    if block[:4] == FRAME_MAGIC:
        return compress(block)
    middle = len(block) // 2
    if len(block) >= 2 * SAMPLE and all(
            len(compress(block[at:at + SAMPLE])) >= SAMPLE
            for at in (0, middle)):
        return bytes(block)
    packed = compress(block)
    return bytes(block) if len(packed) >= len(block) else packed


def unpack(decompress, record):
    """A chunk's data from its record (see ``pack``)."""
    if record[:4] != FRAME_MAGIC:
        return record
    return decompress(record)


def select_in(db, sql, keys, *args):
    """Rows of ``sql`` % placeholders for ``keys``, in batches."""
    keys = list(keys)
    for start in range(0, len(keys), BATCH):
        part = keys[start:start + BATCH]
        yield from db.execute(
            sql % ','.join('?' * len(part)), list(args) + part)


class ChunkStore(object):

    def __init__(self, db, segments, work, level, cache_limit):
        """``work``: the engine's counter of work done, by kind."""
        self.db = db
        self.segments = segments
        self._work = work
        self._local = threading.local()
        self._level = level
        # chunk id -> decompressed data; stored chunks never change.
        self._cache = collections.OrderedDict()
        self._cache_bytes = 0
        self._cache_limit = cache_limit
        # Chunk ids are handed out here so a write can insert all its
        # chunks in one statement (the engine sets where they start once
        # its tables are there).
        self.last_chunk = 0
        # The segment being compacted a step at a time: [seg, its
        # records, its bytes, records done], or None.
        self._compacting = None

    # -- codecs (one per thread: zstd contexts are not thread-safe) ------
    def codec(self):
        codec = getattr(self._local, 'codec', None)
        if codec is None:
            codec = (zstandard.ZstdCompressor(level=self._level),
                     zstandard.ZstdDecompressor())
            self._local.codec = codec
        return codec

    def drop_cache(self):
        """Forget every decompressed chunk (the next reads fetch)."""
        self._cache.clear()
        self._cache_bytes = 0

    def add_total(self, name, delta):
        if delta:
            self.db.execute('UPDATE totals SET value = value + ? WHERE '
                            'name = ?', (delta, name))

    def select_in(self, sql, keys, *args):
        """Rows of ``sql`` % placeholders for ``keys``, in batches."""
        return select_in(self.db, sql, keys, *args)

    def totals(self):
        """Bytes stored: physical (compressed), logical (referenced by
        maps), stored_raw (uncompressed, once per chunk).
        """
        rows = dict(self.db.execute('SELECT name, value FROM totals'))
        return {'physical': rows['physical'], 'logical': rows['logical'],
                'stored_raw': rows['stored_raw']}

    def unref(self, chunks):
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
        for chunk, refs, raw, size, seg in select_in(
                self.db, 'SELECT id, refs, raw, size, seg FROM chunks WHERE '
                'id IN (%s)', counts):
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
        self.add_total('logical', -logical)
        self.add_total('physical', -physical)
        self.add_total('stored_raw', -stored)
        return logical

    def _forget(self, chunk):
        data = self._cache.pop(chunk, None)
        if data is not None:
            self._cache_bytes -= len(data)

    def data(self, chunk, where=None):
        """A stored chunk's data, decompressed (through the cache)."""
        data = self._cache.get(chunk)
        if data is not None:
            self._cache.move_to_end(chunk)
            return data
        data = unpack(self.codec()[1].decompress, self.packed(chunk, where))
        self._work['chunks_fetched'] += 1
        self._work['bytes_decompressed'] += len(data)
        self._cache[chunk] = data
        self._cache_bytes += len(data)
        while self._cache_bytes > self._cache_limit:
            _old, dropped = self._cache.popitem(last=False)
            self._cache_bytes -= len(dropped)
        return data

    def packed(self, chunk, where=None):
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

    def content(self, chunk):
        """A map entry's data: None for zeros."""
        return None if chunk == ZERO else self.data(chunk)

    def compact(self, seg, transaction):
        """Move the live chunks of a mostly dead segment to the current
        one, in ``transaction()``; the old file goes at the next durable
        point (``flush``).
        """
        if seg is None:
            return
        if not self.segments.live[seg]:
            # Nothing in it is referenced: no need to read it.
            self.segments.retire(seg)
            return
        records, data, _end = self.segments.records(seg)
        self._move(seg, records, data, 0, transaction)
        self._done(seg)

    def compact_step(self, transaction, limit):
        """One bounded step of compaction: the records in at most
        ``limit`` bytes of the segment being compacted (a sparse one is
        picked when none is) read, and the live ones moved in
        ``transaction()``, so that no write waits behind a whole
        segment. A segment is retired once every record has been looked
        at; until then it keeps every byte, so a crash between steps
        loses nothing (a row points at one copy or the other, and the
        next start counts what is live). False when nothing is left to
        compact.
        """
        state = self._compacting
        if state is not None and (state[0] in self.segments.retired or
                                  state[0] not in self.segments.sizes):
            # Compacted whole or retired meanwhile (``_reclaim``).
            state = self._compacting = None
        if state is None:
            seg = self.segments.sparse()
            if seg is None:
                return False
            if not self.segments.live[seg]:
                self.segments.retire(seg)
                return True
            state = self._compacting = [seg, 0]
        seg, start = state
        records, data, end = self.segments.records(seg, start, limit)
        self._move(seg, records, data, start, transaction)
        # Only once they moved: a step that fails is tried again.
        state[1] = end
        if not records:
            # The end of the segment (or a torn record there).
            self._compacting = None
            self._done(seg)
        return True

    def _move(self, seg, records, data, base, transaction):
        """Copy the records of ``seg`` (read from byte ``base`` into
        ``data``) that rows still point at to the current segment and
        point the rows there, in ``transaction()``.
        """
        if not records:
            return
        where = {}
        for chunk, s, off in select_in(
                self.db, 'SELECT id, seg, off FROM chunks WHERE id IN (%s)',
                [chunk for chunk, _o, _s in records]):
            where[chunk] = (s, off)
        live = [(chunk, data[off - base:off - base + size])
                for chunk, off, size in records
                if where.get(chunk) == (seg, off)]
        with transaction():
            self._work['compaction_steps'] += 1
            if live:
                moved = self.segments.append(live)
                self.db.executemany(
                    'UPDATE chunks SET seg = ?, off = ? WHERE id = ?',
                    [(s, off, chunk) for (s, off), (chunk, _d) in
                     zip(moved, live)])
        for _chunk, packed in live:
            self.segments.freed(seg, len(packed))

    def _done(self, seg):
        self._work['segments_compacted'] += 1
        self.segments.retire(seg)

    def put_blocks(self, layer, dedup, chain, blocks):
        """Store whole chunks and point the layer at them, in few queries.

        ``chain``: the layer and its ancestors; ``dedup``: whether the
        layer's chunks are shared by digest; ``blocks``: [(idx, data or
        None for zeros)], ascending idx.
        """
        idxs = [idx for idx, _block in blocks]
        old = dict(select_in(
            self.db, 'SELECT idx, chunk FROM maps WHERE layer = ? AND idx '
            'IN (%s)', idxs, layer))
        digests, known = {}, {}
        if dedup:
            digest_of = blake3.blake3
            for idx, block in blocks:
                if block is not None:
                    digests[idx] = digest_of(block).digest()
            known.update((d, i) for i, d in select_in(
                self.db, 'SELECT id, digest FROM chunks WHERE digest IN (%s)',
                set(digests.values())))
        compress = self.codec()[0].compress
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
                packed = pack(compress, block)
                self.last_chunk += 1
                chunk = self.last_chunk
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
                masked = {idx for (idx,) in select_in(
                    self.db, 'SELECT DISTINCT idx FROM maps WHERE layer IN ('
                    + marks + ') AND idx IN (%s)', zeros, *below)}
            # A zero range over nothing costs nothing: no entry at all.
            self.db.executemany(
                'DELETE FROM maps WHERE layer = ? AND idx = ?',
                [(layer, idx) for idx in zeros if idx not in masked])
            entries += [(layer, idx, ZERO) for idx in zeros if idx in masked]
        self.db.executemany('INSERT OR REPLACE INTO maps VALUES (?, ?, ?)',
                            entries)
        # Replaced entries' logged slots go (the new data holds them).
        for start in range(0, len(idxs), BATCH):
            part = idxs[start:start + BATCH]
            patch_log.drop(self.db, self.unref, 'layer = ? AND idx IN (%s)'
                           % ','.join('?' * len(part)), [layer] + part)
        # What the layer holds itself, kept so that reading it is one row.
        delta = logical - self.unref(old.values())
        if delta:
            self.db.execute('UPDATE layers SET written = written + ? WHERE '
                            'id = ?', (delta, layer))
        self.add_total('logical', logical)
        self.add_total('physical', physical)
        self.add_total('stored_raw', stored)
