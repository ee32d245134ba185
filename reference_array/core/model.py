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
object), ``dict`` and ``list`` (of JSON values: a K2 object's private
state, a LINSTOR object's properties and flags), and ``Part`` types: a
part of an object stored inside its row (a LINSTOR definition's volumes
and resources), alone, as ``List[P]`` or as ``Dict[str, P]`` (by name).
Each may be ``Optional``. Values are checked against them when a model
is built or stored.
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
        # Inside K2's stored views: a change moves k2.models.WIRE_FORM.
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


# One column of a model's field table. ``type``: int, str, bool, Ref,
# dict, list or a Part; ``optional``: None allowed; ``wire``: public;
# ``row``: its name in the stored row; ``shape``: None, or 'list' or
# 'map' of ``type`` (a Part).
Field = collections.namedtuple('Field', 'name type optional wire row shape',
                               defaults=(None,))


def private(default=None, factory=None):
    """A stored field that is never on the wire nor keyed."""
    if factory is not None:
        return dataclasses.field(default_factory=factory,
                                 metadata={'wire': False})
    return dataclasses.field(default=default, metadata={'wire': False})


_SHAPES = {list: 'list', dict: 'map'}


def _column(field, hints):
    kind = hints[field.name]
    optional = typing.get_origin(kind) is typing.Union
    if optional:
        kind = next(a for a in typing.get_args(kind) if a is not type(None))
    shape = _SHAPES.get(typing.get_origin(kind))
    if shape:
        kind = typing.get_args(kind)[-1]
    wire = field.metadata.get('wire', True)
    return Field(field.name, kind, optional, wire,
                 field.name if wire else '_' + field.name, shape)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _scalar(kind, value):
    return _is_int(value) if kind is int else isinstance(value, kind)


def _validator(column):
    """``_valid`` of one field, specialised once per field: checking every
    field of every row a page decodes is most of a page's time otherwise.
    """
    kind = column.type
    if column.shape:
        return lambda value: _valid(column, value)
    test = _is_int if kind is int else (lambda value: isinstance(value,
                                                                 kind))
    if column.optional:
        return lambda value: value is None or test(value)
    return test


def _loader(column):
    """``_loaded`` of one field, or None where a row holds the value as
    it is (a scalar, a dict or list of JSON values).
    """
    if column.shape or column.type is Ref or is_part(column.type):
        return lambda value: _loaded(column, value)
    return None


Plan = collections.namedtuple('Plan', 'rows loads checks')


def _plan(table):
    """How rows of a field table are loaded and checked: the row names,
    (row name, field, loader) and (field, validator) of each field.
    """
    return Plan(frozenset(c.row for c in table),
                tuple((c.row, c.name, _loader(c)) for c in table),
                tuple((c.name, _validator(c)) for c in table))


def _valid(column, value):
    if value is None:
        return column.optional
    if column.shape == 'list':
        return isinstance(value, list) and all(
            _scalar(column.type, v) for v in value)
    if column.shape == 'map':
        return isinstance(value, dict) and all(
            isinstance(k, str) and _scalar(column.type, v)
            for k, v in value.items())
    return _scalar(column.type, value)


def is_part(kind):
    """Whether ``kind`` is a ``Part`` class."""
    return isinstance(kind, type) and issubclass(kind, Part)


def _stored(column, value, compact=False):
    """A field's value as its row holds it."""
    if value is None:
        return None
    item = (lambda v: v.to_row(compact)) if is_part(column.type) else (
        lambda v: v)
    if column.shape == 'list':
        return [item(v) for v in value]
    if column.shape == 'map':
        return {k: item(v) for k, v in value.items()}
    if column.type is Ref:
        return value.to_wire()
    if isinstance(value, Part):
        return value.to_row(compact)
    if column.type in (dict, list):
        return type(value)(value)
    return value


def _loaded(column, value):
    """A field's value from its row."""
    if value is None:
        return None
    part = is_part(column.type)
    item = column.type.from_row if part else (lambda v: v)
    if column.shape == 'list' and isinstance(value, list):
        return [item(v) for v in value]
    if column.shape == 'map' and isinstance(value, dict):
        return {k: item(v) for k, v in value.items()}
    if column.type is Ref and isinstance(value, dict):
        return Ref.parse(value.get('ref'))
    if part and isinstance(value, dict):
        return column.type.from_row(value)
    return value


_TABLES = {}
_PLANS = {}


@dataclasses.dataclass(kw_only=True, slots=True)
class Part(object):
    """Typed fields stored inside an object's row, not as a row.

    A ``Model`` is a part with an id and a kind of its own.
    """

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
    def plan(cls):
        """The field table's ``Plan``, made once per class."""
        found = _PLANS.get(cls)
        if found is None:
            found = _PLANS[cls] = _plan(cls.table())
        return found

    def __post_init__(self):
        self.check()

    def check(self):
        for name, valid in self.plan().checks:
            if not valid(getattr(self, name)):
                column = next(c for c in self.table() if c.name == name)
                raise TypeError('%s.%s must be %s%s%s, not %r' % (
                    type(self).__name__, column.name,
                    column.shape + ' of ' if column.shape else '',
                    column.type.__name__,
                    ' or None' if column.optional else '',
                    getattr(self, name)))

    # -- the stored row ------------------------------------------------------
    def to_row(self, compact=False):
        """The stored row; ``compact``: optional fields that are None
        left out (here and in its parts), as rows written before models
        have them.
        """
        self.check()
        return {column.row: _stored(column, getattr(self, column.name),
                                    compact)
                for column in self.table()
                if not (compact and column.optional and
                        getattr(self, column.name) is None)}

    @classmethod
    def from_row(cls, row):
        plan = cls.plan()
        if not isinstance(row, dict):
            raise ValueError('a stored %s is not an object: %r' % (
                cls.__name__, row))
        if not plan.rows.issuperset(row):
            raise ValueError('a stored %s has unknown fields: %s' % (
                getattr(cls, 'KIND', None) or cls.__name__,
                ', '.join(sorted(set(row) - plan.rows))))
        values = {}
        for key, name, load in plan.loads:
            if key in row:
                value = row[key]
                values[name] = value if load is None or value is None \
                    else load(value)
        return cls(**values)


@dataclasses.dataclass(kw_only=True, slots=True)
class Model(Part):
    """Base of every typed object; subclasses set ``KIND``.

    ``DERIVED``: (name, type) of public fields computed when the object
    is presented (counts, capacities), queryable like stored ones.
    """

    KIND = None
    DERIVED = ()

    id: int = 0

    @classmethod
    def wire_types(cls):
        """name -> type of every public field, derived ones included."""
        types = {c.name: c.type for c in cls.table() if c.wire}
        types.update(cls.DERIVED)
        return types

    def keys(self):
        """(field, value) pairs the store finds this object under: each
        public scalar under its name, each reference as ``<field>.ref``.
        """
        found = []
        for column in self.table():
            value = getattr(self, column.name)
            if not column.wire or value is None or column.shape or \
                    column.type in (dict, list) or isinstance(value, Part):
                continue
            if column.type is Ref:
                found.append((column.name + '.ref', value.path))
            else:
                found.append((column.name, value))
        return found

    # -- the wire ------------------------------------------------------------
    def to_wire(self):
        """The public fields; references as ``{"ref": path}``.

        K2 keeps this form of each object as a stored view: a change here
        moves ``k2.models.WIRE_FORM``.
        """
        out = {}
        for column in self.table():
            if column.wire:
                value = getattr(self, column.name)
                out[column.name] = value.to_wire() if isinstance(
                    value, Ref) else value
        return out
