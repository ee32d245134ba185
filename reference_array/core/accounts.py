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

"""Bytes written, kept per account: a named set of layers (a LINSTOR
storage pool), so that what a pool holds is one row to read whatever
the number of layers in it.

An account's total is a kept total of the database (``core/kept.py``,
named ``account:<name>``). A layer's ``written`` (the bytes of data its
own map holds, uncompressed) is kept by every store of chunks and every
UNMAP step; triggers move the accounts holding the layer by the same
difference,
in the same statement and so in the same transaction, whichever code
(the Python or the native data path) changed it. A freed layer leaves
every account with what it held. An account may hold a layer more than
once (two volumes that are the same image): it is counted as often.

Older databases get the tables empty; the dialect that names the
accounts sets their layers when it opens (``set_layers``), and
``verify`` puts every account's total back to the sum of its layers
when the engine opens.
"""

import contextlib

from reference_array.core import kept

# An account's total is the kept total (``core/kept.py``) of this name.
PREFIX = 'account:'
SCHEMA = """
CREATE TABLE IF NOT EXISTS account_layers (
    layer INTEGER NOT NULL,
    account TEXT NOT NULL,
    times INTEGER NOT NULL,
    PRIMARY KEY (layer, account)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS account_layers_of ON account_layers (account);
CREATE TRIGGER IF NOT EXISTS account_kept_written AFTER UPDATE OF written
ON layers WHEN NEW.written != OLD.written BEGIN
    UPDATE kept_totals SET total = total + (NEW.written - OLD.written) *
        (SELECT times FROM account_layers WHERE layer = NEW.id AND
         account = substr(kept_totals.name, %(after)d))
    WHERE name IN (SELECT %(prefix)s || account FROM account_layers
                   WHERE layer = NEW.id);
END;
CREATE TRIGGER IF NOT EXISTS account_kept_freed AFTER DELETE ON layers
BEGIN
    UPDATE kept_totals SET total = total - OLD.written *
        (SELECT times FROM account_layers WHERE layer = OLD.id AND
         account = substr(kept_totals.name, %(after)d))
    WHERE name IN (SELECT %(prefix)s || account FROM account_layers
                   WHERE layer = OLD.id);
    DELETE FROM account_layers WHERE layer = OLD.id;
END;
""" % {'prefix': kept.literal(PREFIX), 'after': len(PREFIX) + 1}


class Accounts(object):
    """An engine's accounts (``engine.accounts``). Staged writes are
    settled first, so that every layer's ``written`` is current when an
    account is read or changed.
    """

    def __init__(self, engine):
        self._engine = engine

    @contextlib.contextmanager
    def _settled(self, change=False):
        engine = self._engine
        with engine.lock:
            # All of it, under the lock: not ``settle``'s batches.
            engine._settle()
            if not change:
                yield engine.db
                return
            with engine.store.transaction():
                yield engine.db

    def written(self, account):
        """Bytes the layers of ``account`` hold: one row."""
        with self._settled() as db:
            return written(db, account)

    def charge(self, account, deltas):
        """``account`` holds each layer of ``deltas`` (layer -> times)
        that many more (negative: fewer) times.
        """
        with self._settled(change=True) as db:
            charge(db, account, deltas)

    def layers(self, account):
        """layer -> times ``account`` holds it."""
        with self._settled() as db:
            return layers_of(db, account)

    def set_layers(self, account, layers):
        """``account`` holds exactly ``layers`` (layer -> times) that
        exist; whether it did not already.
        """
        with self._settled(change=True) as db:
            return set_layers(db, account, layers)


def written(db, account):
    """Bytes the layers of ``account`` hold (0: no such account)."""
    return kept.read(db, PREFIX + account) or 0


def charge(db, account, deltas):
    """Add (or, negative, take) layers to ``account``: ``deltas`` maps a
    layer to how many more times the account holds it. Layers that no
    longer exist are left out (what they held went when they were freed).
    """
    kept.keep(db, PREFIX + account)
    for layer, times in sorted(deltas.items()):
        if not times:
            continue
        held = db.execute('SELECT written FROM layers WHERE id = ?',
                          (layer,)).fetchone()
        if held is None:
            continue
        was = db.execute('SELECT times FROM account_layers WHERE layer = ? '
                         'AND account = ?', (layer, account)).fetchone()
        now = max((was[0] if was else 0) + times, 0)
        moved = now - (was[0] if was else 0)
        if now:
            db.execute('INSERT OR REPLACE INTO account_layers VALUES '
                       '(?, ?, ?)', (layer, account, now))
        else:
            db.execute('DELETE FROM account_layers WHERE layer = ? AND '
                       'account = ?', (layer, account))
        kept.move(db, PREFIX + account, moved * held[0])


def layers_of(db, account):
    """{layer: times} the account holds."""
    return dict(db.execute('SELECT layer, times FROM account_layers WHERE '
                           'account = ?', (account,)))


def set_layers(db, account, layers):
    """Make ``account`` hold exactly ``layers`` ({layer: times}) that
    exist; whether it did not already.
    """
    held = layers_of(db, account)
    deltas = {layer: layers.get(layer, 0) - held.get(layer, 0)
              for layer in set(held) | set(layers)}
    if not any(deltas.values()):
        return False
    charge(db, account, deltas)
    return True


def verify(db):
    """Put every account's total back to the sum of its layers' bytes
    (a database whose accounts predate a change of ``written``, or were
    kept in a table of their own); the number of accounts that were off.
    """
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'accounts'"
                  ).fetchone() is not None:
        db.execute('INSERT OR IGNORE INTO kept_totals SELECT ? || name, '
                   'written FROM accounts', (PREFIX,))
        db.execute('DROP TRIGGER IF EXISTS account_written')
        db.execute('DROP TRIGGER IF EXISTS account_layer_freed')
        db.execute('DROP TABLE accounts')
    return kept.put_right(db, db.execute(
        'SELECT k.name, COALESCE(SUM(l.written * al.times), 0) FROM '
        'kept_totals k LEFT JOIN account_layers al ON al.account = '
        'substr(k.name, ?) LEFT JOIN layers l ON l.id = al.layer WHERE '
        'k.name >= ? AND k.name < ? GROUP BY k.name', (
            len(PREFIX) + 1, PREFIX, PREFIX[:-1] + chr(ord(PREFIX[-1]) + 1))
    ).fetchall())
