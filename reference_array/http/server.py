"""A small threaded JSON-over-HTTP(S) server with Basic auth.

Each REST dialect supplies an api object; this module handles sockets,
TLS, auth, content types, fault injection and errors the same way for
every dialect. The api object has:

``users``                  {user: password} for Basic auth, or None
``route(method, path, query, body)``  -> (status, payload); may raise
                           HTTPError
``parse_body(raw)``        the decoded request body
``error_payload(status, message)``    the dialect's error body
``refusal(exc)``           (status, payload) of a ``core.errors`` refusal
``busy_reply()``           (status, payload) the dialect answers when busy
"""

import base64
import hmac
import http.server
import json
import logging
import socketserver
import ssl
import threading
import time
import urllib.parse

from reference_array.core import errors
from reference_array.http import faults as faults_mod

LOG = logging.getLogger(__name__)
ADMIN_FAULTS = '/_admin/faults'
MAX_BODY = 16 * 1024 * 1024
# A connection that says nothing for this long is closed, so no client
# can hold a handler thread (or the TLS handshake) forever.
IDLE_TIMEOUT = 30.0


class HTTPError(Exception):

    def __init__(self, status, payload):
        super().__init__(status, payload)
        self.status = status
        self.payload = payload


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # Into the array's log, not stderr: a parent that does not read
        # stderr must never be able to stall a connection thread.
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

        def handle(self):
            try:
                super().handle()
            except (ssl.SSLError, OSError) as e:
                LOG.debug('connection from %s closed: %s',
                          self.client_address[0], e)

        def log_message(self, fmt, *args):
            LOG.debug('%s %s', self.address_string(), fmt % args)

        def _send(self, status, payload, headers=()):
            body = b'' if payload is None else json.dumps(payload).encode()
            self.send_response(status)
            for key, value in headers:
                self.send_header(key, value)
            if payload is not None:
                self.send_header('Content-Type', 'application/json')
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
            if rule.kind in ('drop', 'restart'):
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
            try:
                if self.command == 'GET':
                    return self._send(200, server.faults.listing())
                if self.command == 'DELETE':
                    server.faults.clear()
                    return self._send(204, None)
                if self.command == 'POST':
                    server.faults.load(json.loads(raw or b'null'))
                    return self._send(201, server.faults.listing())
            except (ValueError, faults_mod.FaultError) as e:
                return self._send(400, api.error_payload(400, str(e)))
            self._send(405, api.error_payload(405, 'method not allowed'))

        def _handle(self):
            parsed = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qsl(parsed.query,
                                           keep_blank_values=True)
            length = int(self.headers.get('Content-Length') or 0)
            if length > MAX_BODY:
                self.close_connection = True
                return self._send(413, api.error_payload(
                    413, 'request body too large'))
            raw = self.rfile.read(length) if length else b''
            if not self._authorized():
                return self._send(401, api.error_payload(
                    401, 'authentication required'),
                    headers=[('WWW-Authenticate',
                              'Basic realm="reference-array"')])
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

    return Handler


class JSONServer(object):
    """Serve ``api`` on host:port in a background thread."""

    def __init__(self, api, host, port, certfile=None, keyfile=None,
                 request_log=None, faults=None):
        self.api = api
        self.faults = faults or faults_mod.Injector()
        self._log_lock = threading.Lock()
        self._log = open(request_log, 'a', buffering=1) \
            if request_log else None
        self.httpd = _Server((host, port), _make_handler(api, self))
        if certfile:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(certfile, keyfile)
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
