"""The LINSTOR REST v1 dialect of the reference array.

Routes follow LINSTOR's OpenAPI spec, plus the single-object GETs the
controller serves beyond it. Bodies are read leniently, as the Java
controller does (numbers as strings, nulls for absent fields, no body).
"""

import json
import re

from reference_array.http import server as httpd
from reference_array.linstor import wire

REST_API_VERSION = '1.28.0'
VERSION = {'version': '1.28.0', 'git_hash': 'reference-array',
           'build_time': '2026-11-01T00:00:00+00:00',
           'rest_api_version': REST_API_VERSION}
_SEG = r'([^/]+)'
RD = '/v1/resource-definitions/' + _SEG
RG = '/v1/resource-groups/' + _SEG


def _multi(query, *names):
    values = []
    for key, value in query:
        if key in names and value:
            values += [v for v in value.split(',') if v]
    return values


def _flag(query, name):
    return any(k == name and v.lower() in ('true', '1', 'yes')
               for k, v in query)


def _page(items, query):
    params = dict(query)
    try:
        offset = int(params.get('offset') or 0)
        limit = int(params.get('limit') or 0)
    except ValueError:
        raise wire.invalid('limit and offset must be integers')
    items = items[offset:]
    return items[:limit] if limit > 0 else items


class LinstorAPI(object):

    users = None

    def __init__(self, model):
        self.model = model
        m = model
        # (method, pattern, handler(match, query, body) -> (status, body))
        self.routes = [
            ('GET', '/v1/controller/version', lambda g, q, b: (200, VERSION)),
            ('GET', '/v1/controller/properties',
             lambda g, q, b: (200, m.controller_props())),
            ('POST', '/v1/controller/properties',
             lambda g, q, b: (201, m.set_controller_props(b))),
            ('DELETE', '/v1/controller/properties/(.+)',
             lambda g, q, b: (200, m.delete_controller_prop(g[0]))),
            ('GET', '/v1/nodes', lambda g, q, b: (200, _page(
                m.nodes(_multi(q, 'nodes')), q))),
            ('GET', '/v1/nodes/' + _SEG, lambda g, q, b: (200, m.node(g[0]))),
            ('PUT', '/v1/nodes/%s/(evacuate|restore)' % _SEG,
             lambda g, q, b: (200, m.node_flag(g[0], g[1]))),
            ('GET', '/v1/view/storage-pools', lambda g, q, b: (200, _page(
                m.storage_pools(_multi(q, 'nodes'),
                                _multi(q, 'storage_pools')), q))),
            ('GET', '/v1/nodes/%s/storage-pools' % _SEG,
             lambda g, q, b: (200, m.storage_pools([m.node(g[0])['name']],
                                                   _multi(q,
                                                          'storage_pools')))),
            ('GET', '/v1/storage-pool-definitions',
             lambda g, q, b: (200, m.pool_definitions())),
            # resource groups
            ('GET', '/v1/resource-groups', lambda g, q, b: (200, _page(
                m.resource_groups(_multi(q, 'resource_groups')), q))),
            ('POST', '/v1/resource-groups',
             lambda g, q, b: (201, m.create_rg(b))),
            ('GET', RG, lambda g, q, b: (200, m.resource_group(g[0]))),
            ('PUT', RG, lambda g, q, b: (200, m.modify_rg(g[0], b))),
            ('DELETE', RG, lambda g, q, b: (200, m.delete_rg(g[0]))),
            ('GET', RG + '/volume-groups',
             lambda g, q, b: (200, m.volume_groups(g[0]))),
            ('POST', RG + '/volume-groups',
             lambda g, q, b: (201, m.create_vg(g[0], b))),
            ('POST', RG + '/spawn', lambda g, q, b: (201, m.spawn(g[0], b))),
            ('POST', RG + '/query-size-info',
             lambda g, q, b: (200, m.query_size_info(g[0], b))),
            ('POST', RG + '/adjust', lambda g, q, b: (200, self._adjust(
                g[0], b))),
            # resource definitions
            ('GET', '/v1/resource-definitions', lambda g, q, b: (
                200, _page(m.resource_definitions(
                    _multi(q, 'resource_definitions'),
                    _flag(q, 'with_volume_definitions')), q))),
            ('POST', '/v1/resource-definitions',
             lambda g, q, b: (201, m.create_rd(b))),
            ('GET', RD, lambda g, q, b: (200, m.resource_definition(g[0]))),
            ('PUT', RD, lambda g, q, b: (200, m.modify_rd(g[0], b))),
            ('DELETE', RD, lambda g, q, b: (200, m.delete_rd(g[0]))),
            ('GET', RD + '/volume-definitions',
             lambda g, q, b: (200, m.volume_definitions(g[0]))),
            ('POST', RD + '/volume-definitions',
             lambda g, q, b: (201, m.create_vd(g[0], b))),
            ('GET', RD + r'/volume-definitions/(\d+)',
             lambda g, q, b: (200, m.volume_definition(g[0], int(g[1])))),
            ('PUT', RD + r'/volume-definitions/(\d+)',
             lambda g, q, b: (200, m.modify_vd(g[0], int(g[1]), b))),
            ('DELETE', RD + r'/volume-definitions/(\d+)',
             lambda g, q, b: (200, m.delete_vd(g[0], int(g[1])))),
            ('POST', RD + '/autoplace',
             lambda g, q, b: (201, m.autoplace(g[0], b))),
            ('GET', RD + '/resources', lambda g, q, b: (200, [
                self._strip(r) for r in m.resources_view(
                    _multi(q, 'nodes'), [g[0]])])),
            ('POST', RD + '/resources',
             lambda g, q, b: (201, m.create_resources(g[0], b))),
            ('GET', RD + '/resources/' + _SEG,
             lambda g, q, b: (200, self._strip(m.resource(g[0], g[1])))),
            ('GET', RD + '/resources/%s/volumes' % _SEG,
             lambda g, q, b: (200, m.resource(g[0], g[1])['volumes'])),
            ('GET', RD + r'/resources/%s/volumes/(\d+)' % _SEG,
             lambda g, q, b: (200, self._volume(g))),
            ('PUT', RD + '/resources/' + _SEG,
             lambda g, q, b: (200, m.modify_resource(g[0], g[1], b))),
            ('DELETE', RD + '/resources/' + _SEG,
             lambda g, q, b: (200, m.delete_resource(g[0], g[1]))),
            ('POST', RD + '/resources/%s/make-available' % _SEG,
             lambda g, q, b: (200, m.make_available(g[0], g[1], b))),
            ('PUT', RD + '/resources/%s/toggle-disk' % _SEG,
             lambda g, q, b: (200, m.toggle_disk(g[0], g[1], b))),
            ('GET', '/v1/view/resources', lambda g, q, b: (200, _page(
                m.resources_view(_multi(q, 'nodes'),
                                 _multi(q, 'resources'),
                                 _multi(q, 'storage_pools')), q))),
            # snapshots
            ('GET', RD + '/snapshots',
             lambda g, q, b: (200, m.snapshots([m.resource_definition(
                 g[0])['name']], _multi(q, 'nodes')))),
            ('POST', RD + '/snapshots',
             lambda g, q, b: (201, m.create_snapshot(g[0], b))),
            ('GET', RD + '/snapshots/' + _SEG,
             lambda g, q, b: (200, m.snapshot(g[0], g[1]))),
            ('DELETE', RD + '/snapshots/' + _SEG,
             lambda g, q, b: (200, m.delete_snapshot(g[0], g[1]))),
            ('GET', '/v1/view/snapshots', lambda g, q, b: (200, _page(
                m.snapshots(_multi(q, 'resources'), _multi(q, 'nodes')),
                q))),
            ('POST', '/v1/actions/snapshot/multi',
             lambda g, q, b: (201, m.create_multi_snapshot(b))),
            ('POST', RD + '/snapshot-restore-volume-definition/' + _SEG,
             lambda g, q, b: (200, m.restore_vds(g[0], g[1], b))),
            ('POST', RD + '/snapshot-restore-resource/' + _SEG,
             lambda g, q, b: (200, m.restore_resources(g[0], g[1], b))),
            ('POST', RD + '/snapshot-rollback/' + _SEG,
             lambda g, q, b: (200, m.rollback(g[0], g[1]))),
            ('POST', RD + '/clone', lambda g, q, b: self._clone(g[0], b)),
            ('GET', RD + '/clone/' + _SEG,
             lambda g, q, b: (200, m.clone_status(g[0], g[1]))),
            ('GET', RD + '/sync-status',
             lambda g, q, b: (200, m.sync_status(g[0]))),
        ]
        self._compiled = [(method, re.compile('^%s$' % pattern), handler)
                          for method, pattern, handler in self.routes]

    @staticmethod
    def _strip(view):
        view = dict(view)
        view.pop('volumes', None)
        return view

    def _volume(self, groups):
        for volume in self.model.resource(groups[0], groups[1])['volumes']:
            if volume['volume_number'] == int(groups[2]):
                return volume
        raise wire.not_found('vlm', 'Volume %s of %s on %s' % (
            groups[2], groups[0], groups[1]))

    def _clone(self, name, body):
        try:
            return 201, self.model.clone(name, body)
        except httpd.HTTPError as e:
            # A refused clone still answers the CloneStarted shape.
            return e.status, {'location': '', 'source_name': name,
                              'clone_name': str(body.get('name') or body.get(
                                  'external_name') or ''),
                              'messages': e.payload}

    def _adjust(self, rg_name, body):
        entries = []
        for rd in self.model.resource_definitions():
            if rd['resource_group_name'].lower() == rg_name.lower():
                entries += self.model.autoplace(rd['name'], body)
        return entries

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
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise httpd.HTTPError(400, [wire.rc(
                'error', wire.INVLD_REQUEST, 'Invalid JSON: %s' % e)])

    def route(self, method, path, query, body):
        path = path.rstrip('/') or '/'
        if method in ('POST', 'PUT') and body is None:
            body = {}
        if method in ('POST', 'PUT') and not isinstance(body, (dict, list)):
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
                return handler(match.groups(), query, body)
        if allowed:
            raise httpd.HTTPError(405, [wire.rc(
                'error', wire.INVLD_REQUEST, 'Method %s not allowed on %s' %
                (method, path))])
        raise httpd.HTTPError(404, [wire.rc(
            'error', wire.INVLD_REQUEST, 'No such path: %s' % path)])
