"""The K2 REST API v2 dialect of the reference array.

Wire rules: discovery at /api/v2, collections answer
``{"hits": [...], "total": N, "limit": L, "offset": O}``, items are bare
objects, references are ``{"ref": "/<resource>/<id>"}``, sizes are KiB,
errors are ``{"error_msg": ...}`` with a JSON content type.
"""

import json
import re

from reference_array.http import server as httpd

PREFIX = '/api/v2'
DEFAULT_LIMIT = 100
REST_API_VERSION = '2.2.7'

# Every resource the in-tree driver and krest may touch, and every
# resource a returned reference can point at.
RESOURCES = (
    'system/state', 'system/capacity', 'system/net_ips', 'system/fc_ports',
    'system/net_ports', 'system/wan_ports', 'volume_groups', 'volumes',
    'snapshots', 'volsnaps', 'retention_policies', 'hosts', 'host_groups',
    'host_iqns', 'host_fc_ports', 'host_auth_profiles', 'mappings',
    'replication/peer_k2arrays', 'replication/sessions',
    'replication/peer_volumes', 'replication/peer_volume_groups',
    'replication/rpo_history', 'stats/system', 'stats/volumes',
)
READ_ONLY = frozenset(('system/state', 'system/capacity', 'system/net_ips',
                       'system/fc_ports', 'system/net_ports',
                       'system/wan_ports', 'volsnaps', 'stats/system',
                       'stats/volumes', 'replication/rpo_history'))
# Beyond the documented API: volumes may be created with a "source"
# (a volume or volsnap), as a copy-on-write copy. Clients must discover it.
CAPABILITIES = {'volume_source': True}
REPLICATION_PREFIX = '_replication/'
_ITEM = re.compile(r'^(?P<res>.+?)/(?P<id>\d+)$')
_OPERATORS = ('__in', '__m_eq', '__contains', '__prefix', '__neq', '__gte',
              '__lte', '__gt', '__lt')


def error(status, message):
    return httpd.HTTPError(status, {'error_msg': message})


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


class K2API(object):
    """Routes K2 requests to the array model."""

    def __init__(self, model, users, capabilities=None):
        self.model = model
        self.users = users
        self.capabilities = dict(CAPABILITIES if capabilities is None
                                 else capabilities)

    @staticmethod
    def error_payload(status, message):
        return {'error_msg': message}

    @staticmethod
    def parse_body(raw):
        if not raw.strip():
            return None
        try:
            body = json.loads(raw)
        except ValueError as e:
            raise error(400, 'malformed JSON body: %s' % e)
        return body

    def route(self, method, path, query, body):
        if path.rstrip('/') == PREFIX:
            if method != 'GET':
                raise error(405, 'method not allowed')
            return 200, {'resources': {
                name: {'url': '/' + name} for name in RESOURCES},
                'capabilities': dict(self.capabilities)}
        if not path.startswith(PREFIX + '/'):
            raise error(404, 'no such path: %s' % path)
        rest = path[len(PREFIX) + 1:].rstrip('/')
        if rest.startswith(REPLICATION_PREFIX):
            # Array-to-array calls of replication; not part of K2's API.
            if method != 'POST' or self.model.replication is None:
                raise error(405, 'method not allowed')
            return 200, self.model.replication.peer_call(
                rest[len(REPLICATION_PREFIX):], body)
        obj_id = None
        if rest not in RESOURCES:
            match = _ITEM.match(rest)
            if not match or match.group('res') not in RESOURCES:
                raise error(404, 'no such resource: %s' % rest)
            rest, obj_id = match.group('res'), int(match.group('id'))
        if method == 'GET':
            if obj_id is None:
                return 200, search(self.model.list(rest), query,
                                   self.model.fields(rest))
            return 200, self.model.get(rest, obj_id)
        if rest in READ_ONLY:
            raise error(405, '%s is read-only' % rest)
        if method == 'POST' and obj_id is None:
            return 201, self.model.create(rest, self._object(body))
        if method == 'PATCH' and obj_id is not None:
            return 200, self.model.update(rest, obj_id, self._object(body))
        if method == 'DELETE' and obj_id is not None:
            self.model.delete(rest, obj_id)
            return 204, None
        raise error(405, 'method %s not allowed on %s' % (method, path))

    @staticmethod
    def _object(body):
        if not isinstance(body, dict):
            raise error(400, 'the request body must be a JSON object')
        return body
