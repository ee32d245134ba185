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

"""The LINSTOR REST v1 dialect of the reference array.

Routes follow LINSTOR's OpenAPI spec, plus the single-object GETs the
controller serves beyond it. Bodies are read leniently, as the Java
controller does (numbers as strings, nulls for absent fields, no body).
Backend reports and refusals become ApiCallRc entries here.
"""

import re

from reference_array.core import errors
from reference_array.http import server as httpd
from reference_array.linstor import outcomes
from reference_array.linstor import reports as reports_mod
from reference_array.linstor import wire

REST_API_VERSION = '1.28.0'
VERSION = {'version': '1.28.0', 'git_hash': 'reference-array',
           'build_time': '2026-11-01T00:00:00+00:00',
           'rest_api_version': REST_API_VERSION}
_SEG = r'([^/]+)'
RD = '/v1/resource-definitions/' + _SEG
RG = '/v1/resource-groups/' + _SEG


# The LINSTOR code of each refusal reason of the backend.
REASON_CODES = {
    'prop': wire.INVLD_PROP, 'layer_stack': wire.INVLD_LAYER_STACK,
    'place_count': wire.INVLD_PLACE_COUNT,
    'volume_size': wire.INVLD_VLM_SIZE, 'rsc_name': wire.INVLD_RSC_NAME,
    'snapshot_name': wire.INVLD_SNAPSHOT_NAME,
    'request': wire.INVLD_REQUEST, 'in_use': wire.IN_USE,
    'no_space': wire.NOT_ENOUGH_FREE_SPACE,
    'no_nodes': wire.NOT_ENOUGH_NODES,
    'no_snapshots': wire.SNAPSHOTS_NOT_SUPPORTED,
    'vlm_nr': wire.INVLD_VLM_NR, 'minor_nr': wire.INVLD_MINOR_NR,
    # LINSTOR answers a value out of range as an unhandled exception.
    'out_of_range': wire.UNKNOWN_ERROR,
    'no_clone': wire.INVLD_CLONE_SOURCE,
}
EVENT_CODES = {
    'created': wire.CREATED, 'modified': wire.MODIFIED,
    'deleted': wire.DELETED, 'not_found': wire.WARN_NOT_FOUND,
    'already_deployed': wire.WARN_RSC_ALREADY_DEPLOYED,
    'deprecated': wire.WARN_DEPRECATED,
    'failed': wire.UNKNOWN_ERROR,
}


def failure(exc):
    """The ApiCallRc error (and HTTP status) of a backend refusal."""
    if isinstance(exc, errors.NotFound):
        code = wire.NOT_FOUND[exc.subject]
    elif exc.reason == 'exists':
        code = wire.EXISTS[exc.subject]
    else:
        code = REASON_CODES.get(exc.reason, wire.INVLD_REQUEST)
    # ``bare``: the code names no object (a lookup of the call's filter).
    return wire.Failure(code, exc.message,
                        obj=None if exc.context.get('bare') else exc.subject,
                        op=exc.context.get('op'),
                        refs=exc.context.get('refs'),
                        cause=exc.context.get('cause'),
                        details=exc.context.get('details'),
                        correction=exc.context.get('correction'))


def entry(report):
    """The ApiCallRc entry of a backend report."""
    return wire.rc(report.level, EVENT_CODES[report.event], report.message,
                   obj=report.obj, op=report.op, refs=report.refs)


def _entries(payload):
    """The payload with every report as its ApiCallRc entry."""
    if isinstance(payload, list):
        return [entry(p) if isinstance(p, outcomes.Report) else p
                for p in payload]
    if isinstance(payload, dict) and isinstance(payload.get('messages'),
                                                list):
        return dict(payload, messages=_entries(payload['messages']))
    return payload


def _multi(query, *names):
    values = []
    for key, value in query:
        if key in names and value:
            values += [v for v in value.split(',') if v]
    return values


def _flag(query, name):
    return any(k == name and v.lower() in ('true', '1', 'yes')
               for k, v in query)


