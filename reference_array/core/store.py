"""Crash-safe object metadata of the array.

Objects of every dialect live in one SQLite database in WAL mode with
synchronous=FULL: a change is on disk when its transaction commits, and
each REST call commits before it answers.
"""

import contextlib
import json
import sqlite3
import threading

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
"""


class MetadataStore(object):

    def __init__(self, path):
        self._db = sqlite3.connect(path, isolation_level=None,
                                   check_same_thread=False)
        # Takes effect when the file is new. Large pages keep the WAL's
        # per-page work (a write per frame, a copy per checkpoint) small
        # next to the compressed chunks that fill most of them.
        self._db.execute('PRAGMA page_size=65536')
        self._db.execute('PRAGMA journal_mode=WAL')
        self._db.execute('PRAGMA synchronous=FULL')
        self._db.executescript(SCHEMA)
        # One writer at a time; REST calls are short, the data path does
        # not take this lock.
        self.lock = threading.RLock()
        self._depth = 0
        # Bumped by every durable (object) change; readers that cache a
        # view of the objects compare it to know when to look again.
        self.generation = 0
        # Called before each transaction begins, outside it: the engine
        # stores its staged writes there, so that they never join (and
        # roll back with) a transaction that is not theirs.
        self.before_transaction = None

    def close(self):
        with self.lock:
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
            if outer and self.before_transaction is not None:
                self.before_transaction()
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
                raise
            self._depth -= 1
            if outer:
                self._db.execute('COMMIT')
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
            self._db.execute('INSERT OR REPLACE INTO counters VALUES '
                             '(\'_sync\', 0)')
            self._db.execute('COMMIT')

    def next_id(self, kind):
        with self.transaction():
            row = self._db.execute('SELECT last FROM counters WHERE kind=?',
                                   (kind,)).fetchone()
            new = (row[0] if row else 0) + 1
            self._db.execute('INSERT OR REPLACE INTO counters VALUES (?, ?)',
                             (kind, new))
            return new

    def put(self, kind, obj_id, body):
        with self.transaction():
            self._db.execute('INSERT OR REPLACE INTO objects VALUES (?,?,?)',
                             (kind, obj_id, json.dumps(body)))

    def get(self, kind, obj_id):
        with self.lock:
            row = self._db.execute(
                'SELECT body FROM objects WHERE kind=? AND id=?',
                (kind, obj_id)).fetchone()
        return json.loads(row[0]) if row else None

    def delete(self, kind, obj_id):
        with self.transaction():
            cur = self._db.execute('DELETE FROM objects WHERE kind=? AND id=?',
                                   (kind, obj_id))
            return cur.rowcount > 0

    def all(self, kind):
        with self.lock:
            rows = self._db.execute(
                'SELECT body FROM objects WHERE kind=? ORDER BY id',
                (kind,)).fetchall()
        return [json.loads(r[0]) for r in rows]
