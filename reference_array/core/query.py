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

"""Filters, order and pages of a collection, answered in SQL.

A ``Query`` is what a dialect's list call asks for, in no dialect's
syntax: conditions on typed fields, an order, a page. ``where`` turns it
into SQL over the store's ``objects`` rows, reading each field out of the
row's JSON (``json_extract``); equality on a keyed field is answered from
the store's keys index instead, and ``id`` from the primary key, so the
lookups clients make on every call are index probes, not scans.
``Rows`` answers the same query, with the same SQL, over objects held in
memory (computed ones, or ones with computed fields), so both kinds of
collection mean the same thing by every operator.

Semantics, per operator (``x`` a field's value, ``v`` the operand):

=========  ============================================================
eq         ``x == v`` (``v`` None: ``x`` is absent or null)
ne         not eq
in         eq to one of a list (which may hold None)
lt le      ordered comparison, numbers as numbers, text as text; a null
gt ge      ``x`` never matches
contains   ``v`` occurs in ``x``'s text (true/false, decimal, the text)
prefix     ``x``'s text starts with ``v``
=========  ============================================================

Order: by one field, nulls last, then by id (both directions), else by
id.
"""

import collections
import json
import sqlite3

# ``path``: the field's place in a row, e.g. ('volume_group', 'ref');
# ``type``: int, str or bool (a reference is the str of its path);
# ``key``: the store's key field for equality lookups, or None.
Condition = collections.namedtuple('Condition', 'path type op value key')
Query = collections.namedtuple('Query', 'conditions sort descending limit '
                               'offset')
# ``path``/``type`` of the field to order by.
Sort = collections.namedtuple('Sort', 'path type')
OPERATORS = ('eq', 'ne', 'in', 'lt', 'le', 'gt', 'ge', 'contains', 'prefix')


def query(conditions=(), sort=None, descending=False, limit=None, offset=0):
    return Query(tuple(conditions), sort, descending, limit, offset)


def _value(path):
    if path == ('id',):
        return 'o.id', ()
    return 'json_extract(o.body, ?)', ('$.' + '.'.join(path),)


def _text(path, kind):
    expr, args = _value(path)
    if kind is bool:
        return "CASE %s WHEN 1 THEN 'true' WHEN 0 THEN 'false' END" % (
            expr), args
    if kind is int:
        return 'CAST(%s AS TEXT)' % expr, args
    return expr, args


def _sql_value(value):
    return int(value) if isinstance(value, bool) else value


def _keyed(cond, kind, encode):
    """The condition as a probe of the keys index, or None."""
    values = cond.value if cond.op == 'in' else [cond.value]
    if cond.key is None or cond.op not in ('eq', 'in') or None in values:
        return None
    if not values:
        return '0', ()
    # Not correlated with ``o``: the ids are found once, then each one
    # is a probe of the objects' primary key.
    return ('o.id IN (SELECT id FROM object_keys WHERE kind = ? AND '
            'field = ? AND value IN (%s))' % ','.join('?' * len(values)),
            (kind, cond.key) + tuple(encode(v) for v in values))


def _condition(cond):
    expr, args = _value(cond.path)
    op, value = cond.op, cond.value
    if op == 'eq' and value is not None:
        return '%s = ?' % expr, args + (_sql_value(value),)
    if op in ('eq', 'ne'):
        sql = '%s IS %s?' % (expr, 'NOT ' if op == 'ne' else '')
        return sql, args + (_sql_value(value),)
    if op == 'in':
        present = [v for v in value if v is not None]
        parts, used = [], ()
        if present:
            parts.append('%s IN (%s)' % (expr, ','.join('?' * len(present))))
            used += args + tuple(_sql_value(v) for v in present)
        if None in value:
            parts.append('%s IS NULL' % expr)
            used += args
        # An empty list matches nothing.
        return '(%s)' % (' OR '.join(parts) or '0'), used
    if op in ('lt', 'le', 'gt', 'ge'):
        sign = {'lt': '<', 'le': '<=', 'gt': '>', 'ge': '>='}[op]
        return '%s %s ?' % (expr, sign), args + (_sql_value(value),)
    text, args = _text(cond.path, cond.type)
    if op == 'contains':
        return 'instr(%s, ?) > 0' % text, args + (value,)
    if op == 'prefix':
        return 'substr(%s, 1, ?) = ?' % text, args + (len(value), value)
    raise ValueError('unknown operator %r' % op)


def where(q, kind, encode=None):
    """(SQL, args) of ``q``'s conditions over the ``objects o`` of
    ``kind``; ``encode``: the store's key encoder, to probe its keys
    (None: never).
    """
    parts, args = ['o.kind = ?'], [kind]
    for cond in q.conditions:
        found = _keyed(cond, kind, encode) if encode else None
        sql, more = found or _condition(cond)
        parts.append(sql)
        args.extend(more)
    return ' AND '.join(parts), args


def order(q):
    """(SQL, args) of ``ORDER BY ... LIMIT ... OFFSET ...``."""
    args = []
    direction = ' DESC' if q.descending else ''
    if q.sort is None or q.sort.path == ('id',):
        sql = 'ORDER BY o.id' + direction
    else:
        expr, more = _value(q.sort.path)
        sql = 'ORDER BY %s IS NULL, %s%s, o.id' % (expr, expr, direction)
        args.extend(more * 2)
    sql += ' LIMIT ? OFFSET ?'
    args.extend((-1 if q.limit is None else q.limit, q.offset))
    return sql, args


def _kept_count(db, kind, q, encode, kept):
    """The number of objects ``q``'s conditions match, from the kind's
    kept count, or None: no conditions (the count itself), or one
    ``ne`` on a keyed field (the count less the keyed probe of ``eq``).
    Anything else is counted over the kind.
    """
    everything = kept(kind) if kept is not None and encode else None
    if everything is None or len(q.conditions) > 1:
        return None
    if not q.conditions:
        return everything
    cond = q.conditions[0]
    if cond.op != 'ne' or cond.key is None or cond.value is None:
        return None
    sql, args = where(q._replace(conditions=(cond._replace(op='eq'),)),
                      kind, encode)
    return everything - db.execute('SELECT COUNT(*) FROM objects o WHERE '
                                   + sql, args).fetchone()[0]


def select(db, kind, q, encode=None, kept=None, without=()):
    """(total, page of JSON bodies) of ``q`` over ``kind`` in ``db``;
    ``kept``: kind -> its kept number of objects, or None; ``without``:
    top-level fields left out of the bodies (parts a view does not show).
    """
    sql, args = where(q, kind, encode)
    total = _kept_count(db, kind, q, encode, kept)
    if total is None:
        total = db.execute('SELECT COUNT(*) FROM objects o WHERE ' + sql,
                           args).fetchone()[0]
    tail, more = order(q)
    body = 'o.body'
    if without:
        body = 'json_remove(o.body%s)' % (', ?' * len(without))
    rows = db.execute('SELECT %s FROM objects o WHERE %s %s' % (
        body, sql, tail), ['$.' + f for f in without] + args + more
    ).fetchall()
    return total, [r[0] for r in rows]


def over(objects, q):
    """(total, page) of ``q`` over wire objects (each with an ``id``)
    held in memory.
    """
    db = sqlite3.connect(':memory:')
    try:
        db.execute('CREATE TABLE objects (kind TEXT, id INTEGER, '
                   'body TEXT)')
        db.executemany('INSERT INTO objects VALUES (?, ?, ?)', [
            ('', obj['id'], json.dumps(obj)) for obj in objects])
        total, bodies = select(db, '', q)
    finally:
        db.close()
    return total, [json.loads(b) for b in bodies]
