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

"""HTTP client of the LINSTOR REST API v1: endpoints only, no Cinder logic.

Several controller URIs may be given; a call that cannot reach one
controller goes to the next, and the one that answered is used from then
on. Every mutation answers a list of ApiCallRc entries, refusals included
(usually as HTTP 500): an error entry fails the call whatever the HTTP
status says, and a refusal is never retried; only transport failures and
replies without a LINSTOR verdict are.
"""

import urllib.parse

from cinder_driver.common import exception
from cinder_driver.common import http
from cinder_driver.linstor import apicallrc

SCHEMES = {'linstor': ('http', 3370), 'linstor+ssl': ('https', 3371),
           'http': ('http', 3370), 'https': ('https', 3371)}
MIN_API_VERSION = (1, 10, 0)
MULTI_SNAPSHOT_VERSION = (1, 18, 0)


def base_url(uri):
    """``linstor://host`` -> ``http://host:3370`` (and the TLS forms)."""
    parsed = urllib.parse.urlsplit(uri.strip())
    if parsed.scheme not in SCHEMES or not parsed.hostname:
        raise exception.InvalidBackendConfig(
            option='linstor_uris', value=uri,
            reason='expected linstor://, linstor+ssl://, http:// or '
                   'https:// followed by a host')
    scheme, port = SCHEMES[parsed.scheme]
    host = parsed.hostname
    if ':' in host:
        host = '[%s]' % host
    try:
        port = parsed.port or port
    except ValueError:
        raise exception.InvalidBackendConfig(
            option='linstor_uris', value=uri, reason='bad port')
    return '%s://%s:%d' % (scheme, host, port)


def _error_text(payload):
    return apicallrc.text(apicallrc.errors(apicallrc.entries_of(payload)))


def _refused(status, payload):
    return bool(apicallrc.errors(apicallrc.entries_of(payload)))


class LinstorRefusal(exception.ArrayAPIError):
    """LINSTOR answered with error entries: it refused the request.

    ``entries`` holds the whole answer; ``error_code`` is the code part of
    the first error entry.
    """

    def __init__(self, message=None, entries=(), **kwargs):
        self.entries = list(entries)
        errors = apicallrc.errors(self.entries)
        kwargs.setdefault('error_code',
                          apicallrc.code(errors[0]) if errors else None)
        super().__init__(message, **kwargs)

    def _codes(self, obj=None):
        return {apicallrc.code(e) for e in apicallrc.errors(self.entries)
                if obj is None or apicallrc.obj(e) ==
                apicallrc.OBJECTS[obj]}

    def exists(self, obj=None):
        """Refused because an object (of that kind) already exists."""
        return any(c in apicallrc.EXISTS_RANGE for c in self._codes(obj))

    def not_found(self, obj=None):
        return any(c in apicallrc.NOT_FOUND_RANGE
                   for c in self._codes(obj))

    def has(self, code):
        return code in self._codes()


