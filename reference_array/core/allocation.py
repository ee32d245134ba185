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

"""Allocation status of an image (GET LBA STATUS, sparse reads).

Whether a run of chunks holds data or is a hole, from the maps of a
layer's chain, with the work of one answer bounded whatever the volume
holds. The engine calls these under its lock, on its connection, once
staged writes are stored.
"""

ZERO = 0
# Bounds of one allocation-status answer: chunks of a data run looked at,
# entries masked by zeros skipped in a run of holes.
RUN_WINDOW = 64
RUN_PROBES = 16


def allocated_run(db, work, chain, chunk, offset, limit):
    """(allocated, length) of the run of chunks starting at offset.

    A chunk is allocated when it holds data (not zeros) anywhere in
    ``chain`` (a layer and its ancestors, nearest first). The run stops
    after ``limit`` bytes, and sooner: a run of data after
    ``RUN_WINDOW`` chunks, a run of holes after ``RUN_PROBES`` masked
    entries. Initiators ask again from where a run stops (GET LBA
    STATUS), and some ask before every read (an NBD server answering
    sparse reads), so the work here is bounded whatever the volume
    holds. ``work`` counts the map probes.
    """
    first = offset // chunk
    end = (offset + limit + chunk - 1) // chunk
    window = min(end, first + RUN_WINDOW)
    if len(chain) == 1:
        work['map_probes'] += 1
        count, = db.execute(
            'SELECT COUNT(*) FROM maps WHERE layer = ? AND idx >= ? '
            'AND idx < ? AND chunk != 0',
            (chain[0], first, window)).fetchone()
        if count == window - first:
            # All data (the common answer), counted inside SQLite.
            return True, min(window * chunk, offset + limit) - offset
    kind = _allocated(db, work, chain, first)
    if kind:
        stop = _data_run_end(db, work, chain, first, window)
    else:
        stop = _hole_run_end(db, work, chain, first, end)
    return kind, min(stop * chunk, offset + limit) - offset


def _allocated(db, work, chain, idx):
    """Whether chunk ``idx`` of an image holds data: one probe."""
    work['map_probes'] += 1
    if len(chain) == 1:
        row = db.execute(
            'SELECT chunk FROM maps WHERE layer = ? AND idx = ?',
            (chain[0], idx)).fetchone()
        return bool(row and row[0] != ZERO)
    found = dict(db.execute(
        'SELECT layer, chunk FROM maps WHERE idx = ? AND layer IN (%s)'
        % ','.join('?' * len(chain)), (idx, *chain)))
    for anc in chain:
        if anc in found:
            return found[anc] != ZERO
    return False


def _data_run_end(db, work, chain, first, end):
    """First chunk in [first, end) that is a hole (or ``end``)."""
    work['map_probes'] += 1
    marks = ','.join('?' * len(chain))
    rank = {anc: n for n, anc in enumerate(chain)}
    top = {}
    for anc, idx, chunk in db.execute(
            'SELECT layer, idx, chunk FROM maps WHERE layer IN (%s) '
            'AND idx >= ? AND idx < ?' % marks, (*chain, first, end)):
        if idx not in top or rank[anc] < top[idx][0]:
            top[idx] = (rank[anc], chunk)
    for idx in range(first, end):
        entry = top.get(idx)
        if entry is None or entry[1] == ZERO:
            return idx
    return end


def _hole_run_end(db, work, chain, first, end):
    """First chunk in [first, end) that holds data (or ``end``)."""
    pos = first
    for _n in range(RUN_PROBES):
        nearest = end
        for anc in chain:
            work['map_probes'] += 1
            row = db.execute(
                'SELECT idx FROM maps WHERE layer = ? AND idx >= ? AND '
                'idx < ? AND chunk != 0 ORDER BY idx LIMIT 1',
                (anc, pos, nearest)).fetchone()
            if row is not None:
                nearest = row[0]
        if nearest == end or _allocated(db, work, chain, nearest):
            return nearest
        # Data below, masked by zeros written above it.
        pos = nearest + 1
    return pos
