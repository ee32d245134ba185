"""HTTP client of the LINSTOR REST API v1: endpoints only, no Cinder logic.

Several controller URIs may be given; a call that cannot reach one
controller goes to the next, and the one that answered is used from then
on. Every mutation answers a list of ApiCallRc entries: an error entry
fails the call even when the HTTP status says success.
"""

import urllib.parse

from cinder_driver.common import exception
from cinder_driver.common import http

SCHEMES = {'linstor': ('http', 3370), 'linstor+ssl': ('https', 3371),
           'http': ('http', 3370), 'https': ('https', 3371)}
MIN_API_VERSION = (1, 10, 0)
MULTI_SNAPSHOT_VERSION = (1, 18, 0)
ERROR_BITS = 0xC000000000000000
CODE_BITS = 0x7FFF
# Code parts of LINSTOR ret_codes the driver branches on.
NOT_FOUND_CODES = frozenset(range(300, 400))
EXISTS_CODES = frozenset(range(500, 600))
WARN_NOT_FOUND = 3000


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


def api_version(text):
    parts = []
    for piece in str(text).split('.')[:3]:
        digits = ''.join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts + [0] * (3 - len(parts)))


def _unsigned(code):
    return code + (1 << 64) if code < 0 else code


def is_error(entry):
    return (_unsigned(int(entry.get('ret_code', 0))) & ERROR_BITS) \
        == ERROR_BITS


def code_of(entry):
    return _unsigned(int(entry.get('ret_code', 0))) & CODE_BITS


def _error_text(payload):
    entries = payload if isinstance(payload, list) else (
        payload.get('messages') if isinstance(payload, dict) else None)
    if not isinstance(entries, list):
        return None
    texts = [str(e.get('message')) for e in entries
             if isinstance(e, dict) and is_error(e)]
    return '; '.join(texts) or None


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
            **kwargs) for uri in uris]
        self.current = 0

    @property
    def name(self):
        return self.sessions[self.current].array_name

    def close(self):
        for session in self.sessions:
            session.close()

    def _request(self, method, path, params=None, body=None):
        """One call, trying each controller once when unreachable."""
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
        except exception.ArrayAPIError as e:
            if e.status == 404:
                return None
            raise

    def call(self, method, path, body=None, missing_ok=False):
        """A mutation; returns its ApiCallRc entries, all checked."""
        try:
            status, payload = self._request(method, path, body=body)
        except exception.ArrayAPIError as e:
            if missing_ok and e.status == 404:
                return []
            raise
        entries = payload.get('messages') if (
            isinstance(payload, dict) and 'messages' in payload) else payload
        if entries is None:
            entries = []
        if not isinstance(entries, list) or not all(
                isinstance(e, dict) and 'ret_code' in e for e in entries):
            raise self._bad(method, path, status, 'expected a list of '
                            'ApiCallRc entries')
        errors = [e for e in entries if is_error(e)]
        if errors:
            raise exception.ArrayAPIError(
                array=self.name, method=method, path=path,
                reason='; '.join(str(e.get('message')) for e in errors),
                status=status, error_code=code_of(errors[0]))
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

    def resource_group(self, name):
        return self.get_one('/v1/resource-groups/%s' % name)

    def create_resource_group(self, name, select_filter, props,
                              description):
        return self.call('POST', '/v1/resource-groups', {
            'name': name, 'description': description,
            'select_filter': select_filter, 'props': props})

    def modify_resource_group(self, name, select_filter, props,
                              delete_props):
        return self.call('PUT', '/v1/resource-groups/%s' % name, {
            'select_filter': select_filter, 'override_props': props,
            'delete_props': delete_props})

    def spawn(self, rg_name, rd_name, size_kib):
        return self.call('POST', '/v1/resource-groups/%s/spawn' % rg_name, {
            'resource_definition_name': rd_name, 'volume_sizes': [size_kib],
            'partial': False, 'definitions_only': False})

    def resource_definition(self, name):
        return self.get_one('/v1/resource-definitions/%s' % name)

    def create_resource_definition(self, name, rg_name):
        return self.call('POST', '/v1/resource-definitions', {
            'resource_definition': {'name': name,
                                    'resource_group_name': rg_name}})

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

    def modify_resource(self, name, node, props):
        return self.call('PUT', '/v1/resource-definitions/%s/resources/%s' % (
            name, node), {'override_props': props})

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
