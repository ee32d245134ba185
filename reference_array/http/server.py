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

"""A small threaded JSON-over-HTTP(S) server with Basic auth.

Each REST dialect supplies an api object; this module handles sockets,
TLS, auth, content types, fault injection and errors the same way for
every dialect. The api object has:

``users``                  {user: password} for Basic auth, or None
``route(method, path, query, body)``  -> (status, payload); may raise
                           HTTPError; a ``JSONText`` payload is sent as
                           it is
``parse_body(raw)``        the decoded request body (``decode_json``
                           does the JSON)
``error_payload(status, message)``    the dialect's error body
``refusal(exc)``           (status, payload) of a ``core.errors`` refusal
``busy_reply()``           (status, payload) the dialect answers when busy
"""

import base64
import hmac
import http.server
import json
import logging
import os
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse

from reference_array.core import errors
from reference_array.http import faults as faults_mod
from reference_array.http import framing
from reference_array.http import slots as slots_mod

LOG = logging.getLogger(__name__)
ADMIN_FAULTS = '/_admin/faults'
MAX_BODY = 16 * 1024 * 1024
# Connections held open at once (one thread each); more wait in the
# listen queue, so no client can make the array start unbounded threads.
# It is far above what the clients of a cloud keep in their pools (the
# drivers keep up to 16 per backend and array), so their idle
# connections are never closed for room: a newcomer that finds every
# slot taken closes a connection that waits for its next request, if
# one may be closed (see slots.Slots), and else waits this long for a slot
# before it is closed itself.
MAX_CONNECTIONS = 128
SLOT_WAIT = 2.0
# Requests served at once, from the moment their headers are in: this,
# not the connections, bounds the array's work and the bodies it holds
# in memory. A request that finds none free waits this long, then is
# answered busy (the clients send it again).
MAX_REQUESTS = 32
REQUEST_WAIT = 10.0
# JSON nested deeper than any request of either dialect is refused.
MAX_DEPTH = 32
# A request log is rotated at this size (one older file is kept).
REQUEST_LOG_BYTES = 16 * 1024 * 1024
# A connection that says nothing for this long is closed, so no client
# can hold a handler thread (or the TLS handshake) forever.
IDLE_TIMEOUT = 30.0


def _no_constant(name):
    raise ValueError('%s is not JSON' % name)


def _depth(value, limit):
    """Refuse nesting deeper than ``limit`` (iteratively: no recursion)."""
    todo = [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, (dict, list)):
            if level > limit:
                raise ValueError('nested deeper than %d levels' % limit)
            todo.extend((v, level + 1) for v in (
                item.values() if isinstance(item, dict) else item))


def decode_json(raw):
    """A request body as JSON: strict (no NaN or Infinity) and of bounded
    depth; anything else raises ValueError naming the fault.
    """
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError('nested deeper than %d levels' %
                         MAX_DEPTH) from None
    _depth(value, MAX_DEPTH)
    return value


class JSONText(object):
    """A reply body that is JSON text already (a page the store joined
    from texts it keeps): sent as it is, not decoded and encoded again.
    """

    def __init__(self, text):
        self.text = text


class HTTPError(Exception):

    def __init__(self, status, payload):
        super().__init__(status, payload)
        self.status = status
        self.payload = payload


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.slots = slots_mod.Slots(MAX_CONNECTIONS)
        self.serving = threading.BoundedSemaphore(MAX_REQUESTS)

    def process_request(self, request, client_address):
        # The slot is taken in the accept loop (further clients stay in
        # the kernel's listen queue, not in threads of ours).
        if not self.slots.take(SLOT_WAIT):
            LOG.warning('connection from %s closed: %d connections busy',
                        client_address[0], MAX_CONNECTIONS)
            self.shutdown_request(request)
            return
        self.slots.idle(request)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.end(request)
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.end(request)

    def handle_error(self, request, client_address):
        # Into the array's log, not stderr: a parent that does not read
        # stderr must never be able to stall a connection thread. A
        # peer that fails TLS or hangs up is one line, not a traceback.
        exc = sys.exc_info()[1]
        if isinstance(exc, (ssl.SSLError, OSError)):
            LOG.warning('connection from %s failed: %s',
                        client_address[0], exc)
            return
        LOG.exception('connection from %s failed', client_address[0])


