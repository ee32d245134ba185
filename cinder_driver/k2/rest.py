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

"""The K2 REST API v2 as resources: search, create, update, delete.

Private to :mod:`cinder_driver.k2.client`, which names the operations;
this module knows the wire: paths, ``{"ref": ...}`` values, query filters,
paging, busy codes, and which refusal means what.

K2 answers every refusal with HTTP 400 and free text, so the meaning comes
from the request: a refused create of a uniquely named object is
``ObjectExists``, a refused delete is ``ObjectBusy`` (mapped, has members),
and 404 is ``ObjectNotFound``. The array's "busy, try again" codes are
retried by the session and never become one of these.
"""

from cinder_driver.common import exception
from cinder_driver.common import http

API_PREFIX = '/api/v2'
# Transient states the array reports as HTTP 400 with these error_msg
# values; the request was not executed and may be sent again.
BUSY_CODES = frozenset(('MC_ERR_BUSY', 'MC_ERR_BUSY_SPECIFIC',
                        'MC_ERR_INPROGRESS', 'MC_ERR_START_TIMEOUT'))
DEFAULT_PORT = 443
PAGE = 500


def _error_text(payload):
    msg = payload.get('error_msg') if isinstance(payload, dict) else None
    return str(msg) if msg is not None else None


def _busy(status, payload):
    if status == 503:
        return True
    text = _error_text(payload)
    return bool(text) and text.split(':')[0].strip() in BUSY_CODES


def _ambiguous(error):
    """Whether a failed call may have been applied by the array."""
    if isinstance(error, (exception.ArrayTimeout,
                          exception.ArrayUnreachable)):
        return True
    return error.status in (500, 502, 504)


def _refused(error):
    """A clear, final refusal (not busy, not a transport failure)."""
    return error.status == 400 and not _busy(400, {
        'error_msg': error.error_code})


def ref(resource, obj_id):
    return {'ref': '/%s/%s' % (resource, obj_id)}


def ref_text(resource, obj_id):
    """The text of a reference, as query filters compare it."""
    return '/%s/%d' % (resource, obj_id)


def ref_id(value):
    """The integer id of a ``{"ref": "/x/N"}`` value."""
    try:
        return int(value['ref'].rsplit('/', 1)[1])
    except (TypeError, KeyError, ValueError, IndexError, AttributeError):
        raise ValueError('not a K2 reference: %r' % (value,))


