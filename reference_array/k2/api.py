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

"""The K2 REST API v2 dialect of the reference array.

Wire rules: discovery at /api/v2, collections answer
``{"hits": [...], "total": N, "limit": L, "offset": O}``, items are bare
objects, references are ``{"ref": "/<resource>/<id>"}``, sizes are KiB,
errors are ``{"error_msg": ...}`` with a JSON content type.
"""

import re

from reference_array.core import errors
from reference_array.http import server as httpd
from reference_array.k2 import refs
from reference_array.k2 import schema

PREFIX = '/api/v2'
DEFAULT_LIMIT = 100
REPLICATION_PREFIX = '_replication/'
_ITEM = re.compile(r'^(?P<res>.+?)/(?P<id>\d+)$')
_OPERATORS = ('__in', '__m_eq', '__contains', '__prefix', '__neq', '__gte',
              '__lte', '__gt', '__lt')


# How each refusal of the backend reaches the wire. K2 answers 400 for a
# duplicate or an object in use; 409 is what a peer array answers for a
# session in the wrong state (the replication shipper reads it).
STATUS = ((errors.NotFound, 404), (errors.NotAllowed, 405),
          (errors.WrongState, 409), (errors.ArrayError, 400))
BUSY = 'MC_ERR_BUSY'


def error(status, message):
    return httpd.HTTPError(status, {'error_msg': message})


def status_of(exc):
    return next(status for kind, status in STATUS if isinstance(exc, kind))


