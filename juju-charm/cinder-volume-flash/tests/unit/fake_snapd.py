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

"""snapd's REST API on a Unix socket, as far as the charm uses it.

A real HTTP server on a real socket: the charm's client sends the same
bytes it would send to /run/snapd.socket. Configuration keys behave as
snapd's do (dotted paths into nested maps, null unsets), a PUT starts an
asynchronous change that is "Doing" once before it is ready, and every
request is recorded for the tests.
"""

import http.server
import json
import os
import socketserver
import tempfile
import threading
import urllib.parse


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class FakeSnapd(object):

    def __init__(self):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, 'snapd.socket')
        self.snaps = {}
        self.requests = []
        self.changes = {}
        # Set to make the next PUT fail like a configure hook, or to
        # answer every PUT with a change conflict.
        self.hook_error = None
        self.conflict = False
        self._lock = threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):

            def log_message(self, *args):
                pass

            def _reply(self, status, doc):
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self):
                length = int(self.headers.get('Content-Length') or 0)
                body = json.loads(self.rfile.read(length)) if length \
                    else None
                with fake._lock:
                    fake.requests.append((self.command, self.path, body))
                    status, doc = fake.answer(self.command, self.path, body)
                self._reply(status, doc)

            do_GET = do_PUT = _handle

        self._server = _Server(self.path, Handler)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        daemon=True)
        self._thread.start()

    def close(self):
        self._server.shutdown()
        self._server.server_close()
        os.unlink(self.path)
        os.rmdir(self.dir)

    def install(self, name, apps, conf=None):
        self.snaps[name] = {'apps': list(apps), 'conf': conf or {}}

    def conf(self, name):
        return self.snaps[name]['conf']

    def puts(self):
        return [body for method, _path, body in self.requests
                if method == 'PUT']

    # -- the API --------------------------------------------------------
    @staticmethod
    def _error(status, kind, message):
        return status, {'type': 'error', 'status-code': status,
                        'result': {'kind': kind, 'message': message}}

    @staticmethod
    def _sync(result):
        return 200, {'type': 'sync', 'status-code': 200, 'status': 'OK',
                     'result': result}

    def answer(self, method, path, body):
        url = urllib.parse.urlsplit(path)
        parts = [urllib.parse.unquote(p) for p in url.path.split('/')[1:]]
        if parts[:2] == ['v2', 'changes'] and len(parts) == 3:
            return self._change(parts[2])
        if parts[:2] != ['v2', 'snaps'] or len(parts) not in (3, 4):
            return self._error(404, None, 'not found')
        snap = self.snaps.get(parts[2])
        if snap is None:
            return self._error(404, 'snap-not-found',
                               'snap "%s" is not installed' % parts[2])
        if len(parts) == 3:
            return self._sync({'name': parts[2], 'apps': [
                {'snap': parts[2], 'name': app} for app in snap['apps']]})
        if method == 'GET':
            keys = urllib.parse.parse_qs(url.query).get('keys', [''])[0]
            result = {}
            for key in keys.split(','):
                value = _lookup(snap['conf'], key)
                if value is None:
                    return self._error(400, 'option-not-found',
                                       'snap "%s" has no "%s" configuration '
                                       'option' % (parts[2], key))
                result[key] = value
            return self._sync(result)
        if self.conflict:
            return self._error(409, 'snap-change-conflict',
                               'snap "%s" has "refresh-snap" change in '
                               'progress' % parts[2])
        change = str(len(self.changes) + 1)
        if self.hook_error:
            self.changes[change] = ['Doing', 'Error', self.hook_error]
            self.hook_error = None
        else:
            for key, value in body.items():
                _store(snap['conf'], key, value)
            self.changes[change] = ['Doing', 'Done', '']
        return 202, {'type': 'async', 'status-code': 202,
                     'status': 'Accepted', 'change': change}

    def _change(self, change):
        states = self.changes.get(change)
        if states is None:
            return self._error(404, None, 'no change %s' % change)
        status = states.pop(0) if len(states) > 2 else states[0]
        result = {'id': change, 'kind': 'configure-snap', 'status': status,
                  'ready': status in ('Done', 'Error')}
        if status == 'Error':
            result['err'] = states[1]
        return self._sync(result)


def _lookup(conf, key):
    node = conf
    for part in key.split('.'):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _store(conf, key, value):
    parts = key.split('.')
    node = conf
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    if value is None:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = value