def _make_handler(api, server):

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = 'HTTP/1.1'
        server_version = 'reference-array'
        sys_version = ''
        # Headers and body leave in one segment: separate small writes
        # on a keep-alive connection stall ~40 ms on delayed ACKs.
        wbufsize = 256 * 1024
        disable_nagle_algorithm = True
        timeout = IDLE_TIMEOUT

        def setup(self):
            super().setup()
            # The listening socket does not handshake in accept(): that
            # would run in the single accept loop, where one silent
            # client would stall every other client and shutdown.
            if isinstance(self.connection, ssl.SSLSocket):
                self.connection.do_handshake()

        def handle_one_request(self):
            # Until its headers are in, a request is awaited on a
            # connection a newcomer may close (slots.Slots).
            try:
                arrived = self.rfile.peek(1)
            except OSError:
                arrived = b''
            if not arrived or not self.server.slots.reading(
                    self.connection):
                self.close_connection = True
                return
            try:
                super().handle_one_request()
            finally:
                self.server.slots.idle(self.connection)

        def parse_request(self):
            # Its headers are read before the caller is known: within a
            # byte budget (431 beyond it), not 100 lines of 64 KiB each.
            real, self.rfile = self.rfile, framing.HeaderBudget(self.rfile)
            try:
                parsed = super().parse_request()
            finally:
                self.rfile = real
            if not parsed:
                return False
            if not self.server.slots.busy(self.connection):
                self.close_connection = True
                return False
            return True

        def handle_expect_100(self):
            # "100 Continue" invites the body: it is sent once the
            # request is authorized and has its turn (_handle), never
            # before.
            return True

        def handle(self):
            try:
                super().handle()
            except (ssl.SSLError, OSError) as e:
                LOG.debug('connection from %s closed: %s',
                          self.client_address[0], e)

        def log_message(self, fmt, *args):
            LOG.debug('%s %s', self.address_string(), fmt % args)

        def _send(self, status, payload, headers=()):
            if isinstance(payload, JSONText):
                body = payload.text.encode()
            else:
                body = b'' if payload is None else json.dumps(
                    payload).encode()
            self.send_response(status)
            for key, value in headers:
                self.send_header(key, value)
            if payload is not None:
                self.send_header('Content-Type', 'application/json')
            if self.close_connection:
                self.send_header('Connection', 'close')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            if body and self.command != 'HEAD':
                self.wfile.write(body)

        def _authorized(self):
            if api.users is None:
                return True
            header = self.headers.get('Authorization', '')
            if not header.startswith('Basic '):
                return False
            try:
                user, _sep, password = base64.b64decode(
                    header[6:], validate=True).decode().partition(':')
            except (ValueError, UnicodeDecodeError):
                return False
            expected = api.users.get(user)
            return expected is not None and hmac.compare_digest(
                expected.encode(), password.encode())

        def _fault(self, method, path):
            """Apply an injected fault.

            Returns the status sent (0: none), or None when the request
            goes on to the array.
            """
            rule = server.faults.pick(method, path)
            if rule is None:
                return None
            LOG.info('injecting %s on %s %s', rule.kind, method, path)
            if rule.kind == 'latency':
                time.sleep(rule.seconds)
                return None
            if rule.kind in ('drop', 'restart', 'peer_link'):
                self.close_connection = True
                self.connection.close()
                return 0
            if rule.kind == 'busy':
                status, payload = api.busy_reply()
                self._send(status, payload)
                return status
            self._send(rule.status, api.error_payload(rule.status,
                                                      'injected fault'))
            return rule.status

        def _admin(self, raw):
            if not server.admin:
                # Off unless the array was started with fault injection.
                return self._send(404, api.error_payload(
                    404, 'no such resource: %s' % ADMIN_FAULTS))
            try:
                if self.command == 'GET':
                    return self._send(200, server.faults.listing())
                if self.command == 'DELETE':
                    server.faults.clear()
                    return self._send(204, None)
                if self.command == 'POST':
                    server.faults.load(decode_json(raw or b'null'))
                    return self._send(201, server.faults.listing())
            except (ValueError, faults_mod.FaultError) as e:
                return self._send(400, api.error_payload(400, str(e)))
            self._send(405, api.error_payload(405, 'method not allowed'))

        def _handle(self):
            parsed = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qsl(parsed.query,
                                           keep_blank_values=True)
            # Headers only are read until the request is known to be
            # acceptable: a body is read after authentication, never
            # beyond MAX_BODY. A refused request's body stays unread, so
            # its connection is closed.
            try:
                length = framing.body_length(self.headers, MAX_BODY)
            except framing.Refused as e:
                self.close_connection = True
                return self._send(e.status, api.error_payload(e.status,
                                                              str(e)))
            if not self._authorized():
                # Closed after its answer: a caller without credentials
                # cannot queue requests it never reads the answers of.
                self.close_connection = True
                return self._send(401, api.error_payload(
                    401, 'authentication required'),
                    headers=[('WWW-Authenticate',
                              'Basic realm="reference-array"')])
            # The fault rules are set and cleared whatever the load (a
            # harness clears the latency it injected).
            if parsed.path == ADMIN_FAULTS:
                return self._serve(parsed, query, length)
            if not self.server.serving.acquire(timeout=REQUEST_WAIT):
                return self._busy(length)
            try:
                self._serve(parsed, query, length)
            finally:
                self.server.serving.release()

        def _continue(self):
            """The "100 Continue" a client that asked for it waits for
            before it sends the body.
            """
            if (self.headers.get('Expect', '').lower() == '100-continue'
                    and self.request_version >= 'HTTP/1.1'):
                self.send_response_only(100)
                self.end_headers()
                self.wfile.flush()

        def _busy(self, length):
            LOG.warning('request from %s answered busy: %d requests served',
                        self.client_address[0], MAX_REQUESTS)
            if (self.headers.get('Expect', '').lower() == '100-continue'
                    or length is None
                    or not framing.drain(self.rfile, length)):
                # Its body was not sent, is chunked, or did not come.
                self.close_connection = True
            self._send(*api.busy_reply())

        def _serve(self, parsed, query, length):
            self._continue()
            try:
                raw = framing.read_chunked(self.rfile, MAX_BODY) \
                    if length is None else self.rfile.read(length)
            except framing.Refused as e:
                self.close_connection = True
                return self._send(e.status, api.error_payload(e.status,
                                                              str(e)))
            if parsed.path == ADMIN_FAULTS:
                return self._admin(raw)
            if server.faults.down():
                self.close_connection = True
                self.connection.close()
                return
            injected = self._fault(self.command, parsed.path)
            if injected is not None:
                server.record(self.command, self.path, injected, 0.0)
                return
            started = time.monotonic()
            try:
                body = api.parse_body(raw)
                status, payload = api.route(self.command,
                                            urllib.parse.unquote(
                                                parsed.path),
                                            query, body)
            except HTTPError as e:
                status, payload = e.status, e.payload
            except errors.ArrayError as e:
                status, payload = api.refusal(e)
            except Exception:
                LOG.exception('%s %s failed', self.command, self.path)
                status, payload = 500, api.error_payload(
                    500, 'internal error')
            self._send(status, payload)
            server.record(self.command, self.path, status,
                          time.monotonic() - started)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle
        do_OPTIONS = _handle

    return Handler


