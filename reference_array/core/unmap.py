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

"""The map entries one step of an UNMAP drops or masks.

An UNMAP goes in steps, each dropping or masking at most
``UNMAP_BATCH`` map entries, so its work is in proportion to the data
mapped in the range, never to the range's length, and the engine, which
releases its lock between steps, lets other volumes' I/O through. Whole
chunks lose their map entries (a zero entry where an ancestor holds
data); the engine writes zeros into a partial chunk at either end.

The engine owns the lock and the transaction; these run inside them.
"""

from reference_array.core import patch_log

ZERO = 0
# Map entries one step drops or masks (the lock is held for one step at
# a time).
UNMAP_BATCH = 2048


def step_entries(db, chain, first, last):
    """What one step from chunk ``first`` toward ``last`` of the top of
    ``chain`` touches: (its [(idx, chunk)] entries, the indexes of data
    below it to mask, the chunk index where the step stops).
    """
    layer = chain[0]
    rows = db.execute(
        'SELECT idx, chunk FROM maps WHERE layer = ? AND idx >= ? '
        'AND idx < ? ORDER BY idx LIMIT ?',
        (layer, first, last, UNMAP_BATCH)).fetchall()
    stop = rows[-1][0] + 1 if len(rows) == UNMAP_BATCH else last
    # Data below shows through unless masked; each ancestor is read in
    # index order, a batch at most.
    below = set()
    for anc in chain[1:]:
        found = [idx for (idx,) in db.execute(
            'SELECT idx FROM maps WHERE layer = ? AND idx >= ? AND '
            'idx < ? AND chunk != 0 ORDER BY idx LIMIT ?',
            (anc, first, stop, UNMAP_BATCH))]
        if len(found) == UNMAP_BATCH:
            stop = found[-1] + 1
        below.update(found)
    masked = sorted(idx for idx in below if idx < stop)
    return rows, masked, stop


def drop_entries(db, unref, layer, first, stop, rows, masked):
    """The layer's entries in [first, stop) go (``rows`` among them,
    their references dropped with ``unref``), zeros mask ``masked``
    ancestors' data.
    """
    freed = unref([entry for idx, entry in rows if idx < stop])
    patch_log.drop(db, unref, 'layer = ? AND idx >= ? AND idx < ?',
                   (layer, first, stop))
    db.execute('DELETE FROM maps WHERE layer = ? AND idx >= ? AND idx < ?',
               (layer, first, stop))
    db.executemany('INSERT INTO maps VALUES (?, ?, %d)' % ZERO,
                   [(layer, idx) for idx in masked])
    if freed:
        db.execute('UPDATE layers SET written = written - ? WHERE id = ?',
                   (freed, layer))
