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

"""The pure-Python engine's write-back cache: staged chunks and the
read path over them.

Data-path writes are staged in memory as whole chunks, keyed by (layer,
chunk index), or as a patch where a write covers part of a chunk whose
earlier content has not been looked up yet. Reads see staged chunks
above the maps. The engine stores staged chunks in batches (``take``)
and decides when; everything here runs under its lock.
"""

from reference_array.core import patch_log

ZERO = 0
MISSING = object()


class Patch(object):
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


class Staging(object):

    def __init__(self, db, chunks, layers, work, chunk_size):
        """``chunks``: the ChunkStore; ``layers``: the LayerTree;
        ``work``: the engine's counter of work done, by kind.
        """
        self.db = db
        self.chunks = chunks
        self.layers = layers
        self._work = work
        self.chunk = chunk_size
        self._zero = bytes(chunk_size)
        # (layer, idx) -> whole chunk, None for zeros, or a Patch.
        self.dirty = {}

    def __len__(self):
        return len(self.dirty)

    def stage(self, layer, offset, data):
        """Stage ``data`` written at ``offset``; all-zero chunks as None."""
        dirty = self.dirty
        view = memoryview(data)
        pos, end = offset, offset + len(data)
        while pos < end:
            idx, inner = divmod(pos, self.chunk)
            take = min(self.chunk - inner, end - pos)
            piece = view[pos - offset:pos - offset + take]
            pos += take
            if take == self.chunk:
                block = bytes(piece)
            else:
                base = dirty.get((layer, idx), MISSING)
                if base is MISSING or base.__class__ is Patch:
                    if base is MISSING:
                        base = dirty[(layer, idx)] = Patch(self.chunk)
                    base.put(inner, piece)
                    continue
                base = base or self._zero
                block = b''.join((base[:inner], piece,
                                  base[inner + take:]))
            dirty[(layer, idx)] = None if block == self._zero else block

    def read(self, chain, offset, length):
        """``length`` bytes at ``offset`` of the image ``chain``."""
        out = bytearray()
        end = offset + length
        pos = offset
        while pos < end:
            idx, inner = divmod(pos, self.chunk)
            take = min(self.chunk - inner, end - pos)
            data = self.read_chunk(chain, idx)
            if data is None:
                out += bytes(take)
            else:
                out += data[inner:inner + take]
            pos += take
        return bytes(out)

    def read_chunk(self, chain, idx):
        """A chunk of an image (staged or settled), None for zeros."""
        dirty = self.dirty
        for n, layer in enumerate(chain):
            if dirty:
                entry = dirty.get((layer, idx), MISSING)
                if entry is not MISSING:
                    if entry.__class__ is not Patch:
                        return entry
                    chunk = self._map_entry(layer, idx)
                    base = (self.chunks.content(chunk) if chunk is not None
                            else self.read_chunk(chain[n + 1:], idx))
                    if chunk:
                        base = patch_log.overlay(self.db, self.chunks.data,
                                                 self._work, layer, idx, base)
                    return self._apply(layer, idx, entry, base)
            self._work['map_probes'] += 1
            row = self.db.execute(
                'SELECT m.chunk, c.seg, c.off, c.size, (SELECT COUNT(*) FROM '
                'patches p WHERE p.layer = ?1 AND p.idx = ?2) FROM maps m '
                'LEFT JOIN chunks c ON c.id = m.chunk WHERE m.layer = ?1 AND '
                'm.idx = ?2', (layer, idx)).fetchone()
            if row is not None:
                # Where the data is comes with the map entry: one query.
                if row[0] == ZERO:
                    return None
                data = self.chunks.data(row[0], row[1:4])
                if row[4]:
                    data = patch_log.overlay(self.db, self.chunks.data,
                                             self._work, layer, idx, data)
                return data
        return None

    def _map_entry(self, layer, idx):
        self._work['map_probes'] += 1
        row = self.db.execute(
            'SELECT chunk FROM maps WHERE layer = ? AND idx = ?',
            (layer, idx)).fetchone()
        return row[0] if row else None

    def _apply(self, layer, idx, patch, base):
        """Stage a patch as the whole chunk it makes of ``base``."""
        self._work['patches_resolved'] += 1
        block = patch.over(base)
        block = None if block == self._zero else block
        self.dirty[(layer, idx)] = block
        return block

    def apply_patches(self, keys=None):
        """Look up the earlier content of the patches among ``keys``
        (default: all staged chunks), a query per batch.
        """
        by_layer = {}
        dirty = self.dirty
        for key in dirty if keys is None else keys:
            entry = dirty[key]
            if entry.__class__ is Patch:
                by_layer.setdefault(key[0], {})[key[1]] = entry
        for layer, patches in by_layer.items():
            chain = self.layers.chain(layer)
            marks = ','.join('?' * len(chain))
            settled = {(anc, idx): chunk for anc, idx, chunk in
                       self.chunks.select_in(
                           'SELECT layer, idx, chunk FROM maps WHERE layer '
                           'IN (' + marks + ') AND idx IN (%s)', patches,
                           *chain)}
            for idx, patch in patches.items():
                base = None
                for n, anc in enumerate(chain):
                    if n and (anc, idx) in self.dirty:
                        # Staged below (rare): the general path.
                        base = self.read_chunk(chain[n:], idx)
                        break
                    if (anc, idx) in settled:
                        base = self.chunks.content(settled[(anc, idx)])
                        if base is not None:
                            base = patch_log.overlay(
                                self.db, self.chunks.data, self._work, anc,
                                idx, base)
                        break
                self._apply(layer, idx, patch, base)

    def take(self, keys=None):
        """Unstage ``keys`` (default all), patches resolved: {key: whole
        chunk or None}. ``restore`` puts them back if storing fails.
        """
        self.apply_patches(keys)
        if keys is None:
            staged, self.dirty = self.dirty, {}
        else:
            staged = {key: self.dirty.pop(key) for key in keys}
        return staged

    def restore(self, staged):
        """Stage again what ``take`` gave, newer writes on top."""
        staged.update(self.dirty)
        self.dirty = staged

    def drop(self, layer, first, stop):
        """Unstage chunks [first, stop) of ``layer``; what was dropped."""
        dirty = self.dirty
        return {key: dirty.pop(key) for key in [
            key for key in dirty
            if key[0] == layer and first <= key[1] < stop]}
