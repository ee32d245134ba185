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
``{"hits": [...], "total": N, "limit": L, "offset": O}`` (queries: see
``search``), items are bare
objects, references are ``{"ref": "/<resource>/<id>"}``, sizes are KiB,
errors are ``{"error_msg": ...}`` with a JSON content type.
"""

import json
import re

from reference_array.core import errors
from reference_array.core import model
from reference_array.http import server as httpd
from reference_array.k2 import models
from reference_array.k2 import schema
from reference_array.k2 import search

PREFIX = '/api/v2'
REPLICATION_PREFIX = '_replication/'
_ITEM = re.compile(r'^(?P<res>.+?)/(?P<id>\d+)$')


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
            rest, obj_id = match.group('res'), model.number(match.group('id'))
            if obj_id is None:
                raise error(404, 'no such %s: %s' % (match.group('res'),
                                                     match.group('id')))
        if method == 'GET':
            if obj_id is None:
                return 200, self._search(rest, query)
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

    def _search(self, resource, pairs):
        if resource == 'mappings':
            pairs = self._views_as_volsnaps(pairs)
        q = search.parse(schema.model(resource), pairs)
        # A whole kind's page is its stored views, sent as they are; any
        # other, its objects presented.
        page = self.backend.page_text(resource, q)
        if page is None:
            total, hits = self.backend.list(resource, q)
            page = total, json.dumps(hits)
        return httpd.JSONText(
            '{"hits": %s, "total": %d, "limit": %d, "offset": %d}' % (
                page[1], page[0], q.limit or 0, q.offset))

    def _views_as_volsnaps(self, pairs):
        """A mapping of a view is a mapping of its volsnaps: a filter
        on ``volume.ref=/snapshots/N`` becomes one on the refs of those.
        """
        out = []
        for key, wanted in pairs:
            view = models.Ref.parse(wanted) if key == 'volume.ref' else None
            if view is not None and view.kind == models.Snapshot.KIND:
                found = self.backend.records.children(models.Volsnap,
                                                      'snapshot', view)
                key, wanted = 'volume.ref__in', ','.join(
                    models.Ref.to(vs).path for vs in found)
            out.append((key, wanted))
        return out

    @staticmethod
    def _object(body):
        if not isinstance(body, dict):
            raise error(400, 'the request body must be a JSON object')
        return body