class K2Rest(object):

    def __init__(self, host, username, password, port=None, verify=True,
                 connect_timeout=10.0, read_timeout=60.0, retries=4,
                 backoff=1.0, sleep=None):
        if not host:
            raise exception.InvalidBackendConfig(
                option='san_ip', value=host, reason='the K2 management '
                'address must be set')
        netloc = host if port is None else '%s:%s' % (host, port)
        if ':' in host and not host.startswith('[') and port is not None:
            netloc = '[%s]:%s' % (host, port)
        kwargs = {}
        if sleep is not None:
            kwargs['sleep'] = sleep
        self.address = netloc
        self.endpoint = (host, port or DEFAULT_PORT)
        self.http = http.RestSession(
            'https://%s%s' % (netloc, API_PREFIX), username=username,
            password=password, verify=verify,
            connect_timeout=connect_timeout, read_timeout=read_timeout,
            retries=retries, backoff=backoff, array_name='K2 %s' % netloc,
            busy=_busy, error_text=_error_text, **kwargs)

    @property
    def name(self):
        return self.http.array_name

    def bad(self, method, path, status, reason):
        return exception.ArrayBadReply(
            array=self.http.array_name, method=method, path=path,
            status_code=status, reason=reason, status=status)

    def _discovery(self):
        status, payload = self.http.request('GET', '')
        if not isinstance(payload, dict) or not isinstance(
                payload.get('resources'), dict):
            raise self.bad('GET', API_PREFIX, status,
                           'no "resources" map in the discovery reply')
        return payload

    def discover(self):
        return self._discovery()['resources']

    def discover_capabilities(self):
        """Optional array features announced in discovery ({} if none)."""
        capabilities = self._discovery().get('capabilities')
        return capabilities if isinstance(capabilities, dict) else {}

    def _page(self, path, params):
        """(hits, total) of one page, both checked."""
        status, payload = self.http.request('GET', path, params=params)
        page = payload.get('hits') if isinstance(payload, dict) else None
        total = payload.get('total') if isinstance(payload, dict) else None
        if not isinstance(page, list) or not isinstance(total, int) or \
                isinstance(total, bool) or total < 0 or \
                not all(isinstance(hit, dict) for hit in page):
            raise self.bad('GET', path, status,
                           'expected {"hits": [{...}], "total": N}')
        return page, total

    def search(self, resource, **filters):
        """Objects of ``resource`` matching ``filters``, all pages."""
        path = '/%s' % resource
        hits, offset = [], 0
        while True:
            params = dict(filters)
            params.setdefault('__limit', PAGE)
            if offset:
                params['__offset'] = offset
            page, total = self._page(path, params)
            hits.extend(page)
            offset += len(page)
            if not page or offset >= total:
                return hits

    def count(self, resource, **filters):
        """How many objects match ``filters`` (a page of one object)."""
        return self._page('/%s' % resource, dict(filters, __limit=1))[1]

    def find(self, resource, **filters):
        """The one object matching ``filters``, or None."""
        hits = self.search(resource, **filters)
        return hits[0] if hits else None

    def _call(self, method, path, body=None):
        try:
            return self.http.request(method, path, body=body)
        except exception.ArrayAPIError as e:
            if e.status == 404:
                raise exception.typed(exception.ObjectNotFound, e)
            raise

    def get(self, resource, obj_id):
        path = '/%s/%s' % (resource, obj_id)
        status, payload = self._call('GET', path)
        return self._object('GET', path, status, payload)

    def _object(self, method, path, status, payload):
        if not isinstance(payload, dict) or not isinstance(
                payload.get('id'), int) or isinstance(payload['id'], bool):
            raise self.bad(method, path, status,
                           'expected an object with an integer id')
        return payload

    def create(self, resource, body):
        path = '/%s' % resource
        status, payload = self.http.request('POST', path, body=body)
        return self._object('POST', path, status, payload)

    def create_unique(self, resource, body, **key):
        """Create an object that ``key`` identifies, surviving a lost answer.

        A POST is never replayed after an ambiguous failure (a timeout, a
        dropped connection, 500/502/504): the array may have applied it.
        Instead the object is looked up by its unique key, at once and
        once more after a read timeout (the array may still be working on
        it), and used if it exists. A clear refusal is ObjectExists.
        """
        path = '/%s' % resource
        try:
            status, payload = self.http.request('POST', path, body=body)
        except exception.ArrayAPIError as e:
            if _refused(e):
                raise exception.typed(exception.ObjectExists, e)
            if not _ambiguous(e):
                raise
            for attempt in (0, 1):
                if attempt:
                    # The session's sleep (tests replace it), for as long
                    # as one read may take.
                    self.http._sleep(self.http.timeout[1])
                try:
                    found = self.find(resource, **key)
                except exception.ArrayAPIError:
                    # The array does not answer lookups either: a second
                    # look would only stretch the time cinder-volume waits.
                    raise e
                if found is not None:
                    return found
            raise
        return self._object('POST', path, status, payload)

    def update(self, resource, obj_id, body):
        path = '/%s/%s' % (resource, obj_id)
        status, payload = self._call('PATCH', path, body=body)
        return self._object('PATCH', path, status, payload)

    def delete(self, resource, obj_id):
        """Delete; returns False when the object was already gone."""
        path = '/%s/%s' % (resource, obj_id)
        try:
            self.http.request('DELETE', path)
        except exception.ArrayAPIError as e:
            if e.status == 404:
                return False
            if _refused(e):
                raise exception.typed(exception.ObjectBusy, e)
            raise
        return True

    def system_state(self):
        state = self.find('system/state')
        if state is None:
            raise self.bad('GET', '/system/state', 200, 'no system state')
        return state

    def iscsi_addresses(self):
        """The array's iSCSI data addresses (replication ports excluded)."""
        return [ip['ip_address'] for ip in self.search('system/net_ips')
                if ip.get('ip_address') and not ip.get('wan_port')]