class JSONServer(object):
    """Serve ``api`` on host:port in a background thread."""

    def __init__(self, api, host, port, certfile=None, keyfile=None,
                 request_log=None, faults=None, admin=False, client_ca=None):
        """``admin``: serve ``/_admin/faults`` (only on an authenticated
        api; the rules of ``faults`` apply in any case). ``client_ca``:
        accept only TLS clients whose certificate it signed.
        """
        if admin and api.users is None:
            raise ValueError('fault injection needs an authenticated port')
        self.api = api
        self.admin = admin
        self.faults = faults or faults_mod.Injector()
        self._log_lock = threading.Lock()
        self._log_path = request_log
        self._log = open(request_log, 'a', buffering=1) \
            if request_log else None
        self.httpd = _Server((host, port), _make_handler(api, self))
        if certfile:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(certfile, keyfile)
            if client_ca:
                ctx.verify_mode = ssl.CERT_REQUIRED
                ctx.load_verify_locations(client_ca)
            self.httpd.socket = ctx.wrap_socket(
                self.httpd.socket, server_side=True,
                do_handshake_on_connect=False)
        self.scheme = 'https' if certfile else 'http'
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={'poll_interval': 0.2},
                                       daemon=True)

    def record(self, method, path, status, elapsed):
        """One line per request: the round trips clients made."""
        if self._log is None:
            return
        with self._log_lock:
            if self._log is None:
                return
            if self._log.tell() >= REQUEST_LOG_BYTES:
                self._log.close()
                os.replace(self._log_path, self._log_path + '.1')
                self._log = open(self._log_path, 'a', buffering=1)
            self._log.write('%s %s %d %.1f\n' % (
                method, path, status, elapsed * 1000))

    @property
    def address(self):
        host, port = self.httpd.server_address[:2]
        return host, port

    @property
    def url(self):
        host, port = self.address
        return '%s://%s:%s' % (self.scheme, host, port)

    def start(self):
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)
        if self._log is not None:
            with self._log_lock:
                self._log.close()
                self._log = None