class LinstorClient(object):

    def __init__(self, uris, username=None, password=None, verify=True,
                 client_cert=None, connect_timeout=10.0, read_timeout=60.0,
                 retries=4, backoff=1.0, sleep=None):
        if not uris:
            raise exception.InvalidBackendConfig(
                option='linstor_uris', value=uris,
                reason='at least one controller URI is needed')
        kwargs = {'sleep': sleep} if sleep is not None else {}
        self.sessions = [http.RestSession(
            base_url(uri), username=username, password=password,
            verify=verify, client_cert=client_cert,
            connect_timeout=connect_timeout, read_timeout=read_timeout,
            retries=retries, backoff=backoff,
            array_name='LINSTOR %s' % base_url(uri), error_text=_error_text,
            refused=_refused, **kwargs) for uri in uris]
        self.current = 0

    @property
    def name(self):
        return self.sessions[self.current].array_name

    def close(self):
        for session in self.sessions:
            session.close()

    def _request(self, method, path, params=None, body=None):
        """One call, trying each controller once when unreachable.

        A LINSTOR refusal raises LinstorRefusal.
        """
        tried = 0
        while True:
            session = self.sessions[self.current]
            try:
                return session.request(method, path, params=params,
                                       body=body)
            except (exception.ArrayUnreachable, exception.ArrayTimeout):
                tried += 1
                if tried >= len(self.sessions):
                    raise
                self.current = (self.current + 1) % len(self.sessions)
            except exception.ArrayAPIError as e:
                entries = apicallrc.entries_of(getattr(e, 'reply', None))
                if not apicallrc.errors(entries):
                    raise
                raise self._refusal(method, path, e.status, entries)

    def _refusal(self, method, path, status, entries):
        return LinstorRefusal(
            array=self.name, method=method, path=path, entries=entries,
            status=status, reason='refused (HTTP %s): %s' % (
                status, apicallrc.text(apicallrc.errors(entries))))

    def _bad(self, method, path, status, reason):
        return exception.ArrayBadReply(array=self.name, method=method,
                                       path=path, status_code=status,
                                       reason=reason, status=status)

    def get(self, path, params=None, expect=list):
        status, payload = self._request('GET', path, params=params)
        if not isinstance(payload, expect):
            raise self._bad('GET', path, status, 'expected a JSON %s' % (
                'list' if expect is list else 'object'))
        if expect is list and not all(isinstance(i, dict) for i in payload):
            raise self._bad('GET', path, status, 'a list entry is not an '
                            'object')
        return payload

    def get_one(self, path):
        """The object at ``path``, or None when LINSTOR says not found."""
        try:
            return self.get(path, expect=dict)
        except LinstorRefusal as e:
            if e.status == 404 or e.not_found():
                return None
            raise
        except exception.ArrayAPIError as e:
            if e.status == 404:
                return None
            raise

    def call(self, method, path, body=None, missing_ok=False):
        """A mutation; returns its ApiCallRc entries, all checked.

        A clone answers an object that holds the entries; it is returned
        whole. ``missing_ok``: a not-found refusal is an empty answer.
        """
        try:
            status, payload = self._request(method, path, body=body)
        except LinstorRefusal as e:
            if missing_ok and e.not_found():
                return []
            raise
        except exception.ArrayAPIError as e:
            if missing_ok and e.status == 404:
                return []
            raise
        entries = payload.get('messages') if (
            isinstance(payload, dict) and 'messages' in payload) else payload
        if entries is None:
            entries = []
        if not isinstance(entries, list) or not all(
                apicallrc.is_entry(e) for e in entries):
            raise self._bad(method, path, status, 'expected a list of '
                            'ApiCallRc entries')
        if apicallrc.errors(entries):
            raise self._refusal(method, path, status, entries)
        return payload if isinstance(payload, dict) else entries

    # -- endpoints ------------------------------------------------------------
    def version(self):
        payload = self.get('/v1/controller/version', expect=dict)
        if 'rest_api_version' not in payload:
            raise self._bad('GET', '/v1/controller/version', 200,
                            'no rest_api_version')
        return payload

    def nodes(self, names=None):
        return self.get('/v1/nodes', params={'nodes': names} if names
                        else None)

    def storage_pools(self):
        return self.get('/v1/view/storage-pools')

    def resources(self, rd_names=None, nodes=None):
        params = {}
        if rd_names:
            params['resources'] = list(rd_names)
        if nodes:
            params['nodes'] = list(nodes)
        return self.get('/v1/view/resources', params=params or None)

    def resource_groups(self):
        return self.get('/v1/resource-groups')

    def resource_group(self, name):
        return self.get_one('/v1/resource-groups/%s' % name)

    def create_resource_group(self, name, select_filter, description):
        # LINSTOR ignores properties in a create: they need a modify.
        return self.call('POST', '/v1/resource-groups', {
            'name': name, 'description': description,
            'select_filter': select_filter})

    def modify_resource_group(self, name, select_filter, props,
                              delete_props):
        body = {'override_props': props, 'delete_props': delete_props}
        if select_filter:
            body['select_filter'] = select_filter
        return self.call('PUT', '/v1/resource-groups/%s' % name, body)

    def delete_resource_group(self, name):
        return self.call('DELETE', '/v1/resource-groups/%s' % name,
                         missing_ok=True)

    def spawn(self, rg_name, rd_name, size_kib):
        return self.call('POST', '/v1/resource-groups/%s/spawn' % rg_name, {
            'resource_definition_name': rd_name, 'volume_sizes': [size_kib],
            'partial': False, 'definitions_only': False})

    def resource_definition(self, name):
        """One definition, without its volume definitions."""
        return self.get_one('/v1/resource-definitions/%s' % name)

    def resource_definitions(self, with_volume_definitions=False):
        return self.get('/v1/resource-definitions', params={
            'with_volume_definitions': 'true'}
            if with_volume_definitions else None)

    def volume_definitions(self, name):
        return self.get('/v1/resource-definitions/%s/volume-definitions' %
                        name)

    def create_resource_definition(self, name, rg_name, props=None):
        spec = {'name': name, 'resource_group_name': rg_name}
        if props:
            spec['props'] = dict(props)
        return self.call('POST', '/v1/resource-definitions', {
            'resource_definition': spec})

    def modify_resource_definition(self, name, body):
        return self.call('PUT', '/v1/resource-definitions/%s' % name, body)

    def delete_resource_definition(self, name):
        return self.call('DELETE', '/v1/resource-definitions/%s' % name,
                         missing_ok=True)

    def resize(self, name, size_kib):
        return self.call('PUT', '/v1/resource-definitions/%s/'
                         'volume-definitions/0' % name,
                         {'size_kib': size_kib})

    def autoplace(self, name, select_filter):
        return self.call('POST', '/v1/resource-definitions/%s/autoplace' %
                         name, {'select_filter': select_filter})

    def make_available(self, name, node, diskful):
        return self.call('POST', '/v1/resource-definitions/%s/resources/%s/'
                         'make-available' % (name, node),
                         {'diskful': bool(diskful)})

    def resource(self, name, node):
        """The resource of a definition on a node, or None."""
        rows = [r for r in self.resources([name], [node])
                if str(r.get('node_name')).lower() == node.lower() and
                str(r.get('name')).lower() == name.lower()]
        return rows[0] if rows else None

    def modify_resource(self, name, node, props=None, delete_props=None):
        body = {'override_props': props or {}}
        if delete_props:
            body['delete_props'] = list(delete_props)
        return self.call('PUT', '/v1/resource-definitions/%s/resources/%s' % (
            name, node), body)

    def delete_resource(self, name, node):
        return self.call('DELETE', '/v1/resource-definitions/%s/resources/%s'
                         % (name, node), missing_ok=True)

    def create_snapshot(self, name, snapshot):
        return self.call('POST', '/v1/resource-definitions/%s/snapshots' %
                         name, {'name': snapshot})

    def create_snapshots(self, pairs):
        """One crash-consistent cut of several resources."""
        return self.call('POST', '/v1/actions/snapshot/multi', {
            'snapshots': [{'name': snap, 'resource_name': rd}
                          for rd, snap in pairs]})

    def snapshots(self, rd_names=None):
        return self.get('/v1/view/snapshots', params={
            'resources': list(rd_names)} if rd_names else None)

    def delete_snapshot(self, name, snapshot):
        return self.call('DELETE', '/v1/resource-definitions/%s/snapshots/%s'
                         % (name, snapshot), missing_ok=True)

    def restore(self, name, snapshot, target, nodes=None):
        """Volume definitions, then resources, into an empty definition."""
        self.call('POST', '/v1/resource-definitions/%s/snapshot-restore-'
                  'volume-definition/%s' % (name, snapshot),
                  {'to_resource': target})
        body = {'to_resource': target}
        if nodes:
            body['nodes'] = list(nodes)
        return self.call('POST', '/v1/resource-definitions/%s/snapshot-'
                         'restore-resource/%s' % (name, snapshot), body)

    def rollback(self, name, snapshot):
        return self.call('POST', '/v1/resource-definitions/%s/snapshot-'
                         'rollback/%s' % (name, snapshot), {})

    def clone(self, name, target, rg_name):
        reply = self.call('POST', '/v1/resource-definitions/%s/clone' % name,
                          {'name': target, 'resource_group': rg_name})
        if not isinstance(reply, dict) or 'clone_name' not in reply:
            raise self._bad('POST', '/v1/resource-definitions/%s/clone' %
                            name, 201, 'no clone_name in the reply')
        return reply

    def clone_status(self, name, target):
        payload = self.get('/v1/resource-definitions/%s/clone/%s' % (
            name, target), expect=dict)
        return payload.get('status')

    def query_size_info(self, rg_name):
        path = '/v1/resource-groups/%s/query-size-info' % rg_name
        status, payload = self._request('POST', path, body={})
        if not isinstance(payload, dict) or not isinstance(
                payload.get('space_info'), dict):
            raise self._bad('POST', path, status, 'no space_info')
        return payload['space_info']