def _window(query):
    """(offset, limit) of a list GET; limit None: all.

    As LINSTOR's list calls: with a limit of 0 or less there is no page,
    and the offset is ignored; a negative offset with a limit is the
    exception Java's ``Stream.skip`` throws.
    """
    params = dict(query)
    try:
        offset = int(params.get('offset') or 0)
        limit = int(params.get('limit') or 0)
    except ValueError:
        raise wire.invalid('limit and offset must be integers')
    if limit <= 0:
        return 0, None
    if offset < 0:
        raise outcomes.refused('out_of_range', 'Exception thrown.',
                               details=str(offset))
    return offset, limit


def _page(items, query):
    offset, limit = _window(query)
    return items[offset:] if limit is None else items[offset:offset + limit]


class Unreadable(object):
    """A request body that is not JSON LINSTOR reads."""

    def __init__(self, details):
        self.details = details


def _failed(payload):
    """Whether a reply's ApiCallRc entries hold an error."""
    if isinstance(payload, dict):
        payload = payload.get('messages')
    return isinstance(payload, list) and any(
        isinstance(e, dict) and isinstance(e.get('ret_code'), int) and
        e['ret_code'] < 0 and (e['ret_code'] + (1 << 64)) & wire.ERROR ==
        wire.ERROR for e in payload)


