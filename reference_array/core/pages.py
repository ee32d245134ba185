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

"""Pages of the views a store keeps (``Store.page_text``,
``page_views``): JSON texts joined, none decoded.

SQLite's OFFSET steps over every skipped entry of an index, so a page
from the middle of 10,000 objects walked 5,000 of them. The store keeps
the number of objects of each kind in each block of ``BLOCK`` ids
(``object_blocks``), moved by triggers in the transaction of each
insert and delete, as the kept totals are. A page in id order at offset
N reads those counts (one row per block in use) and starts in the block
holding the Nth object, skipping fewer than ``BLOCK`` entries.
"""

BITS = 8
BLOCK = 1 << BITS

TABLE = """
CREATE TABLE object_blocks (
    kind TEXT NOT NULL,
    block INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (kind, block)
) WITHOUT ROWID
"""
# ``put`` replaces a row, which fires no delete trigger: as for the kept
# counts, an insert counts only when no row of that id was there. A
# block's row is made only where there is none: an ``OR IGNORE`` would
# take the conflict policy of the statement firing the trigger (``put``'s
# ``OR REPLACE``) and start the block again from zero.
TRIGGERS = ("""
CREATE TRIGGER IF NOT EXISTS object_blocks_added BEFORE INSERT ON objects
WHEN NOT EXISTS (SELECT 1 FROM objects WHERE kind = NEW.kind AND
id = NEW.id) BEGIN
    INSERT INTO object_blocks SELECT NEW.kind, NEW.id >> %(b)d, 0
    WHERE NOT EXISTS (SELECT 1 FROM object_blocks WHERE kind = NEW.kind
                      AND block = NEW.id >> %(b)d);
    UPDATE object_blocks SET count = count + 1
    WHERE kind = NEW.kind AND block = NEW.id >> %(b)d;
END
""" % {'b': BITS}, """
CREATE TRIGGER IF NOT EXISTS object_blocks_dropped AFTER DELETE ON objects
BEGIN
    UPDATE object_blocks SET count = count - 1
    WHERE kind = OLD.kind AND block = OLD.id >> %(b)d;
    DELETE FROM object_blocks
    WHERE kind = OLD.kind AND block = OLD.id >> %(b)d AND count = 0;
END
""" % {'b': BITS})


def keep(db):
    """Keep the block counts from now on; a database written before them
    gets them counted once. Inside the caller's transaction.
    """
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = "
                  "'object_blocks'").fetchone() is None:
        db.execute(TABLE)
        db.execute('INSERT INTO object_blocks SELECT kind, id >> %d, '
                   'COUNT(*) FROM objects GROUP BY 1, 2' % BITS)
    # Blocks emptied before the delete trigger dropped them.
    db.execute('DELETE FROM object_blocks WHERE count <= 0')
    for trigger in TRIGGERS:
        db.execute(trigger)


def _start(db, kind, offset, descending):
    """(condition on ``id``, its argument, what is left of ``offset``)
    to begin a page of ``kind`` at ``offset`` in id order (reversed if
    ``descending``), or None when the kind has no more than ``offset``
    objects.
    """
    skipped = 0
    for block, count in db.execute(
            'SELECT block, count FROM object_blocks WHERE kind = ? '
            'ORDER BY block %s' % ('DESC' if descending else 'ASC'),
            (kind,)):
        if skipped + count > offset:
            if descending:
                return 'id <= ?', ((block + 1) << BITS) - 1, offset - skipped
            return 'id >= ?', block << BITS, offset - skipped
        skipped += count
    return None


def by_id(db, kind, view, offset, limit, descending=False, paths=()):
    """(id, ``view`` text or None if the object has none, then the value
    at each of ``paths`` of its row) of the objects of ``kind`` in id
    order (reversed if ``descending``), from ``offset``, at most
    ``limit`` (None: all).
    """
    begin = _start(db, kind, offset, descending)
    if begin is None:
        return []
    bound, at, left = begin
    order = 'DESC' if descending else 'ASC'
    extracted = ''.join(', json_extract(o.body, ?)' for _p in paths)
    joined = ' JOIN objects o ON o.kind = ? AND o.id = p.id' if paths \
        else ''
    return db.execute(
        'SELECT p.id, v.text%s FROM (SELECT id FROM objects WHERE kind = ? '
        'AND %s ORDER BY id %s LIMIT ? OFFSET ?) p LEFT JOIN object_views v '
        'ON v.kind = ? AND v.id = p.id AND v.name = ?%s ORDER BY p.id %s' % (
            extracted, bound, order, joined, order),
        list(paths) + [kind, at, -1 if limit is None else limit, left, kind,
                       view] + ([kind] if paths else [])).fetchall()


def by_key(db, kind, field, view, offset, limit):
    """The ``view`` texts of the objects of ``kind`` in the order of
    their ``field`` key (then id), from ``offset``, at most ``limit``
    (None: all). The skipped objects are walked in the keys index only:
    the subquery's LIMIT keeps SQLite from joining them to their views.
    """
    return [t for (t,) in db.execute(
        'SELECT v.text FROM (SELECT value, id FROM object_keys WHERE '
        'kind = ? AND field = ? ORDER BY value, id LIMIT ? OFFSET ?'
        ') p JOIN object_views v ON v.kind = ? AND v.id = p.id AND '
        'v.name = ? ORDER BY p.value, p.id', (
            kind, field, -1 if limit is None else limit, offset, kind,
            view)).fetchall()]
