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

"""The engine's tables in the array's database, and the migrations that
bring a database of an earlier version to them.

Layers and their maps, chunk rows (where each chunk's compressed data
is: a segment record, or the ``chunk_data`` table for chunks stored
before segments existed), the patch log (``patch_log``: a database of an
earlier version gets its empty table when opened) and the totals the
capacity answers read, and the layers of each account
(``account_layers``; what an account's layers hold is a kept total of
the database, ``core/kept.py``).
"""

from reference_array.core import accounts

# Reference counts live apart from the data: a count changes on every
# deduplicated write, and SQLite rewrites a whole row to change a column.
CHUNK_TABLES = ("""
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    digest BLOB,
    refs INTEGER NOT NULL,
    raw INTEGER NOT NULL,
    size INTEGER NOT NULL,
    seg INTEGER,
    off INTEGER
)
""", """
CREATE TABLE IF NOT EXISTS chunk_data (
    id INTEGER PRIMARY KEY,
    data BLOB NOT NULL
)
""")

SCHEMA = """
CREATE TABLE IF NOT EXISTS layers (
    id INTEGER PRIMARY KEY,
    parent INTEGER,
    refs INTEGER NOT NULL,
    dedup INTEGER NOT NULL,
    written INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS maps (
    layer INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    PRIMARY KEY (layer, idx)
) WITHOUT ROWID;
%(chunk_tables)s
CREATE INDEX IF NOT EXISTS chunks_digest ON chunks(digest)
    WHERE digest IS NOT NULL;
CREATE TABLE IF NOT EXISTS patches (
    layer INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    slot INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    PRIMARY KEY (layer, idx, slot)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS totals (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
%(accounts)s""" % {
    'chunk_tables': ';'.join(CHUNK_TABLES) + ';',
    'accounts': accounts.SCHEMA}


def migrate(db, store):
    """Bring a database of an earlier version to this schema."""
    _migrate_chunks(db, store)
    columns = [row[1] for row in db.execute('PRAGMA table_info(layers)')]
    if columns and 'written' not in columns:
        with store.transaction():
            db.execute('ALTER TABLE layers ADD COLUMN written '
                       'INTEGER NOT NULL DEFAULT 0')
            db.execute(
                'UPDATE layers SET written = (SELECT COALESCE(SUM('
                'c.raw), 0) FROM maps m JOIN chunks c ON c.id = m.chunk '
                'WHERE m.layer = layers.id)')


def _migrate_chunks(db, store):
    """Move a database whose chunks kept their data in the same row."""
    columns = [row[1] for row in db.execute('PRAGMA table_info(chunks)')]
    if columns and 'seg' not in columns and 'data' not in columns:
        # Chunk data kept in chunk_data: new chunks go to segments.
        with store.transaction():
            db.execute('ALTER TABLE chunks ADD COLUMN seg INTEGER')
            db.execute('ALTER TABLE chunks ADD COLUMN off INTEGER')
        return
    if 'data' not in columns:
        return
    with store.transaction():
        for statement in (
                'DROP INDEX IF EXISTS chunks_digest',
                'ALTER TABLE chunks RENAME TO chunks_v1',
                *CHUNK_TABLES,
                'INSERT INTO chunks (id, digest, refs, raw, size) '
                'SELECT id, digest, refs, raw, length(data) FROM '
                'chunks_v1',
                'INSERT INTO chunk_data SELECT id, data FROM chunks_v1',
                'DROP TABLE chunks_v1'):
            db.execute(statement)
