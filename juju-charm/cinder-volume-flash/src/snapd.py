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

"""A small client of snapd's REST API (``/run/snapd.socket``).

``snap set`` and ``snap get`` are clients of the same endpoints. The
charm talks to snapd itself so that the array's credentials travel in a
request body over a root-only socket and never appear in a process's
argument list, where any user of the machine could read them.
"""

import http.client
import json
import socket
import time
import urllib.parse

SOCKET = '/run/snapd.socket'
TIMEOUT = 30
# A configure hook renders the snap's files and restarts cinder-volume.
CHANGE_TIMEOUT = 300
POLL_SECONDS = 0.5
# Bigger replies than this are not snapd's.
MAX_REPLY = 4 * 1024 * 1024


class SnapdError(Exception):
    """snapd refused or failed; ``kind`` is snapd's error kind.

    ``transient``: worth trying again later (snapd unreachable or busy,
    another change holding the snap, a change still running).
    """

    def __init__(self, message, kind=None, status=None, transient=False):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.transient = transient or kind == 'snap-change-conflict' or (
            status is not None and status >= 500)


class _Connection(http.client.HTTPConnection):

    def __init__(self, path, timeout):
        super().__init__('localhost', timeout=timeout)
        self._path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class Client(object):

    def __init__(self, path=None, timeout=TIMEOUT):
        self.path = path or SOCKET
        self.timeout = timeout

    def _request(self, method, url, body=None):
        conn = _Connection(self.path, self.timeout)
        try:
            headers = {}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers['Content-Type'] = 'application/json'
            conn.request(method, url, body=data, headers=headers)
            reply = conn.getresponse()
            raw = reply.read(MAX_REPLY + 1)
        except (OSError, http.client.HTTPException) as e:
            raise SnapdError('snapd is not reachable at %s: %s' % (
                self.path, e), transient=True)
        finally:
            conn.close()
        if len(raw) > MAX_REPLY:
            raise SnapdError('snapd sent more than %d bytes for %s %s' % (
                MAX_REPLY, method, url), status=reply.status)
        try:
            doc = json.loads(raw)
            kind = doc['type']
        except (ValueError, TypeError, KeyError):
            raise SnapdError('snapd answered %s %s with something that is '
                             'not its JSON (HTTP %d)' % (method, url,
                                                         reply.status),
                             status=reply.status)
        if kind == 'error':
            result = doc.get('result') or {}
            raise SnapdError(str(result.get('message') or 'error'),
                             kind=result.get('kind'), status=reply.status)
        return doc

    def snap_apps(self, snap):
        """Names of the snap's apps; SnapdError(kind snap-not-found)."""
        doc = self._request('GET', '/v2/snaps/%s' % _quote(snap))
        result = doc.get('result')
        if not isinstance(result, dict):
            raise SnapdError('snapd sent no snap description')
        return sorted(app.get('name') for app in result.get('apps') or []
                      if isinstance(app, dict) and app.get('name'))

    def get(self, snap, key):
        """The value under ``key`` (a dict for a namespace), or None."""
        try:
            doc = self._request('GET', '/v2/snaps/%s/conf?keys=%s' % (
                _quote(snap), _quote(key)))
        except SnapdError as e:
            if e.kind == 'option-not-found':
                return None
            raise
        result = doc.get('result')
        if not isinstance(result, dict):
            raise SnapdError('snapd sent no configuration for %s' % key)
        return result.get(key)

    def set(self, snap, values):
        """``snap set``: dotted keys to values; None unsets a key.

        Waits for the change, which runs the snap's configure hook, and
        raises SnapdError with the hook's error if it failed.
        """
        doc = self._request('PUT', '/v2/snaps/%s/conf' % _quote(snap),
                            values)
        change = doc.get('change')
        if doc.get('type') != 'async' or not change:
            raise SnapdError('snapd did not start a change for the '
                             'configuration of %s' % snap)
        self.wait(change)

    def wait(self, change, timeout=CHANGE_TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            doc = self._request('GET', '/v2/changes/%s' % _quote(change))
            result = doc.get('result') or {}
            if result.get('ready'):
                if result.get('status') != 'Done':
                    raise SnapdError('change %s failed: %s' % (
                        change, result.get('err') or result.get('status')),
                        kind='change-failed')
                return
            if time.monotonic() > deadline:
                raise SnapdError('change %s is still %s after %ds' % (
                    change, result.get('status'), timeout), transient=True)
            time.sleep(POLL_SECONDS)


def _quote(text):
    return urllib.parse.quote(str(text), safe='')
