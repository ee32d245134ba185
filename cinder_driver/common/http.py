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

"""HTTP transport shared by the REST clients of every backend family.

One place decides timeouts, TLS verification, retries and what reaches
the log, so the K2 and LINSTOR clients only describe their endpoints.
"""

import json
import ssl
import time

from oslo_log import log as logging
from oslo_utils import strutils
import requests
from requests import adapters
from urllib3 import exceptions as urllib3_exceptions

from cinder_driver.common import exception

LOG = logging.getLogger(__name__)

MAX_BACKOFF = 30.0
# A retried POST could create an object twice; only these are replayed
# after an ambiguous failure (read timeout, 500/502/504).
IDEMPOTENT_METHODS = frozenset(('GET', 'HEAD', 'PUT', 'DELETE', 'PATCH'))
# 503 means the request was not executed, so it is safe for every method.
NOT_EXECUTED_STATUSES = frozenset((503,))
AMBIGUOUS_STATUSES = frozenset((500, 502, 504))
SNIPPET = 160


def _snippet(text):
    text = ' '.join(str(text).split())
    text = strutils.mask_password(text)
    return text if len(text) <= SNIPPET else text[:SNIPPET] + '...'


def _inner(error, kind, depth=0):
    """The error of class ``kind`` under requests' and urllib3's wrappers
    (an argument, a ``reason`` or a cause), or None.
    """
    if isinstance(error, kind):
        return error
    if depth > 4 or not isinstance(error, BaseException):
        return None
    inner = [arg for arg in error.args if isinstance(arg, BaseException)]
    inner += [getattr(error, 'reason', None), error.__cause__]
    for each in inner:
        found = _inner(each, kind, depth + 1) if each else None
        if found is not None:
            return found
    return None


def _raised_in(error, function):
    """Whether ``function`` is on the traceback of ``error``."""
    frame = error.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code.co_name == function:
            return True
        frame = frame.tb_next
    return False


