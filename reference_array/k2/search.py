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

"""K2 query parameters as a ``core.query`` query.

``<field>[.ref][__<operator>]=<text>`` filters (all must hold);
``__sort``, ``__sort_order`` (asc, desc), ``__limit`` (100; 0: all) and
``__offset`` page. The text of a filter is read as its field's type: an
integer field matches ``5`` (not ``five``), a boolean ``true``/``false``
in any case, any field ``null`` when it has no value; a text that cannot
be of the field's type matches nothing (and ``__neq`` everything).
``__contains`` and ``__prefix`` read a field's text (``true``, ``5``).
A reference field is filtered by its path, with or without ``.ref``.
"""

import re

from reference_array.core import errors
from reference_array.core import query
from reference_array.k2 import models

DEFAULT_LIMIT = 100
OPERATORS = {'__in': 'in', '__m_eq': 'in', '__contains': 'contains',
             '__prefix': 'prefix', '__neq': 'ne', '__gte': 'ge',
             '__lte': 'le', '__gt': 'gt', '__lt': 'lt'}
_INT = re.compile(r'^-?\d+$')
NOTHING = object()


def _split(key):
    for suffix, op in OPERATORS.items():
        if key.endswith(suffix):
            return key[:-len(suffix)], op
    return key, 'eq'


def _number(text):
    try:
        return float(text)
    except ValueError:
        return NOTHING


def _typed(text, kind):
    """``text`` as a value of ``kind`` (None for null), or NOTHING."""
    if text == 'null':
        return None
    if kind is int:
        return int(text) if _INT.match(text) else NOTHING
    if kind is bool:
        return {'true': True, 'false': False}.get(text.lower(), NOTHING)
    return text


def _values(text, kind):
    """Every value ``text`` may stand for (``null`` is also a text)."""
    value = _typed(text, kind)
    found = [] if value is NOTHING else [value]
    if value is None and kind is str:
        found.append(text)
    return found


def _int_param(params, name, default):
    value = params.get(name)
    if value is None:
        return default
    if not _INT.match(value) or int(value) < 0:
        raise errors.Invalid('invalid %s: %r' % (name, value))
    return int(value)


class Fields(object):
    """What a resource's fields are: their types, and which are keyed."""

    def __init__(self, model):
        self.types = model.wire_types()
        self.keyed = {c.name for c in model.table() if c.wire} - {'id'}

    def column(self, key):
        """(path, type, store key) of a query field, or None."""
        name, ref = (key[:-4], True) if key.endswith('.ref') else (key,
                                                                   False)
        kind = self.types.get(name)
        if kind is None or (ref and kind is not models.Ref):
            return None
        if kind is models.Ref:
            return ((name, 'ref'), str,
                    name + '.ref' if name in self.keyed else None)
        return (name,), kind, name if name in self.keyed else None


def conditions(column, op, text):
    path, kind, key = column
    if op in ('contains', 'prefix'):
        return [query.Condition(path, kind, op, text, None)]
    if op in ('lt', 'le', 'gt', 'ge'):
        value = text if kind is str else _number(text)
        if value is NOTHING:
            return [query.Condition(path, kind, 'in', (), None)]
        return [query.Condition(path, kind, op, value, None)]
    values = []
    for item in (text.split(',') if op == 'in' else [text]):
        values.extend(_values(item, kind))
    if op == 'ne':
        # Keyed: a count of ``ne`` is the kind's kept count less a probe.
        return [query.Condition(path, kind, 'ne', v, key) for v in values]
    if op == 'eq' and len(values) == 1:
        return [query.Condition(path, kind, 'eq', values[0], key)]
    return [query.Condition(path, kind, 'in', tuple(values), key)]


def parse(model, pairs):
    """The query of a K2 GET's parameters on ``model``'s collection."""
    table = Fields(model)
    params = dict(pairs)
    found = []
    for key, text in pairs:
        if key.startswith('__'):
            continue
        field, op = _split(key)
        column = table.column(field)
        if column is None:
            raise errors.Invalid('unknown field in query: %s' % key)
        found.extend(conditions(column, op, text))
    sort = None
    if params.get('__sort'):
        column = table.column(params['__sort'])
        if column is None:
            raise errors.Invalid('unknown sort field: %s' %
                                 params['__sort'])
        sort = query.Sort(column[0], column[1])
    limit = _int_param(params, '__limit', DEFAULT_LIMIT)
    return query.query(found, sort, params.get('__sort_order') == 'desc',
                       limit or None, _int_param(params, '__offset', 0))
