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

"""Views a store keeps of its objects: JSON texts beside each row.

A kind's views (``Views``) are written with every put of one of its
objects, in the same transaction, so that a page of them is their texts
joined (``pages``), nothing decoded. What they hold follows from the
model's fields and from the code that writes them, so each ``Views``
carries a ``mark`` of both: a store opening a database whose views of a
kind were written under another mark writes them all again
(``write_changed``), and one that keeps no views of a kind forgets its
mark, since its writes leave that kind's views behind (the next store
that keeps them writes them again).
"""

import dataclasses
import hashlib
import json

from reference_array.core import model as model_mod

SCHEMA = """
CREATE TABLE IF NOT EXISTS object_views (
    kind TEXT NOT NULL,
    id INTEGER NOT NULL,
    name TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (kind, id, name)
);
CREATE TABLE IF NOT EXISTS view_marks (
    kind TEXT PRIMARY KEY,
    mark TEXT NOT NULL
) WITHOUT ROWID;
"""


def _default(field):
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory.__qualname__ + '()'
    if field.default is not dataclasses.MISSING:
        return repr(field.default)
    return None


def _shape(part):
    """The fields of ``part`` (a ``model.Part`` class) and of the parts
    inside it: name, row name, type, shape, optional, default.
    """
    defaults = {f.name: _default(f) for f in dataclasses.fields(part)}
    return [(c.name, c.row, c.shape, c.optional, defaults[c.name],
             _shape(c.type) if model_mod.is_part(c.type) else
             c.type.__name__) for c in part.table()]


class Views(object):
    """The views kept of each object of ``model``: ``of(obj)`` -> {name:
    JSON value}; ``form``: the number of the way ``of`` writes them (a
    change there moves it).
    """

    def __init__(self, model, of, form):
        self.model = model
        self.of = of
        self.mark = hashlib.sha256(repr(
            [form, _shape(model)]).encode()).hexdigest()[:16]

    def __call__(self, row):
        """The views of the object stored as ``row``."""
        return self.of(self.model.from_row(row))


def put(db, views, kind, obj_id, row, obj=None):
    """Write the views of the object ``obj_id`` of ``kind`` (``row``; or
    ``obj``, the decoded object, when the caller has it) that ``views``,
    the kind's ``Views``, makes.
    """
    drop(db, kind, obj_id)
    found = views(row) if obj is None else views.of(obj)
    db.executemany('INSERT INTO object_views VALUES (?,?,?,?)',
                   [(kind, obj_id, name, json.dumps(view))
                    for name, view in found.items()])


def drop(db, kind, obj_id):
    db.execute('DELETE FROM object_views WHERE kind=? AND id=?',
               (kind, obj_id))


def marks(functions):
    """kind -> the ``mark`` of its views."""
    return {kind: views.mark for kind, views in functions.items()}


def record(db, functions):
    """Note that every kind's views are those of ``functions`` now."""
    db.execute('DELETE FROM view_marks')
    db.executemany('INSERT INTO view_marks VALUES (?, ?)',
                   marks(functions).items())


def changed(db, functions):
    """Whether any kind's views were written under another mark, or a
    kind without views in ``functions`` has a mark.
    """
    return dict(db.execute('SELECT kind, mark FROM view_marks')) != \
        marks(functions)


def write_changed(db, functions):
    """Write again the views of each kind of ``functions`` (kind ->
    ``Views``) written under another mark, and forget the marks of the
    kinds without views here. Inside a transaction.
    """
    stored = dict(db.execute('SELECT kind, mark FROM view_marks'))
    for kind, mark in marks(functions).items():
        if stored.get(kind) == mark:
            continue
        for obj_id, row in db.execute(
                'SELECT id, body FROM objects WHERE kind = ?',
                (kind,)).fetchall():
            put(db, functions[kind], kind, obj_id, json.loads(row))
    record(db, functions)
