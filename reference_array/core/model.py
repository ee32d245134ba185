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

"""Typed objects: a field table, a stored row and a wire form per kind.

A model is a dataclass with slots, so an attribute it does not declare
cannot be set: a misspelt field fails at once instead of being stored.
Every field is public (on the wire, and keyed in the store) or private
(``private()``: stored, never on the wire, never keyed). A model's row in
the store keeps public fields under their names and private ones under
``_<name>``, the layout of rows written before models existed, so a
database keeps working across the change.

Field types: ``int``, ``str``, ``bool``, ``Ref`` (a reference to another
object), ``dict`` (private state only), each possibly ``Optional``.
Values are checked against them when a model is built or stored.
"""

import collections
import dataclasses
import re
import typing

_PATH = re.compile(r'^/(.+)/(\d+)$')
# Ids are SQLite integers: anything larger names no object.
MAX_ID = (1 << 63) - 1


def number(text):
    """An object id from its text, or None if it cannot name one."""
    if not text.isdigit() or int(text) > MAX_ID:
        return None
    return int(text)


@dataclasses.dataclass(frozen=True, slots=True)
class Ref(object):
    """A reference to an object: its kind and id."""

    kind: str
    id: int

    @property
    def path(self):
        return '/%s/%d' % (self.kind, self.id)

    def to_wire(self):
        return {'ref': self.path}

    @classmethod
    def parse(cls, path):
        """The reference at ``/<kind>/<id>``, or None if it is not one."""
        match = _PATH.match(path) if isinstance(path, str) else None
        obj_id = number(match.group(2)) if match else None
        return None if obj_id is None else cls(match.group(1), obj_id)

    @classmethod
    def to(cls, obj):
        """The reference to a stored model."""
        return cls(obj.KIND, obj.id)


# One column of a model's field table. ``type``: int, str, bool, Ref or
# dict; ``optional``: None allowed; ``wire``: public; ``row``: its name in
# the stored row.
Field = collections.namedtuple('Field', 'name type optional wire row')


def private(default=None, factory=None):
    """A stored field that is never on the wire nor keyed."""
    if factory is not None:
        return dataclasses.field(default_factory=factory,
                                 metadata={'wire': False})
    return dataclasses.field(default=default, metadata={'wire': False})


def _column(field, hints):
    kind = hints[field.name]
    optional = typing.get_origin(kind) is typing.Union
    if optional:
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    wire = field.metadata.get('wire', True)
    return Field(field.name, kind, optional, wire,
                 field.name if wire else '_' + field.name)


def _valid(column, value):
    if value is None:
        return column.optional
    if column.type is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, column.type)


_TABLES = {}


@dataclasses.dataclass(kw_only=True, slots=True)
class Model(object):
    """Base of every typed object; subclasses set ``KIND``.

    ``DERIVED``: (name, type) of public fields computed when the object
    is presented (counts, capacities), queryable like stored ones.
    """

    KIND = None
    DERIVED = ()

    id: int = 0

    @classmethod
    def table(cls):
        """The field table: one ``Field`` per stored field, in order."""
        found = _TABLES.get(cls)
        if found is None:
            hints = typing.get_type_hints(cls)
            found = _TABLES[cls] = tuple(
                _column(f, hints) for f in dataclasses.fields(cls))
        return found

    @classmethod
    def wire_types(cls):
        """name -> type of every public field, derived ones included."""
        types = {c.name: c.type for c in cls.table() if c.wire}
        types.update(cls.DERIVED)
        return types

    def __post_init__(self):
        self.check()

    def check(self):
        for column in self.table():
            value = getattr(self, column.name)
            if not _valid(column, value):
                raise TypeError('%s.%s must be %s%s, not %r' % (
                    type(self).__name__, column.name,
                    column.type.__name__,
                    ' or None' if column.optional else '', value))

    # -- the stored row ------------------------------------------------------
    def to_row(self):
        self.check()
        row = {}
        for column in self.table():
            value = getattr(self, column.name)
            if column.type is Ref and value is not None:
                value = value.to_wire()
            elif column.type is dict:
                value = dict(value)
            row[column.row] = value
        return row

    @classmethod
    def from_row(cls, row):
        table = cls.table()
        unknown = set(row) - {c.row for c in table}
        if unknown:
            raise ValueError('a stored %s has unknown fields: %s' % (
                cls.KIND, ', '.join(sorted(unknown))))
        values = {}
        for column in table:
            if column.row not in row:
                continue
            value = row[column.row]
            if column.type is Ref and isinstance(value, dict):
                value = Ref.parse(value.get('ref'))
            values[column.name] = value
        return cls(**values)

    def keys(self):
        """(field, value) pairs the store finds this object under: each
        public scalar under its name, each reference as ``<field>.ref``.
        """
        found = []
        for column in self.table():
            value = getattr(self, column.name)
            if not column.wire or value is None or column.type is dict:
                continue
            if column.type is Ref:
                found.append((column.name + '.ref', value.path))
            else:
                found.append((column.name, value))
        return found

    # -- the wire ------------------------------------------------------------
    def to_wire(self):
        """The public fields; references as ``{"ref": path}``."""
        out = {}
        for column in self.table():
            if column.wire:
                value = getattr(self, column.name)
                out[column.name] = value.to_wire() if isinstance(
                    value, Ref) else value
        return out
