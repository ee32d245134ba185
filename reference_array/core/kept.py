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

"""Totals the database keeps: one named row each in ``kept_totals``,
moved by triggers in the statement that changes what they sum, so in
its transaction and whichever code (Python or the native data path)
made the change. Reading one is one row, whatever it sums over.

Their users name them by what they sum: the store's sums of a keyed
field and numbers of objects of a kind (``store.Store``'s ``kept``),
the engine's bytes written by a set of layers (``accounts``). A total
starts from the sum of what is there when it is first kept, and its
user puts it right (``put_right``) where the database may predate it.
"""

import hashlib

SCHEMA = """
CREATE TABLE IF NOT EXISTS kept_totals (
    name TEXT PRIMARY KEY,
    total INTEGER NOT NULL
) WITHOUT ROWID;
"""


def literal(text):
    """``text`` as an SQL string literal."""
    return "'%s'" % text.replace("'", "''")


def trigger_name(name, what):
    """A trigger's name for the total ``name``, unique per ``what``."""
    return 'kept_%s_%s' % (what, hashlib.sha256(
        name.encode()).hexdigest()[:16])


def read(db, name):
    """The total ``name``, or None if it is not kept."""
    row = db.execute('SELECT total FROM kept_totals WHERE name = ?',
                     (name,)).fetchone()
    return None if row is None else row[0]


def keep(db, name, start=None, args=(), triggers=()):
    """Keep ``name`` from now on: its row, from ``start`` (SQL giving its
    value now; None: 0) if it has none, and its ``triggers`` (SQL
    creating each, if it does not exist).
    """
    if read(db, name) is None:
        db.execute('INSERT INTO kept_totals VALUES (?, %s)' % (
            '(%s)' % start if start else '0'), (name,) + tuple(args))
    for trigger in triggers:
        db.execute(trigger)


def move(db, name, delta):
    """Move the kept total ``name`` by ``delta``."""
    db.execute('UPDATE kept_totals SET total = total + ? WHERE name = ?',
               (delta, name))


def put_right(db, found):
    """Set each (name, total) of ``found`` that is off; how many were."""
    off = [(total, name) for name, total in found
           if read(db, name) != total]
    db.executemany('UPDATE kept_totals SET total = ? WHERE name = ?', off)
    return len(off)