def _scalar(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if value is None:
        return 'null'
    return str(value)


def _field_value(obj, field):
    if field.endswith('.ref'):
        value = obj.get(field[:-4])
        return value.get('ref') if isinstance(value, dict) else None
    return obj.get(field)


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _matches(obj, field, op, wanted):
    have = _field_value(obj, field)
    if op in ('__in', '__m_eq'):
        return _scalar(have) in wanted.split(',')
    if op == '__contains':
        return wanted in _scalar(have)
    if op == '__prefix':
        return _scalar(have).startswith(wanted)
    if op == '__neq':
        return _scalar(have) != wanted
    if op in ('__gt', '__lt', '__gte', '__lte'):
        a, b = _number(have), _number(wanted)
        if a is None or b is None:
            return False
        return {'__gt': a > b, '__lt': a < b, '__gte': a >= b,
                '__lte': a <= b}[op]
    if wanted.lower() in ('true', 'false') and isinstance(have, bool):
        return _scalar(have) == wanted.lower()
    return _scalar(have) == wanted


def _split(key):
    for op in _OPERATORS:
        if key.endswith(op):
            return key[:-len(op)], op
    return key, ''


def _int_param(query, name, default):
    value = query.get(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise error(400, 'invalid %s: %r' % (name, value))
    if number < 0:
        raise error(400, 'invalid %s: %r' % (name, value))
    return number


def search(objects, query_pairs, known_fields):
    """Filter, sort and page ``objects`` by K2 query parameters."""
    query = dict(query_pairs)
    limit = _int_param(query, '__limit', DEFAULT_LIMIT)
    offset = _int_param(query, '__offset', 0)
    sort = query.get('__sort')
    order = query.get('__sort_order', 'asc')
    hits = list(objects)
    for key, wanted in query_pairs:
        if key.startswith('__'):
            continue
        field, op = _split(key)
        base = field[:-4] if field.endswith('.ref') else field
        if base not in known_fields:
            raise error(400, 'unknown field in query: %s' % key)
        hits = [o for o in hits if _matches(o, field, op, wanted)]
    if sort:
        if sort not in known_fields:
            raise error(400, 'unknown sort field: %s' % sort)
        hits.sort(key=lambda o: (_number(o.get(sort)) is None,
                                 _number(o.get(sort)) or 0,
                                 _scalar(o.get(sort))),
                  reverse=(order == 'desc'))
    total = len(hits)
    page = hits[offset:offset + limit] if limit else hits[offset:]
    return {'hits': page, 'total': total, 'limit': limit, 'offset': offset}


def _where(resource, query_pairs):
    """One plain equality filter the store's keys can answer, or None."""
    known = schema.fields(resource)
    for key, wanted in query_pairs:
        base = key[:-4] if key.endswith('.ref') else key
        if base in known and (key.endswith('.ref') or
                              key in schema.KEYED_TEXT):
            return key, wanted
    return None


class K2API(object):
    """Routes K2 requests to the K2 backend."""

    def __init__(self, backend, users, capabilities=None, peer_api=None):
        """``peer_api``: the replication calls of paired arrays."""
        self.backend = backend
        self.users = users
        self.capabilities = dict(schema.CAPABILITIES if capabilities is None
                                 else capabilities)
        self.peer_api = peer_api

    @staticmethod
    def error_payload(status, message):
        return {'error_msg': message}

    @staticmethod
    def busy_reply():
        """What a busy K2 answers (the fault injector's ``busy``)."""
        return 400, {'error_msg': BUSY}

    @staticmethod
    def parse_body(raw):
        if not raw.strip():
            return None
        try:
            body = httpd.decode_json(raw)
        except ValueError as e:
            raise error(400, 'malformed JSON body: %s' % e)
        return body

    @staticmethod
    def refusal(exc):
        """(status, payload) of a core.errors refusal."""
        return status_of(exc), {'error_msg': exc.message}

    def route(self, method, path, query, body):
        if path.rstrip('/') == PREFIX:
            if method != 'GET':
                raise error(405, 'method not allowed')
            return 200, {'resources': {
                name: {'url': '/' + name} for name in schema.RESOURCES},
                'capabilities': dict(self.capabilities)}
        if not path.startswith(PREFIX + '/'):
            raise error(404, 'no such path: %s' % path)
        rest = path[len(PREFIX) + 1:].rstrip('/')
        if rest.startswith(REPLICATION_PREFIX):
            # Array-to-array calls of replication; not part of K2's API.
            if method != 'POST' or self.peer_api is None:
                raise error(405, 'method not allowed')
            return 200, self.peer_api.call(
                rest[len(REPLICATION_PREFIX):], body)
        obj_id = None
        if rest not in schema.RESOURCES:
            match = _ITEM.match(rest)
            if not match or match.group('res') not in schema.RESOURCES:
                raise error(404, 'no such resource: %s' % rest)
            rest, obj_id = match.group('res'), refs.number(match.group('id'))
            if obj_id is None:
                raise error(404, 'no such %s: %s' % (match.group('res'),
                                                     match.group('id')))
        if method == 'GET':
            if obj_id is None:
                if rest == 'mappings':
                    query = self._views_as_volsnaps(query)
                return 200, search(
                    self.backend.list(rest, _where(rest, query)), query,
                    schema.fields(rest))
            return 200, self.backend.get(rest, obj_id)
        if rest in schema.READ_ONLY:
            raise error(405, '%s is read-only' % rest)
        if method == 'POST' and obj_id is None:
            return 201, self.backend.create(rest, self._object(body))
        if method == 'PATCH' and obj_id is not None:
            return 200, self.backend.update(rest, obj_id, self._object(body))
        if method == 'DELETE' and obj_id is not None:
            self.backend.delete(rest, obj_id)
            return 204, None
        raise error(405, 'method %s not allowed on %s' % (method, path))

    def _views_as_volsnaps(self, query):
        """A mapping of a view is a mapping of its volsnaps: a filter
        on ``volume.ref=/snapshots/N`` finds those.
        """
        out = []
        for key, wanted in query:
            if key == 'volume.ref' and wanted.startswith('/snapshots/'):
                found = self.backend.list('volsnaps', ('snapshot.ref',
                                                       wanted))
                key, wanted = 'volume.ref__in', ','.join(
                    refs.path('volsnaps', vs['id']) for vs in found)
            out.append((key, wanted))
        return out

    @staticmethod
    def _object(body):
        if not isinstance(body, dict):
            raise error(400, 'the request body must be a JSON object')
        return body