class RestSession(object):
    """A requests session bound to one array endpoint.

    :param busy: callable(status, payload) -> bool telling whether an
        error reply is the array's "busy, try again" answer.
    :param error_text: callable(payload) -> str extracting the array's
        own error message from an error reply.
    :param refused: callable(status, payload) -> bool telling whether an
        error reply is the array's verdict on the request itself (it
        refused it); such a reply is never retried.
    """

    def __init__(self, base_url, username=None, password=None, verify=True,
                 connect_timeout=10.0, read_timeout=60.0, retries=4,
                 backoff=1.0, array_name='array', client_cert=None,
                 busy=None, error_text=None, sleep=time.sleep,
                 pool_size=16, refused=None):
        self.base_url = base_url.rstrip('/')
        self.username = username
        self.verify = verify
        self.timeout = (connect_timeout, read_timeout)
        self.retries = retries
        self.backoff = backoff
        self.array_name = array_name
        self._busy = busy or (lambda status, payload: False)
        self._error_text = error_text or (lambda payload: None)
        self._refused = refused or (lambda status, payload: False)
        self._sleep = sleep
        self.session = requests.Session()
        if username is not None:
            self.session.auth = requests.auth.HTTPBasicAuth(username,
                                                            password or '')
        if client_cert:
            self.session.cert = client_cert
        self.session.verify = verify
        self.session.headers.update({'Accept': 'application/json',
                                     'Content-Type': 'application/json'})
        http = adapters.HTTPAdapter(pool_connections=1, pool_maxsize=pool_size,
                                    max_retries=0)
        self.session.mount('https://', http)
        self.session.mount('http://', http)

    def close(self):
        self.session.close()

    def _wait(self, attempt):
        delay = min(self.backoff * (2 ** attempt), MAX_BACKOFF)
        if delay:
            self._sleep(delay)

    def _fail(self, cls, method, path, **kw):
        return cls(array=self.array_name, method=method, path=path, **kw)

    def request(self, method, path, params=None, body=None,
                idempotent=None):
        """Send one call and return ``(status, payload)``.

        payload is the decoded JSON reply, or None for an empty body.
        Raises an ArrayAPIError subclass for anything but a 2xx reply.
        """
        method = method.upper()
        if idempotent is None:
            idempotent = method in IDEMPOTENT_METHODS
        url = self.base_url + path
        data = None if body is None else json.dumps(body)
        attempt = 0
        while True:
            started = time.monotonic()
            try:
                # verify is passed per request: requests lets
                # REQUESTS_CA_BUNDLE override a session-level setting.
                resp = self.session.request(method, url, params=params,
                                            data=data, timeout=self.timeout,
                                            verify=self.verify)
            except requests.exceptions.SSLError as e:
                cause = _inner(e, ssl.SSLError)
                if not (isinstance(cause, (ssl.SSLEOFError,
                                           ssl.SSLZeroReturnError)) and
                        _raised_in(cause, 'do_handshake')):
                    raise self._fail(exception.ArrayTLSError, method, path,
                                     reason=_snippet(e))
                # A hang-up before the handshake ended, not a refusal of
                # a certificate or protocol (an array at its connection
                # limit does that): no request was sent, so any call is
                # sent again, as over a connection never opened. (After
                # the handshake, TLS 1.3 reports a refused client
                # certificate as an EOF: that stays a refusal.)
                err = self._fail(exception.ArrayUnreachable, method, path,
                                 reason='the array closed the connection '
                                 'during the TLS handshake')
                retry = True
            except requests.exceptions.ConnectTimeout:
                err = self._fail(exception.ArrayTimeout, method, path,
                                 timeout=self.timeout[0])
                retry = True
            except requests.exceptions.ReadTimeout:
                err = self._fail(exception.ArrayTimeout, method, path,
                                 timeout=self.timeout[1])
                retry = idempotent
            except requests.exceptions.ConnectionError as e:
                # A refused or reset connection may or may not have
                # delivered the request; replay only what is idempotent
                # unless the connection was never opened.
                reason = _snippet(e)
                err = self._fail(exception.ArrayUnreachable, method, path,
                                 reason=reason)
                retry = idempotent or _inner(
                    e, urllib3_exceptions.NewConnectionError) is not None
            else:
                elapsed = time.monotonic() - started
                LOG.debug('%(array)s %(method)s %(path)s -> %(status)s '
                          'in %(ms).1f ms',
                          {'array': self.array_name, 'method': method,
                           'path': path, 'status': resp.status_code,
                           'ms': elapsed * 1000})
                payload = self._decode(method, path, resp)
                if resp.status_code < 400:
                    return resp.status_code, payload
                err = self._http_error(method, path, resp, payload)
                # The decoded error reply, for clients that read more
                # than its message.
                err.reply = payload
                retry = not self._refused(resp.status_code, payload) and (
                    resp.status_code in NOT_EXECUTED_STATUSES
                    or self._busy(resp.status_code, payload)
                    or (idempotent and
                        resp.status_code in AMBIGUOUS_STATUSES))
            if not retry or attempt >= self.retries:
                raise err
            LOG.warning('%(array)s %(method)s %(path)s: %(err)s; retry '
                        '%(n)d of %(max)d',
                        {'array': self.array_name, 'method': method,
                         'path': path, 'err': err.msg, 'n': attempt + 1,
                         'max': self.retries})
            self._wait(attempt)
            attempt += 1

    def _decode(self, method, path, resp):
        if not resp.content:
            return None
        ctype = resp.headers.get('Content-Type', '')
        try:
            return resp.json()
        except ValueError:
            if resp.status_code >= 400 and 'json' not in ctype:
                # An error page from a proxy or web server: keep its text
                # for the error message, it is not a protocol violation.
                return {'_text': _snippet(resp.text)}
            raise self._fail(exception.ArrayBadReply, method, path,
                             status_code=resp.status_code,
                             reason='not JSON: %s' % _snippet(resp.text),
                             status=resp.status_code)

    def _http_error(self, method, path, resp, payload):
        status = resp.status_code
        if status == 401:
            return self._fail(exception.ArrayAuthError, method, path,
                              user=self.username, status_code=status,
                              status=status)
        text = payload.get('_text') if isinstance(payload, dict) else None
        if text is None and payload is not None:
            text = self._error_text(payload)
        reason = 'HTTP %s %s' % (status, resp.reason or '')
        if text:
            reason += ': %s' % _snippet(text)
        return self._fail(exception.ArrayAPIError, method, path,
                          reason=reason.strip(), status=status,
                          error_code=text)
