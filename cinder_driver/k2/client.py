"""HTTP client of the K2 REST API v2: endpoints only, no Cinder logic."""

from cinder_driver.common import exception
from cinder_driver.common import http

API_PREFIX = '/api/v2'
# Transient states the array reports as HTTP 400 with these error_msg
# values; the request was not executed and may be sent again.
BUSY_CODES = frozenset(('MC_ERR_BUSY', 'MC_ERR_BUSY_SPECIFIC',
                        'MC_ERR_INPROGRESS', 'MC_ERR_START_TIMEOUT'))
DEFAULT_PORT = 443
MIN_API_VERSION = (2, 2, 0)


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


def is_busy_error(error):
    return _busy(error.status, {'error_msg': error.error_code})


def ref(resource, obj_id):
    return {'ref': '/%s/%s' % (resource, obj_id)}


def ref_id(value):
    """The integer id of a ``{"ref": "/x/N"}`` value."""
    try:
        return int(value['ref'].rsplit('/', 1)[1])
    except (TypeError, KeyError, ValueError, IndexError, AttributeError):
        raise ValueError('not a K2 reference: %r' % (value,))


class K2Client(object):

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
        self.http = http.RestSession(
            'https://%s%s' % (netloc, API_PREFIX), username=username,
            password=password, verify=verify,
            connect_timeout=connect_timeout, read_timeout=read_timeout,
            retries=retries, backoff=backoff, array_name='K2 %s' % netloc,
            busy=_busy, error_text=_error_text, **kwargs)

    def _bad(self, method, path, status, reason):
        return exception.ArrayBadReply(
            array=self.http.array_name, method=method, path=path,
            status_code=status, reason=reason, status=status)

    def _discovery(self):
        status, payload = self.http.request('GET', '')
        if not isinstance(payload, dict) or not isinstance(
                payload.get('resources'), dict):
            raise self._bad('GET', API_PREFIX, status,
                            'no "resources" map in the discovery reply')
        return payload

    def discover(self):
        return self._discovery()['resources']

    def discover_capabilities(self):
        """Optional array features announced in discovery ({} if none)."""
        capabilities = self._discovery().get('capabilities')
        return capabilities if isinstance(capabilities, dict) else {}

    def search(self, resource, **filters):
        """Objects of ``resource`` matching ``filters``, all pages."""
        path = '/%s' % resource
        hits, offset = [], 0
        while True:
            params = dict(filters)
            params.setdefault('__limit', 500)
            if offset:
                params['__offset'] = offset
            status, payload = self.http.request('GET', path, params=params)
            page = payload.get('hits') if isinstance(payload, dict) else None
            total = payload.get('total') if isinstance(payload, dict) \
                else None
            if not isinstance(page, list) or not isinstance(total, int) or \
                    not all(isinstance(hit, dict) for hit in page):
                raise self._bad('GET', path, status,
                                'expected {"hits": [{...}], "total": N}')
            hits.extend(page)
            offset += len(page)
            if not page or offset >= total:
                return hits

    def find(self, resource, **filters):
        """The one object matching ``filters``, or None."""
        hits = self.search(resource, **filters)
        return hits[0] if hits else None

    def get(self, resource, obj_id):
        path = '/%s/%s' % (resource, obj_id)
        status, payload = self.http.request('GET', path)
        return self._object('GET', path, status, payload)

    def _object(self, method, path, status, payload):
        if not isinstance(payload, dict) or not isinstance(
                payload.get('id'), int):
            raise self._bad(method, path, status,
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
        it), and used if it exists.
        """
        try:
            return self.create(resource, body)
        except exception.ArrayAPIError as e:
            if not _ambiguous(e):
                raise
            for attempt in (0, 1):
                if attempt:
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

    def create_or_get(self, resource, body, **key):
        """(object, created): an existing object with ``key`` is used."""
        try:
            return self.create_unique(resource, body, **key), True
        except exception.ArrayAPIError as e:
            if e.status != 400 or is_busy_error(e):
                raise
            found = self.find(resource, **key)
            if found is None:
                raise
            return found, False

    def update(self, resource, obj_id, body):
        path = '/%s/%s' % (resource, obj_id)
        status, payload = self.http.request('PATCH', path, body=body)
        return self._object('PATCH', path, status, payload)

    def delete(self, resource, obj_id):
        """Delete; returns False when the object was already gone."""
        path = '/%s/%s' % (resource, obj_id)
        try:
            self.http.request('DELETE', path)
        except exception.ArrayAPIError as e:
            if e.status == 404:
                return False
            raise
        return True

    def iscsi_addresses(self):
        """The array's iSCSI data addresses (replication ports excluded)."""
        return [ip['ip_address'] for ip in self.search('system/net_ips')
                if ip.get('ip_address') and not ip.get('wan_port')]

    def system_state(self):
        state = self.find('system/state')
        if state is None:
            raise self._bad('GET', '/system/state', 200, 'no system state')
        return state