class LinstorAPI(object):

    def __init__(self, backend, users=None):
        """``users``: {user: password} of HTTP Basic authentication (as
        a controller with LDAP authentication), or None: open, as a
        controller is by default.
        """
        self.backend = backend
        self.users = users
        self.reports = reports_mod.ErrorReports(VERSION['version'])
        nodes, groups, defs = backend.nodes, backend.groups, \
            backend.definitions
        placement, rscs, snaps = backend.placement, backend.resources, \
            backend.snapshots
        # (method, pattern, handler(match, query, body) -> (status, body))
        self.routes = [
            ('GET', '/v1/controller/version', lambda g, q, b: (200, VERSION)),
            ('GET', '/v1/controller/properties',
             lambda g, q, b: (200, nodes.controller_props())),
            ('POST', '/v1/controller/properties',
             lambda g, q, b: (201, nodes.set_controller_props(b))),
            ('DELETE', '/v1/controller/properties/(.+)',
             lambda g, q, b: (200, nodes.delete_controller_prop(g[0]))),
            ('GET', '/v1/nodes', lambda g, q, b: (200, _page(
                nodes.nodes(_multi(q, 'nodes')), q))),
            ('GET', '/v1/nodes/' + _SEG, lambda g,
             q, b: (200, nodes.node(g[0]))),
            ('PUT', '/v1/nodes/%s/(evacuate|restore)' % _SEG,
             lambda g, q, b: (200, nodes.node_flag(g[0], g[1]))),
            ('GET', '/v1/view/storage-pools', lambda g, q, b: (200, _page(
                nodes.storage_pools(self._known_nodes(q, _flag(q, 'cached')),
                                    _multi(q, 'storage_pools')), q))),
            ('GET', '/v1/nodes/%s/storage-pools' % _SEG,
             lambda g, q, b: (200, nodes.storage_pools(
                 [nodes.node(g[0])['name']], _multi(q, 'storage_pools')))),
            ('POST', '/v1/nodes/%s/storage-pools' % _SEG,
             lambda g, q, b: (201, nodes.create_pool(g[0], b))),
            ('GET', '/v1/storage-pool-definitions',
             lambda g, q, b: (200, nodes.pool_definitions())),
            # resource groups
            ('GET', '/v1/resource-groups', lambda g, q, b: (200, _page(
                groups.resource_groups(_multi(q, 'resource_groups')), q))),
            ('POST', '/v1/resource-groups',
             lambda g, q, b: (201, groups.create_rg(b))),
            ('GET', RG, lambda g, q, b: (200, groups.resource_group(g[0]))),
            ('PUT', RG, lambda g, q, b: (200, groups.modify_rg(g[0], b))),
            ('DELETE', RG, lambda g, q, b: (200, groups.delete_rg(g[0]))),
            ('GET', RG + '/volume-groups',
             lambda g, q, b: (200, groups.volume_groups(g[0]))),
            ('POST', RG + '/volume-groups',
             lambda g, q, b: (201, groups.create_vg(g[0], b))),
            ('POST', RG + '/spawn', lambda g, q,
             b: (201, placement.spawn(g[0], b))),
            ('POST', RG + '/query-size-info',
             lambda g, q, b: (200, placement.query_size_info(g[0], b))),
            ('POST', RG + '/adjust', lambda g, q, b: (200, self._adjust(
                g[0], b))),
            # resource definitions
            ('GET', '/v1/resource-definitions',
             lambda g, q, b: (200, self._definitions(q))),
            ('POST', '/v1/resource-definitions',
             lambda g, q, b: (201, defs.create_rd(b))),
            ('GET', RD, lambda g, q, b: (200, defs.resource_definition(g[0]))),
            ('PUT', RD, lambda g, q, b: (200, defs.modify_rd(g[0], b))),
            ('DELETE', RD, lambda g, q, b: (200, defs.delete_rd(g[0]))),
            ('GET', RD + '/volume-definitions',
             lambda g, q, b: (200, defs.volume_definitions(g[0]))),
            ('POST', RD + '/volume-definitions',
             lambda g, q, b: (201, defs.create_vd(g[0], b))),
            ('GET', RD + r'/volume-definitions/(\d+)',
             lambda g, q, b: (200, defs.volume_definition(g[0], int(g[1])))),
            ('PUT', RD + r'/volume-definitions/(\d+)',
             lambda g, q, b: (200, defs.modify_vd(g[0], int(g[1]), b))),
            ('DELETE', RD + r'/volume-definitions/(\d+)',
             lambda g, q, b: (200, defs.delete_vd(g[0], int(g[1])))),
            ('POST', RD + '/autoplace',
             lambda g, q, b: (201, placement.autoplace(g[0], b))),
            ('GET', RD + '/resources', lambda g, q, b: (200, [
                self._strip(r) for r in rscs.resources_view(
                    _multi(q, 'nodes'), [g[0]])])),
            ('POST', RD + '/resources',
             lambda g, q, b: (201, rscs.create_resources(g[0], b))),
            ('GET', RD + '/resources/' + _SEG,
             lambda g, q, b: (200, self._strip(rscs.resource(g[0], g[1])))),
            ('GET', RD + '/resources/%s/volumes' % _SEG,
             lambda g, q, b: (200, rscs.resource(g[0], g[1])['volumes'])),
            ('GET', RD + r'/resources/%s/volumes/(\d+)' % _SEG,
             lambda g, q, b: (200, self._volume(g))),
            ('PUT', RD + '/resources/' + _SEG,
             lambda g, q, b: (200, rscs.modify_resource(g[0], g[1], b))),
            ('DELETE', RD + '/resources/' + _SEG,
             lambda g, q, b: (200, rscs.delete_resource(g[0], g[1]))),
            ('POST', RD + '/resources/%s/make-available' % _SEG,
             lambda g, q, b: (200, rscs.make_available(g[0], g[1], b))),
            ('PUT', RD + '/resources/%s/toggle-disk' % _SEG,
             lambda g, q, b: (200, rscs.toggle_disk(g[0], g[1], b))),
            ('GET', '/v1/view/resources', lambda g, q, b: (200, _page(
                rscs.resources_view(self._known_nodes(q),
                                    _multi(q, 'resources'),
                                    _multi(q, 'storage_pools')), q))),
            # snapshots
            ('GET', RD + '/snapshots',
             lambda g, q, b: (200, snaps.snapshots([defs.resource_definition(
                 g[0])['name']], _multi(q, 'nodes')))),
            ('POST', RD + '/snapshots',
             lambda g, q, b: (201, snaps.create_snapshot(g[0], b))),
            ('GET', RD + '/snapshots/' + _SEG,
             lambda g, q, b: (200, snaps.snapshot(g[0], g[1]))),
            ('DELETE', RD + '/snapshots/' + _SEG,
             lambda g, q, b: (200, snaps.delete_snapshot(g[0], g[1]))),
            ('GET', '/v1/view/snapshots', lambda g, q, b: (200, _page(
                snaps.snapshots(_multi(q, 'resources'), _multi(q, 'nodes')),
                q))),
            ('POST', '/v1/actions/snapshot/multi',
             lambda g, q, b: (201, snaps.create_multi_snapshot(b))),
            ('POST', RD + '/snapshot-restore-volume-definition/' + _SEG,
             lambda g, q, b: (200, snaps.restore_vds(g[0], g[1], b))),
            ('POST', RD + '/snapshot-restore-resource/' + _SEG,
             lambda g, q, b: (200, snaps.restore_resources(g[0], g[1], b))),
            ('POST', RD + '/snapshot-rollback/' + _SEG,
             lambda g, q, b: (200, snaps.rollback(g[0], g[1]))),
            ('POST', RD + '/clone', lambda g, q, b: self._clone(g[0], b)),
            ('GET', RD + '/clone/' + _SEG,
             lambda g, q, b: (200, snaps.clone_status(g[0], g[1]))),
            ('GET', RD + '/sync-status',
             lambda g, q, b: (200, snaps.sync_status(g[0]))),
            # what the stock client asks before it places volumes
            ('OPTIONS', '/v1/query-max-volume-size',
             lambda g, q, b: (200, placement.query_max_volume_size(b))),
            ('GET', RG + '/query-max-volume-size',
             lambda g, q, b: (200, placement.group_max_volume_size(g[0]))),
            # error reports
            ('GET', '/v1/error-reports',
             lambda g, q, b: (200, self._error_reports(q))),
            ('GET', '/v1/error-reports/' + _SEG,
             lambda g, q, b: (200, self._error_reports(q, [g[0]]))),
            ('PATCH', '/v1/error-reports',
             lambda g, q, b: (200, self._delete_reports(b))),
        ]
        self._compiled = [(method, re.compile('^%s$' % pattern), handler)
                          for method, pattern, handler in self.routes]

    @staticmethod
    def _strip(view):
        view = dict(view)
        view.pop('volumes', None)
        return view

    def _volume(self, groups):
        rsc = self.backend.resources.resource(groups[0], groups[1])
        for volume in rsc['volumes']:
            if volume['volume_number'] == int(groups[2]):
                return volume
        raise outcomes.not_found('vlm', 'Volume %s of %s on %s' % (
            groups[2], groups[0], groups[1]))

    def _known_nodes(self, query, cached=False):
        """The nodes a view of resources or storage pools is filtered by
        (see ``Nodes.known``); a storage-pool view from the cache
        (``cached=true``) asks no node, and filters quietly.
        """
        names = _multi(query, 'nodes')
        return names if cached else self.backend.nodes.known(names)

    def _definitions(self, query):
        """``GET /v1/resource-definitions``: only the page is read, and
        a page of all is sent as the store holds it, neither decoded nor
        encoded again.
        """
        offset, limit = _window(query)
        names = _multi(query, 'resource_definitions')
        with_vds = _flag(query, 'with_volume_definitions')
        if names:
            return self.backend.definitions.resource_definitions(
                names, with_vds, offset, limit)
        return httpd.JSONText(self.backend.definitions.page_text(
            with_vds, offset, limit))

    def _error_reports(self, query, ids=()):
        params = dict(query)
        try:
            since = params.get('since')
            to = params.get('to')
            since = None if since in (None, '') else int(since)
            to = None if to in (None, '') else int(to)
        except ValueError:
            raise wire.invalid('since and to are Unix times in ms')
        return _page(self.reports.listing(
            node=params.get('node'), since=since, to=to,
            with_content=_flag(query, 'withContent'), limit=0, ids=ids),
            query)

    def _delete_reports(self, body):
        ids = body.get('ids') or []
        if not isinstance(ids, list):
            raise wire.invalid('ids must be a list')
        gone = self.reports.delete([str(i) for i in ids])
        return [wire.rc('ok', wire.DELETED, 'Deleted %d error report(s)' %
                        len(gone))]

    def failure(self, exc):
        """``failure(exc)`` with an error report filed.

        LINSTOR files one for a refusal it does not count as routine.
        """
        refused = failure(exc)
        if exc.reason not in reports_mod.ROUTINE and not isinstance(
                exc, errors.NotFound):
            self.reports.file(refused.payload[0], type(exc).__name__)
        return refused

    def _clone(self, name, body):
        try:
            return 201, self.backend.snapshots.clone(name, body)
        except errors.ArrayError as refusal:
            # A refused clone still answers the CloneStarted shape.
            e = self.failure(refusal)
            return e.status, {'location': '', 'source_name': name,
                              'clone_name': str(body.get('name') or body.get(
                                  'external_name') or ''),
                              'messages': e.payload}

    def _adjust(self, rg_name, body):
        entries = []
        for name in self.backend.definitions.in_group(rg_name):
            entries += self.backend.placement.autoplace(name, body)
        return entries

    def refusal(self, exc):
        """(status, ApiCallRc list) of a core.errors refusal."""
        refused = self.failure(exc)
        return refused.status, refused.payload

    def _unreadable(self, details):
        refused = wire.unreadable(details)
        self.reports.file(refused.payload[0], 'JsonParseException')
        return refused

    @staticmethod
    def busy_reply():
        """What the controller answers when it cannot take a call now."""
        return 503, [wire.rc('error', 998, 'The controller is busy; try '
                             'again.')]

    @staticmethod
    def error_payload(status, message):
        code = 998 if status >= 500 else wire.INVLD_REQUEST
        return [wire.rc('error', code, message)]

    @staticmethod
    def parse_body(raw):
        """The body, or an ``Unreadable``.

        ``route`` refuses an ``Unreadable`` only for calls that read a
        body: LINSTOR ignores the body of a GET.
        """
        if not raw.strip():
            return None
        try:
            return httpd.decode_json(raw)
        except ValueError as e:
            return Unreadable(str(e))

    def route(self, method, path, query, body):
        path = path.rstrip('/') or '/'
        if method in ('GET', 'DELETE'):
            body = None
        elif isinstance(body, Unreadable):
            raise self._unreadable(body.details)
        if method in ('POST', 'PUT', 'PATCH', 'OPTIONS') and body is None:
            body = {}
        if method in ('POST', 'PUT', 'PATCH', 'OPTIONS') and \
                not isinstance(body, (dict, list)):
            raise httpd.HTTPError(400, [wire.rc(
                'error', wire.INVLD_REQUEST, 'The body must be a JSON '
                'object.')])
        allowed = False
        for verb, pattern, handler in self._compiled:
            match = pattern.match(path)
            if match is None:
                continue
            allowed = True
            if verb == method:
                if isinstance(body, list) and not path.endswith(
                        '/resources'):
                    raise httpd.HTTPError(400, [wire.rc(
                        'error', wire.INVLD_REQUEST, 'The body must be a '
                        'JSON object.')])
                try:
                    status, payload = handler(match.groups(), query, body)
                except errors.ArrayError as exc:
                    raise self.failure(exc)
                payload = _entries(payload)
                if _failed(payload):
                    # Steps that failed after others took effect: LINSTOR
                    # answers 500 with every entry.
                    status = 500
                return status, payload
        if allowed:
            raise httpd.HTTPError(405, [wire.rc(
                'error', wire.INVLD_REQUEST, 'Method %s not allowed on %s' %
                (method, path))])
        raise httpd.HTTPError(404, [wire.rc(
            'error', wire.INVLD_REQUEST, 'No such path: %s' % path)])
