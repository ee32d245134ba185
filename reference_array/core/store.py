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

"""Crash-safe object metadata of the array.

Objects of every dialect live in one SQLite database in WAL mode with
synchronous=FULL: a change is on disk when its transaction commits, and
each REST call commits before it answers.

Lookups by field never decode a whole kind: every put also records the
object's keys in ``object_keys`` inside the same transaction, so the keys
roll back with the object. The keys of an object are derived from it
alone (by its kind's key function, else ``keys_of``), so a database
written before they existed, or with other keys, gets them when it is
opened. A kind may also declare views of its objects (``views``, see
``core/views.py``): JSON
texts kept beside each object the same way, written by every put, so
that a page of them is sent as stored (``page_text``). Collections are
filtered, ordered and paged in SQL
(``select``, see ``query``); only the page is decoded. Kept totals,
declared when the store is built (``kept``), are one row each, moved by
triggers in the transaction of each change: the sum of a keyed integer
field over a kind, or the number of objects of a kind (``total``).
"""

import contextlib
import hashlib
import json
import sqlite3

from reference_array import native

from reference_array.core import kept as kept_mod
from reference_array.core import pages
from reference_array.core import query as query_mod
from reference_array.core import views as views_mod

SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    kind TEXT NOT NULL,
    id INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE TABLE IF NOT EXISTS counters (
    kind TEXT PRIMARY KEY,
    last INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS object_keys (
    kind TEXT NOT NULL,
    field TEXT NOT NULL,
    value TEXT NOT NULL,
    id INTEGER NOT NULL,
    PRIMARY KEY (kind, field, value, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS object_keys_of ON object_keys (kind, id);
"""
# The triggers that keep the sum of a keyed field: they test the key
# row's kind and field before doing anything, so other keys cost no
# lookup.
SUM_TRIGGERS = ("""
CREATE TRIGGER IF NOT EXISTS "%(added)s" AFTER INSERT ON object_keys
WHEN NEW.kind = %(kind)s AND NEW.field = %(field)s BEGIN
    UPDATE kept_totals SET total = total + CAST(NEW.value AS INTEGER)
    WHERE name = %(name)s;
END
""", """
CREATE TRIGGER IF NOT EXISTS "%(dropped)s" AFTER DELETE ON object_keys
WHEN OLD.kind = %(kind)s AND OLD.field = %(field)s BEGIN
    UPDATE kept_totals SET total = total - CAST(OLD.value AS INTEGER)
    WHERE name = %(name)s;
END
""")
# The number of objects of a kind (``COUNT`` as the field). ``put``
# replaces a row, which fires no delete trigger: an insert counts only
# when no row of that id was there before it.
COUNT = ''
COUNT_TRIGGERS = ("""
CREATE TRIGGER IF NOT EXISTS "%(added)s" BEFORE INSERT ON objects
WHEN NEW.kind = %(kind)s AND NOT EXISTS (SELECT 1 FROM objects
WHERE kind = NEW.kind AND id = NEW.id) BEGIN
    UPDATE kept_totals SET total = total + 1 WHERE name = %(name)s;
END
""", """
CREATE TRIGGER IF NOT EXISTS "%(dropped)s" AFTER DELETE ON objects
WHEN OLD.kind = %(kind)s BEGIN
    UPDATE kept_totals SET total = total - 1 WHERE name = %(name)s;
END
""")
# What a kept total starts from when it is first declared.
SUM_NOW = ('SELECT COALESCE(SUM(CAST(value AS INTEGER)), 0) FROM '
           'object_keys WHERE kind = ? AND field = ?')
COUNT_NOW = 'SELECT COUNT(*) FROM objects WHERE kind = ?'


def total_name(kind, field):
    """The ``kept_totals`` name of a store's total."""
    return 'store ' + json.dumps([kind, field])


# Bytes per database page of a new store. Chunk data lives in segment
# files (engine), so the pages hold small rows changed in scattered
# places, and each page a random write dirties goes whole to the WAL and
# again to the database at the checkpoint: with 1 KiB pages a random
# write costs about two fifths of the WAL bytes 4 KiB pages did (the
# benchmarks page, "Database pages of 1 KiB"; tests/test_wal_shape.py).
# The price: trees a level deeper at 10,000 objects, index entries longer
# than about 230 bytes (keys up to MAX_KEY_TEXT) spill to overflow pages,
# and SQLite's page count caps the file at 1 TiB.
PAGE_SIZE = 1024
# PRAGMA user_version of a database whose object_keys are those its
# kinds' key functions give (2: typed K2 models; 3: typed LINSTOR models;
# 4: LINSTOR names folded to upper case; 5: object_views). Views are
# written again by their marks, not by this (``views``). 6 was taken by
# the first form of the K2 views: the next change of keys moves KEYED
# to 7.
KEYED = 5
# Longer values (a description, a certificate) are keyed by their digest:
# lookups stay exact and no key row grows with what a client sends.
MAX_KEY_TEXT = 256
_JSON_TEXT = json.encoder.encode_basestring_ascii


def encode_key(value):
    """A value as the keys table holds it: its JSON text (names and
    numbers through json's own encoders, the text ``json.dumps`` gives,
    without its set-up, which cost more than the probe of a page's keys).
    """
    kind = type(value)
    if kind is str:
        text = _JSON_TEXT(value)
    elif kind is int:
        text = int.__repr__(value)
    else:
        text = json.dumps(value, sort_keys=True)
    if len(text) > MAX_KEY_TEXT:
        return '#' + hashlib.sha256(text.encode()).hexdigest()
    return text


def keys_of(body):
    """(field, value) pairs under which ``body`` is found.

    Public (not ``_``) top-level fields only: a scalar under its name; a
    reference ``{"ref": ...}`` as ``<field>.ref``; each key of any other
    mapping as ``<field>.key`` (a LINSTOR definition's nodes, a node's
    pools); a ``name`` also lower-cased as ``name.folded``.
    """
    found = set()
    for field, value in body.items():
        if field.startswith('_'):
            continue
        if isinstance(value, dict):
            if isinstance(value.get('ref'), str):
                found.add((field + '.ref', value['ref']))
            else:
                found.update((field + '.key', key) for key in value)
        elif isinstance(value, (bool, int, str)):
            found.add((field, value))
    if isinstance(body.get('name'), str):
        found.add(('name.folded', body['name'].lower()))
    return found


class Store(object):

    def __init__(self, path, key_functions=None, kept=(), views=None):
        """``key_functions``: kind -> function(row) -> (field, value)
        pairs, for kinds whose keys their model says (default
        ``keys_of``); ``kept``: the (kind, field) totals to keep, a
        keyed integer field's sum, or with ``COUNT`` as the field the
        number of objects of the kind; ``views``: kind -> ``views.Views``,
        the views kept of each object of the kind (as JSON text, see
        ``page_text``).
        """
        self._key_functions = dict(key_functions or {})
        self._views = dict(views or {})
        self._db = sqlite3.connect(path, isolation_level=None,
                                   check_same_thread=False)
        # Takes effect when the file is new (an older database keeps its
        # pages): see PAGE_SIZE.
        self._db.execute('PRAGMA page_size=%d' % PAGE_SIZE)
        self._db.execute('PRAGMA journal_mode=WAL')
        self._db.execute('PRAGMA synchronous=FULL')
        self._db.executescript(SCHEMA + kept_mod.SCHEMA + views_mod.SCHEMA)
        # One writer at a time; REST calls are short. Reentrant; the
        # native data path of each iSCSI connection takes it without the
        # GIL (a threading.RLock cannot be taken so).
        self.lock = native.lock()
        self._depth = 0
        # Bumped by every durable (object) change; readers that cache a
        # view of the objects compare it to know when to look again.
        self.generation = 0
        # Called before each transaction begins, outside it: the engine
        # stores its staged writes there, so that they never join (and
        # roll back with) a transaction that is not theirs.
        self._before_transaction = None
        self._before_close = None
        # Called after an outermost transaction rolls back (lock held):
        # views of the objects kept in memory that the transaction
        # changed are no longer those of the database.
        self._after_rollback = []
        self._add_keys()
        self._mark_views()
        self._keep(kept)
        with self.transaction():
            pages.keep(self._db)

    @property
    def connection(self):
        """The database, for tables of the store's users (the engine's).

        Use it inside ``transaction()`` or with ``lock`` held.
        """
        return self._db

    def call_before_transactions(self, callback):
        """Run ``callback`` (lock held) before every outermost transaction.

        For the one user with state outside the database, the engine's
        write-back cache, which registers when it is built (it needs the
        store to exist first). An engine built later on the same store
        takes the place of the earlier one.
        """
        self._before_transaction = callback

    def call_before_close(self, callback):
        """Run ``callback`` (lock held) before the database closes: the
        engine's native store releases its statements on it there.
        """
        self._before_close = callback

    def call_after_rollbacks(self, callback):
        """Run ``callback`` (lock held) after every outermost transaction
        that rolls back, its commit failing included.
        """
        self._after_rollback.append(callback)

    def _rolled_back(self):
        for callback in self._after_rollback:
            callback()

    def _add_keys(self):
        """Key every object of a database written before object_keys or
        under other key functions.
        """
        if self._db.execute('PRAGMA user_version').fetchone()[0] >= KEYED:
            return
        with self.transaction():
            self._db.execute('DELETE FROM object_keys')
            # Older than the marks of its views, too: they are written
            # again next (``_mark_views``).
            self._db.execute('DELETE FROM view_marks')
            for kind, obj_id, body in self._db.execute(
                    'SELECT kind, id, body FROM objects').fetchall():
                self._put_keys(kind, obj_id, self._keys(kind,
                                                        json.loads(body)))
            self._db.execute('PRAGMA user_version=%d' % KEYED)

    def _mark_views(self):
        """Write again the views of every kind written under another mark
        (``views``); one transaction, only when some mark differs.
        """
        if views_mod.changed(self._db, self._views):
            with self.transaction():
                views_mod.write_changed(self._db, self._views)

    def close(self):
        with self.lock:
            if self._before_close is not None:
                self._before_close()
            self._db.close()

    @contextlib.contextmanager
    def transaction(self, durable=True):
        """All changes inside commit together, or none on an exception.

        A durable transaction is on disk when it returns. Others (the
        data path) survive a crash of the array process once committed,
        and reach the disk at the next durable commit or ``sync``.
        """
        with self.lock:
            outer = self._depth == 0
            if outer and self._before_transaction is not None:
                self._before_transaction()
            if outer:
                self._db.execute('PRAGMA synchronous=%s' % (
                    'FULL' if durable else 'NORMAL'))
                self._db.execute('BEGIN IMMEDIATE')
            self._depth += 1
            try:
                yield self
            except BaseException:
                self._depth -= 1
                if outer:
                    self._db.execute('ROLLBACK')
                    self._rolled_back()
                raise
            self._depth -= 1
            if outer:
                try:
                    self._commit()
                except BaseException:
                    self._rolled_back()
                    raise
                if durable:
                    self.generation += 1

    def in_transaction(self):
        """Whether the caller, holding ``lock``, is inside ``transaction``.

        With the lock held no other thread can be inside one.
        """
        return self._depth > 0

    def sync(self):
        """Force everything committed so far to stable storage."""
        with self.lock:
            self._db.execute('PRAGMA synchronous=FULL')
            self._db.execute('BEGIN IMMEDIATE')
            try:
                self._db.execute('INSERT OR REPLACE INTO counters VALUES '
                                 '(\'_sync\', 0)')
            except sqlite3.Error:
                self._db.execute('ROLLBACK')
                raise
            self._commit()

    def _commit(self):
        try:
            self._db.execute('COMMIT')
        except sqlite3.Error:
            # A commit that fails (a full disk) leaves the transaction
            # open: end it, or no other can begin.
            if self._db.in_transaction:
                self._db.execute('ROLLBACK')
            raise

    def next_id(self, kind):
        with self.transaction():
            row = self._db.execute('SELECT last FROM counters WHERE kind=?',
                                   (kind,)).fetchone()
            new = (row[0] if row else 0) + 1
            self._db.execute('INSERT OR REPLACE INTO counters VALUES (?, ?)',
                             (kind, new))
            return new

    def _keys(self, kind, body):
        return self._key_functions.get(kind, keys_of)(body)

    def _put_keys(self, kind, obj_id, keys):
        self._db.executemany(
            'INSERT OR IGNORE INTO object_keys VALUES (?,?,?,?)',
            [(kind, field, encode_key(value), obj_id)
             for field, value in keys])

    def put(self, kind, obj_id, body, keys=None, obj=None):
        """Store ``body``; ``keys``: its (field, value) pairs, and
        ``obj``: the object it is the row of, if the caller has them
        already (else its kind's key function's, and its views are made
        from the row).
        """
        with self.transaction():
            self._db.execute('INSERT OR REPLACE INTO objects VALUES (?,?,?)',
                             (kind, obj_id, json.dumps(body)))
            self._db.execute('DELETE FROM object_keys WHERE kind=? AND id=?',
                             (kind, obj_id))
            self._put_keys(kind, obj_id, self._keys(kind, body)
                           if keys is None else keys)
            # Here only, so that no write of the object leaves its views
            # behind it.
            views = self._views.get(kind)
            if views is not None:
                views_mod.put(self._db, views, kind, obj_id, body, obj)

    def get(self, kind, obj_id):
        with self.lock:
            row = self._db.execute(
                'SELECT body FROM objects WHERE kind=? AND id=?',
                (kind, obj_id)).fetchone()
        return json.loads(row[0]) if row else None

    def delete(self, kind, obj_id):
        with self.transaction():
            self._db.execute('DELETE FROM object_keys WHERE kind=? AND id=?',
                             (kind, obj_id))
            views_mod.drop(self._db, kind, obj_id)
            cur = self._db.execute('DELETE FROM objects WHERE kind=? AND id=?',
                                   (kind, obj_id))
            return cur.rowcount > 0

    def find(self, kind, field, value):
        """Objects of ``kind`` whose ``field`` is ``value``, by id.

        ``field`` is one of the keys ``keys_of`` derives.
        """
        with self.lock:
            rows = self._db.execute(
                'SELECT o.body FROM object_keys k JOIN objects o '
                'ON o.kind = k.kind AND o.id = k.id '
                'WHERE k.kind=? AND k.field=? AND k.value=? ORDER BY k.id',
                (kind, field, encode_key(value))).fetchall()
        return [json.loads(r[0]) for r in rows]

    def first(self, kind, field, value):
        """The first object ``find`` would return, or None."""
        with self.lock:
            row = self._db.execute(
                'SELECT o.body FROM object_keys k JOIN objects o '
                'ON o.kind = k.kind AND o.id = k.id '
                'WHERE k.kind=? AND k.field=? AND k.value=? ORDER BY k.id '
                'LIMIT 1', (kind, field, encode_key(value))).fetchone()
        return json.loads(row[0]) if row else None

    def count(self, kind, field, value):
        """How many objects ``find`` would return, without decoding any."""
        with self.lock:
            return self._db.execute(
                'SELECT COUNT(*) FROM object_keys WHERE kind=? AND field=? '
                'AND value=?', (kind, field, encode_key(value))).fetchone()[0]

    def all(self, kind):
        with self.lock:
            rows = self._db.execute(
                'SELECT body FROM objects WHERE kind=? ORDER BY id',
                (kind,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def find_in(self, kind, field, values):
        """Objects of ``kind`` whose ``field`` is one of ``values``."""
        values = list(values)
        if not values:
            return []
        # Ordered here, not in SQL: an ORDER BY k.id leads SQLite to walk
        # the whole kind in id order instead of probing each value.
        with self.lock:
            rows = self._db.execute(
                'SELECT k.id, o.body FROM object_keys k JOIN objects o '
                'ON o.kind = k.kind AND o.id = k.id '
                'WHERE k.kind=? AND k.field=? AND k.value IN (%s)' %
                ','.join('?' * len(values)),
                [kind, field] + [encode_key(v) for v in values]).fetchall()
        rows.sort(key=lambda r: r[0])
        return [json.loads(r[1]) for r in rows]

    def pluck_in(self, kind, field, values, paths):
        """(value, then the value at each of ``paths``) of each object of
        ``kind`` whose ``field`` is one of ``values``, in id order: what
        a summary needs of many objects, with none of them decoded.
        """
        encoded = {encode_key(v): v for v in values}
        if not encoded:
            return []
        columns = ''.join(', json_extract(o.body, ?)' for _p in paths)
        with self.lock:
            rows = self._db.execute(
                'SELECT k.id, k.value%s FROM object_keys k JOIN objects o '
                'ON o.kind = k.kind AND o.id = k.id WHERE k.kind=? AND '
                'k.field=? AND k.value IN (%s)' % (
                    columns, ','.join('?' * len(encoded))),
                list(paths) + [kind, field] + list(encoded)).fetchall()
        rows.sort(key=lambda r: r[0])
        return [(encoded[r[1]],) + tuple(r[2:]) for r in rows]

    def count_in(self, kind, field, values):
        """value -> how many objects of ``kind`` have it as ``field``."""
        encoded = {encode_key(v): v for v in values}
        counts = dict.fromkeys(encoded.values(), 0)
        if not encoded:
            return counts
        with self.lock:
            rows = self._db.execute(
                'SELECT value, COUNT(*) FROM object_keys WHERE kind=? AND '
                'field=? AND value IN (%s) GROUP BY value' % ','.join(
                    '?' * len(encoded)), [kind, field] + list(encoded))
            for value, count in rows.fetchall():
                counts[encoded[value]] = count
        return counts

    def _keep(self, kept):
        """Keep each (kind, field) total of ``kept`` from now on (see
        ``core/kept.py``).
        """
        with self.transaction():
            self._from_key_totals()
            for kind, field in kept:
                counted = field == COUNT
                name = total_name(kind, field)
                names = {'name': kept_mod.literal(name),
                         'added': kept_mod.trigger_name(name, 'added'),
                         'dropped': kept_mod.trigger_name(name, 'dropped'),
                         'kind': kept_mod.literal(kind),
                         'field': kept_mod.literal(field)}
                kept_mod.keep(
                    self._db, name, COUNT_NOW if counted else SUM_NOW,
                    (kind,) if counted else (kind, field),
                    [t % names for t in (
                        COUNT_TRIGGERS if counted else SUM_TRIGGERS)])

    def _from_key_totals(self):
        """Sums kept in a table of their own (before ``kept_totals``)."""
        if self._db.execute("SELECT 1 FROM sqlite_master WHERE name = "
                            "'key_totals'").fetchone() is None:
            return
        for kind, field, total in self._db.execute(
                'SELECT kind, field, total FROM key_totals').fetchall():
            self._db.execute('INSERT OR IGNORE INTO kept_totals VALUES '
                             '(?, ?)', (total_name(kind, field), total))
        for (trigger,) in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND "
                "name LIKE 'key_total_%'").fetchall():
            self._db.execute('DROP TRIGGER "%s"' % trigger)
        self._db.execute('DROP TABLE key_totals')

    def total(self, kind, field=COUNT):
        """A kept total (see ``kept``): one row, whatever the number of
        objects; None if it is not kept.
        """
        with self.lock:
            return kept_mod.read(self._db, total_name(kind, field))

    def pluck(self, kind, field, value, path):
        """The values at ``path`` (a row's JSON path, e.g. ``$.lun``) of
        the objects ``find(kind, field, value)`` would return.
        """
        return [r[1] for r in self.pluck_in(kind, field, [value], (path,))]

    def page_text(self, kind, field, offset, limit, view):
        """A page of the ``view`` texts of the objects of ``kind`` (see
        ``views``) in the order of their ``field`` key (then id), from
        ``offset``, at most ``limit`` (None: all): one JSON array text,
        nothing decoded. ``field`` must be a key every object has once
        (a name), whose encoded values order as the objects should.
        """
        with self.lock:
            texts = pages.by_key(self._db, kind, field, view, offset, limit)
        return '[%s]' % ','.join(texts)

    def page_views(self, kind, view, offset, limit, descending=False,
                   paths=()):
        """(id, ``view`` text, then the value at each of ``paths`` of the
        object's row) of the objects of ``kind`` in id order (reversed if
        ``descending``), from ``offset``, at most ``limit`` (None: all):
        a page sent as stored, none of it decoded, begun in the block of
        ids holding its first object (``pages``). The text is None for an
        object without that view.
        """
        with self.lock:
            return pages.by_id(self._db, kind, view, offset, limit,
                               descending, paths)

    def has_views(self, kind):
        """Whether the store keeps views of the objects of ``kind``."""
        return kind in self._views

    def select(self, kind, q, without=()):
        """(total, page of objects) of a ``query.Query`` over ``kind``;
        ``without``: top-level fields left out of each (neither read nor
        decoded).
        """
        with self.lock:
            total, bodies = query_mod.select(self._db, kind, q, encode_key,
                                             self.total, without)
        return total, [json.loads(b) for b in bodies]
