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

"""The patch log's rows, as the pure-Python engine and the engine's
layer and UNMAP steps see them.

The native data path stores a write of whole 4 KiB slots into a chunk
of the layer's own as uncompressed slot records (``native/
store_patches.c``): chunk rows without a digest, each named by a
``patches`` row for (layer, idx, slot), applied over the map entry's
chunk when it is read. Whatever replaces or drops the map entry drops
its patches; ``Engine.merge_patches`` stores patched chunks whole
again. Patch records hold no logical bytes (the map entry does), so
dropping their references gives back what ``unref`` took off.
"""

SLOT = 4096


def overlay(db, data_of, work, layer, idx, base):
    """The chunk ``base`` of (layer, idx) with its logged slots applied
    (``data_of(chunk, (seg, off, size))``: a chunk's data).
    """
    rows = db.execute(
        'SELECT p.slot, p.chunk, c.seg, c.off, c.size FROM patches p JOIN '
        'chunks c ON c.id = p.chunk WHERE p.layer = ? AND p.idx = ?',
        (layer, idx)).fetchall()
    if not rows:
        return base
    out = bytearray(base)
    for slot, chunk, seg, off, size in rows:
        out[slot * SLOT:(slot + 1) * SLOT] = data_of(chunk, (seg, off, size))
        work['patch_log_reads'] += 1
    return bytes(out)


def drop(db, unref, where, args):
    """Drop the patches of the entries ``where`` (an SQL condition on
    layer and idx) holds, and their records' references.
    """
    chunks = [chunk for (chunk,) in db.execute(
        'DELETE FROM patches WHERE ' + where + ' RETURNING chunk', args)]
    if chunks:
        db.execute("UPDATE totals SET value = value + ? WHERE name = "
                   "'logical'", (unref(chunks),))


def patched(db, limit):
    """Up to ``limit`` (layer, idx) holding patches."""
    return db.execute('SELECT DISTINCT layer, idx FROM patches LIMIT ?',
                      (limit,)).fetchall()
