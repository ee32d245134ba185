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

"""The layer tree: which layer sits on which, who owns it, and what it
holds in its own map.

A layer maps chunk indexes to stored chunks and may have a parent; a
chunk absent from a layer is read from its ancestors (copy-on-write).
Volumes, snapshots, views and clones each own layers; a layer is freed,
with its map entries' chunk references, when its last owner lets go.
The engine calls these under its lock, once staged writes are stored.
"""

from reference_array.core import patch_log


class LayerTree(object):

    def __init__(self, db, store):
        self.db = db
        self.store = store
        # Layers never change parent, so chains are cached until a layer
        # is deleted.
        self._chains = {}
        self._dedup = {}

    def new(self, parent=None, dedup=True):
        """A writable layer over ``parent`` (None: all zeros)."""
        with self.store.transaction():
            if parent is not None:
                self._ref(parent, +1)
            cur = self.db.execute(
                'INSERT INTO layers (parent, refs, dedup) VALUES (?, 1, ?)',
                (parent, int(bool(dedup))))
            return cur.lastrowid

    def _ref(self, layer, delta):
        self.db.execute('UPDATE layers SET refs = refs + ? WHERE id = ?',
                        (delta, layer))

    def hold(self, layer):
        """One more owner of ``layer`` (a snapshot freezing it)."""
        with self.store.transaction():
            self._ref(layer, +1)

    def release(self, layer, unref):
        """Drop one owner; frees the layer and unreferenced ancestors,
        dropping their chunk references with ``unref(chunk ids)``.
        """
        with self.store.transaction():
            while layer is not None:
                self._ref(layer, -1)
                row = self.db.execute(
                    'SELECT refs, parent FROM layers WHERE id = ?',
                    (layer,)).fetchone()
                if row is None or row[0] > 0:
                    return
                unref([chunk for (chunk,) in self.db.execute(
                    'SELECT chunk FROM maps WHERE layer = ? AND chunk != 0',
                    (layer,))])
                patch_log.drop(self.db, unref, 'layer = ?', (layer,))
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
            return self.new(parent=layer, dedup=bool(dedup))

    def chain(self, layer):
        """The layer and its ancestors, nearest first."""
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

    def dedup(self, layer):
        """Whether the layer's chunks are shared by digest."""
        dedup = self._dedup.get(layer)
        if dedup is None:
            dedup = bool(self.db.execute(
                'SELECT dedup FROM layers WHERE id = ?',
                (layer,)).fetchone()[0])
            self._dedup[layer] = dedup
        return dedup

    def parent_of(self, layer):
        row = self.db.execute('SELECT parent FROM layers WHERE id = ?',
                              (layer,)).fetchone()
        return row[0] if row else None

    def is_empty(self, layer):
        return self.db.execute('SELECT 1 FROM maps WHERE layer = ? '
                               'LIMIT 1', (layer,)).fetchone() is None

    def changed_chunks(self, layer, base):
        """Chunk indexes whose content may differ between two images.

        ``base`` is an earlier frozen image (or None: the empty volume).
        When ``base`` is an ancestor of ``layer`` only the layers above it
        are looked at, which is what makes replication incremental.
        """
        chain = self.chain(layer)
        if base is not None and base in chain:
            layers = chain[:chain.index(base)]
        else:
            layers = chain + (self.chain(base) if base else ())
        idxs = set()
        for anc in layers:
            idxs.update(idx for (idx,) in self.db.execute(
                'SELECT idx FROM maps WHERE layer = ?', (anc,)))
        return sorted(idxs)

    # -- what layers hold ------------------------------------------------
    def usage(self, layers):
        """(logical, physical) bytes the maps of ``layers`` hold.

        A chunk shared by several of the layers counts once physically.
        """
        if not layers:
            return 0, 0
        marks = ','.join('?' * len(layers))
        logical = self.db.execute(
            'SELECT COALESCE(SUM(c.raw), 0) FROM maps m JOIN chunks c '
            'ON c.id = m.chunk WHERE m.layer IN (%s)' % marks,
            list(layers)).fetchone()[0]
        physical = self.db.execute(
            'SELECT COALESCE(SUM(size), 0) FROM chunks WHERE id '
            'IN (SELECT chunk FROM maps WHERE layer IN (%s))' % marks,
            list(layers)).fetchone()[0]
        return logical, physical

    def written(self, layer):
        """Bytes of data this layer holds itself (not its ancestors)."""
        row = self.db.execute('SELECT written FROM layers WHERE id = ?',
                              (layer,)).fetchone()
        return row[0] if row else 0

    def written_of(self, layers):
        """layer -> bytes it holds itself, for many layers in one query."""
        layers = [layer for layer in set(layers) if layer is not None]
        written = dict.fromkeys(layers, 0)
        if layers:
            written.update(self.db.execute(
                'SELECT id, written FROM layers WHERE id IN (%s)' %
                ','.join('?' * len(layers)), layers).fetchall())
        return written
