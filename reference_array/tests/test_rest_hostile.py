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

"""The array's REST ports against callers without credentials or with
input no parser foresaw: refusals before any work, clear 4xx, one log
line.
"""

import datetime
import http.client
import os
import socket
import ssl
import threading

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography import x509
from cryptography.x509.oid import NameOID
import fixtures
import linstor
import requests
import testtools

from reference_array.http import server as http_server
from reference_array.http import slots as http_slots
from reference_array.tests import array_fixture
from reference_array import tlsutil

RULE = [{'path': '.*', 'kind': 'status', 'status': 503}]


class _API(object):
    """The smallest dialect: one user, every call answers its body."""

    users = {'u': 'p'}

    def __init__(self):
        self.calls = []
        # A call to /slow is answered once this is set.
        self.go_on = threading.Event()

    def route(self, method, path, query, body):
        self.calls.append((method, path))
        if path == '/slow':
            self.go_on.wait(10)
        return 200, {'body': body}

    @staticmethod
    def busy_reply():
        return 503, {'error': 'busy'}

    @staticmethod
    def parse_body(raw):
        try:
            return http_server.decode_json(raw) if raw else None
        except ValueError as e:
            raise http_server.HTTPError(400, {'error': str(e)})

    @staticmethod
    def error_payload(status, message):
        return {'error': message}


def _raw(address, data, timeout=5):
    """The status line's code of one raw request (None: no answer)."""
    with socket.create_connection(address, timeout) as s:
        s.sendall(data)
        reply = s.recv(4096)
    return int(reply.split()[1]) if reply else None


class JSONServerTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='reference_array.http'))
        self.api = _API()

    def _serve(self, **kwargs):
        srv = http_server.JSONServer(self.api, '127.0.0.1', 0, **kwargs)
        srv.start()
        self.addCleanup(srv.stop)
        return srv

    def test_a_body_is_not_read_before_authentication(self):
        srv = self._serve()
        # Headers announce 16 MiB that never come: the refusal is at once.
        status = _raw(srv.address, b'POST /x HTTP/1.1\r\nHost: a\r\n'
                      b'Content-Length: 16777216\r\n\r\n')
        self.assertEqual(401, status)
        self.assertEqual([], self.api.calls)
        # A refusal keeps the client's "Connection: close".
        with socket.create_connection(srv.address, 5) as s:
            s.sendall(b'GET /x HTTP/1.1\r\nHost: a\r\n'
                      b'Connection: close\r\n\r\n')
            s.settimeout(2)
            reply = b''
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
        self.assertIn(b' 401 ', reply)

    def test_bad_content_length_and_json(self):
        srv = self._serve()
        auth = b'Authorization: Basic dTpw\r\n'
        for length, body, want in (
                (b'abc', b'{}', 400), (b'-1', b'', 400),
                (b'2', b'{}', 200), (None, b'[' * 100000 + b']' * 100000, 400),
                (None, b'{"n": Infinity}', 400), (None, b'{"n": NaN}', 400),
                (None, b'[' * 40 + b']' * 40, 400),
                (None, b'[' * 20 + b']' * 20, 200)):
            if length is None:
                length = str(len(body)).encode()
            status = _raw(srv.address, b'POST /x HTTP/1.1\r\nHost: a\r\n' +
                          auth + b'Content-Length: ' + length +
                          b'\r\nConnection: close\r\n\r\n' + body)
            self.assertEqual(want, status, (length, body[:20]))
        self.assertNotIn('Traceback', self.logs.output)

    def test_fault_injection_only_when_asked_and_authenticated(self):
        headers = {'Authorization': 'Basic dTpw'}
        closed = self._serve()
        conn = http.client.HTTPConnection(*closed.address, timeout=5)
        conn.request('POST', http_server.ADMIN_FAULTS, str(RULE).replace(
            "'", '"'), headers)
        self.assertEqual(404, conn.getresponse().status)
        self.assertEqual([], closed.faults.listing())
        srv = self._serve(admin=True)
        for auth, want in (({}, 401), (headers, 201)):
            conn = http.client.HTTPConnection(*srv.address, timeout=5)
            conn.request('POST', http_server.ADMIN_FAULTS,
                         str(RULE).replace("'", '"'), auth)
            self.assertEqual(want, conn.getresponse().status)
        self.api.users = None
        self.assertRaises(ValueError, http_server.JSONServer, self.api,
                          '127.0.0.1', 0, admin=True)

    def test_a_failed_handshake_is_one_line(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        cert, key = tlsutil.ensure_certificate(tmp)
        srv = self._serve(certfile=cert, keyfile=key)
        self.assertIsNone(_raw(srv.address, b'GET / HTTP/1.0\r\n\r\n'))
        # The handler thread logs after the client saw the close.
        for _ in range(50):
            if self.logs.output:
                break
            threading.Event().wait(0.05)
        self.assertEqual(1, len(self.logs.output.splitlines()),
                         self.logs.output)
        self.assertNotIn('Traceback', self.logs.output)

    def test_connections_are_capped(self):
        self._cap(4)
        srv = self._serve()
        before = threading.active_count()
        idle = [socket.create_connection(srv.address, 5) for _ in range(12)]
        self.addCleanup(lambda: [s.close() for s in idle])
        threading.Event().wait(0.5)
        self.assertLessEqual(threading.active_count() - before, 4)

    def test_one_newcomer_closes_one_connection(self):
        # The closed connection's thread may be slow to end on a busy
        # machine: the newcomer waits for its slot rather than close a
        # second connection.
        slots = http_slots.Slots(1)
        self.assertTrue(slots.take(0))
        pairs = [socket.socketpair() for _ in range(2)]
        for pair in pairs:
            self.addCleanup(pair[0].close)
            self.addCleanup(pair[1].close)
            slots.idle(pair[0])
        threading.Event().wait(http_slots.IDLE_GRACE + 0.1)

        threading.Timer(1.3, slots.end, (pairs[0][0],)).start()
        self.assertTrue(slots.take(0.1))
        self.assertEqual(b'', pairs[0][1].recv(1))
        pairs[1][1].settimeout(0.1)
        self.assertRaises(socket.timeout, pairs[1][1].recv, 1)

    def _one_turn_held(self, **kwargs):
        """A server with one request turn (0.3 s wait for it), held by a
        request to /slow until the test ends; (server, its connection).
        """
        self.useFixture(fixtures.MockPatchObject(http_server,
                                                 'MAX_REQUESTS', 1))
        self.useFixture(fixtures.MockPatchObject(http_server,
                                                 'REQUEST_WAIT', 0.3))
        self.addCleanup(self.api.go_on.set)
        srv = self._serve(**kwargs)
        slow = socket.create_connection(srv.address, 5)
        self.addCleanup(slow.close)
        slow.sendall(b'GET /slow HTTP/1.1\r\nHost: a\r\n'
                     b'Authorization: Basic dTpw\r\n\r\n')
        for _ in range(250):
            if self.api.calls:
                return srv, slow
            threading.Event().wait(0.02)
        self.fail('the slow request was not served')

    def _cap(self, slots, wait=None):
        """The server's connection slots and wait for one, for a test."""
        self.useFixture(fixtures.MockPatchObject(http_server,
                                                 'MAX_CONNECTIONS', slots))
        if wait is not None:
            self.useFixture(fixtures.MockPatchObject(http_server,
                                                     'SLOT_WAIT', wait))

    def _kept_alive(self, srv, count):
        """``count`` connections that made one request each and stay open
        for the next, oldest first.
        """
        conns = []
        for _ in range(count):
            conn = http.client.HTTPConnection(*srv.address, timeout=5)
            self.addCleanup(conn.close)
            conn.request('GET', '/x', headers={'Authorization': 'Basic dTpw'})
            resp = conn.getresponse()
            resp.read()
            self.assertEqual(200, resp.status)
            conns.append(conn)
        return conns

    def test_idle_connections_make_room_for_a_newcomer(self):
        self._cap(4, 5.0)
        srv = self._serve()
        pooled = self._kept_alive(srv, 4)
        # Every slot is held by a connection waiting for its next
        # request: a fifth client is served at once, and one of them is
        # closed to make room (which one: test_the_longest_waiting_...;
        # here the handler threads mark them waiting in their own time).
        newcomer = self._kept_alive(srv, 1)[0]
        self.assertEqual(1, self.logs.output.count('closed to make room'))
        self.assertNotIn('connections busy', self.logs.output)
        closed = []
        for conn in pooled:
            conn.sock.settimeout(0.5)
            try:
                closed += [conn] if conn.sock.recv(1) == b'' else []
            except socket.timeout:
                pass
        self.assertEqual(1, len(closed))
        for conn in pooled + [newcomer]:
            if conn not in closed:
                conn.sock.settimeout(5)
                conn.request('GET', '/x',
                             headers={'Authorization': 'Basic dTpw'})
                self.assertEqual(200, conn.getresponse().status)

    def test_the_longest_waiting_connection_is_closed_first(self):
        slots = http_slots.Slots(3)
        pairs = [socket.socketpair() for _ in range(3)]
        for ours, theirs in pairs:
            self.addCleanup(ours.close)
            self.addCleanup(theirs.close)
            self.assertTrue(slots.take(0))
        for ours, _theirs in (pairs[1], pairs[0], pairs[2]):
            slots.idle(ours)
            threading.Event().wait(0.01)
        threading.Event().wait(http_slots.IDLE_GRACE + 0.1)
        threading.Timer(0.2, slots.end, (pairs[1][0],)).start()
        self.assertTrue(slots.take(0))
        self.assertEqual(b'', pairs[1][1].recv(1))
        for _ours, theirs in (pairs[0], pairs[2]):
            theirs.settimeout(0.1)
            self.assertRaises(socket.timeout, theirs.recv, 1)

    def test_the_pools_of_a_cloud_keep_their_connections(self):
        # Three services' drivers, 16 pooled connections each on one
        # array: far below the connection slots, so none is closed for
        # room, though more than the requests served at once.
        srv = self._serve()
        pooled = self._kept_alive(srv, 48)
        self.assertLess(http_server.MAX_REQUESTS, len(pooled))
        for conn in pooled:
            conn.request('GET', '/x', headers={'Authorization': 'Basic dTpw'})
            self.assertEqual(200, conn.getresponse().status)
        self.assertNotIn('closed', self.logs.output)

    def test_requests_beyond_those_served_wait_then_are_answered_busy(self):
        srv, slow = self._one_turn_held()
        # The one request served holds the array: the next is answered
        # busy, with the dialect's own reply, once it has waited; its
        # body was read, so its connection goes on.
        busy = http.client.HTTPConnection(*srv.address, timeout=5)
        self.addCleanup(busy.close)
        busy.request('POST', '/x', body=b'{"a": 1}',
                     headers={'Authorization': 'Basic dTpw'})
        resp = busy.getresponse()
        self.assertEqual((503, False), (resp.status, resp.will_close))
        resp.read()
        self.assertIn('answered busy', self.logs.output)
        # One that comes while the slow one ends is served.
        self.useFixture(fixtures.MockPatchObject(http_server,
                                                 'REQUEST_WAIT', 5.0))
        threading.Timer(0.1, self.api.go_on.set).start()
        busy.request('GET', '/x', headers={'Authorization': 'Basic dTpw'})
        self.assertEqual(200, busy.getresponse().status)
        self.assertTrue(slow.recv(4096).startswith(b'HTTP/1.1 200'))

    def test_callers_without_credentials_hold_no_request(self):
        self.useFixture(fixtures.MockPatchObject(http_server,
                                                 'MAX_REQUESTS', 1))
        self.useFixture(fixtures.MockPatchObject(http_server,
                                                 'REQUEST_WAIT', 0.3))
        srv = self._serve()
        # Requests queued on one connection whose answers are never
        # read: the first is answered and the connection closed.
        pipe = socket.create_connection(srv.address, 5)
        self.addCleanup(pipe.close)
        pipe.sendall(b'GET /x HTTP/1.1\r\nHost: a\r\n\r\n' * 2000)
        threading.Event().wait(0.3)
        self.assertEqual(200, _raw(srv.address, b'GET /x HTTP/1.1\r\n'
                                   b'Host: a\r\n'
                                   b'Authorization: Basic dTpw\r\n\r\n'))
        reply = pipe.recv(4096)
        self.assertIn(b'401', reply.split(b'\r\n')[0])
        self.assertIn(b'Connection: close', reply)
        self.assertEqual(1, reply.count(b'HTTP/1.1'))

    def test_continue_is_sent_only_to_an_authorized_request(self):
        srv = self._serve()
        head = (b'POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 8\r\n'
                b'Expect: 100-continue\r\n')
        with socket.create_connection(srv.address, 5) as s:
            s.sendall(head + b'\r\n')
            self.assertTrue(s.recv(4096).startswith(b'HTTP/1.1 401'))
        with socket.create_connection(srv.address, 5) as s:
            s.sendall(head + b'Authorization: Basic dTpw\r\n\r\n')
            self.assertEqual(b'HTTP/1.1 100 Continue\r\n\r\n',
                             s.recv(4096))
            s.sendall(b'{"a": 1}')
            self.assertTrue(s.recv(4096).startswith(b'HTTP/1.1 200'))
        self.assertEqual([('POST', '/x')], self.api.calls)

    def test_headers_have_a_byte_budget(self):
        srv = self._serve()
        # 100 lines of 64 KiB each would pass Python's own limits; the
        # array reads 64 KiB of headers before it knows the caller.
        line = b'X-Pad: ' + b'a' * 8000 + b'\r\n'
        self.assertEqual(431, _raw(srv.address, b'GET /x HTTP/1.1\r\n' +
                                   line * 9 + b'\r\n'))
        self.assertEqual(200, _raw(srv.address, b'GET /x HTTP/1.1\r\n' +
                                   line * 7 + b'Authorization: Basic dTpw'
                                   b'\r\n\r\n'))

    def test_a_chunked_body_is_read(self):
        srv = self._serve()
        auth = b'Authorization: Basic dTpw\r\n'
        head = (b'POST /x HTTP/1.1\r\nHost: a\r\n'
                b'Transfer-Encoding: chunked\r\n' + auth + b'\r\n')
        with socket.create_connection(srv.address, 5) as s:
            s.sendall(head + b'4;ext=1\r\n{"a"\r\n4\r\n: 1}\r\n0\r\n'
                      b'X-Trailer: t\r\n\r\n')
            reply = s.recv(4096)
        self.assertTrue(reply.startswith(b'HTTP/1.1 200'), reply)
        self.assertIn(b'{"body": {"a": 1}}', reply)
        for body, status in ((b'zz\r\n', 400), (b'4\r\n{"a": 1}\r\n', 400),
                             (b'%x\r\n' % (http_server.MAX_BODY + 1), 413)):
            self.assertEqual(status, _raw(srv.address, head + body), body)
        self.assertEqual(501, _raw(srv.address, b'POST /x HTTP/1.1\r\n'
                                   b'Transfer-Encoding: gzip\r\n' + auth +
                                   b'\r\n'))
        self.assertEqual(1, len(self.api.calls))

    def test_fault_rules_are_cleared_while_every_turn_is_taken(self):
        srv, _slow = self._one_turn_held(admin=True)
        clear = (b'DELETE %s HTTP/1.1\r\nHost: a\r\n'
                 b'Authorization: Basic dTpw\r\n\r\n' %
                 http_server.ADMIN_FAULTS.encode())
        self.assertEqual(204, _raw(srv.address, clear))

    def test_silent_clients_do_not_lock_others_out(self):
        self._cap(4)
        srv = self._serve()
        silent = [socket.create_connection(srv.address, 5)
                  for _ in range(12)]
        self.addCleanup(lambda: [s.close() for s in silent])
        self.assertEqual(200, _raw(srv.address, b'GET /x HTTP/1.1\r\n'
                                   b'Host: a\r\n'
                                   b'Authorization: Basic dTpw\r\n\r\n'))

    def test_a_byte_now_and_then_does_not_keep_a_slot(self):
        self._cap(2, 3.0)
        self.useFixture(fixtures.MockPatchObject(http_slots,
                                                 'HEADER_GRACE', 0.3))
        srv = self._serve()
        trickle = [socket.create_connection(srv.address, 5)
                   for _ in range(2)]
        self.addCleanup(lambda: [s.close() for s in trickle])
        for s in trickle:
            s.sendall(b'G')
        # Their threads have read the byte: requests that are arriving.
        threading.Event().wait(0.2)
        self.assertEqual(200, _raw(srv.address, b'GET /x HTTP/1.1\r\n'
                                   b'Host: a\r\n'
                                   b'Authorization: Basic dTpw\r\n\r\n'))
        self.assertNotIn('connections busy', self.logs.output)

    def test_only_a_connection_with_nothing_to_read_is_closed(self):
        slots = http_slots.Slots(1)
        self.assertTrue(slots.take(0))
        ours, theirs = socket.socketpair()
        self.addCleanup(ours.close)
        self.addCleanup(theirs.close)
        slots.idle(ours)
        # Not before it has waited IDLE_GRACE: a client that just had an
        # answer may be sending its next request.
        self.assertFalse(slots.take(0))
        threading.Event().wait(http_slots.IDLE_GRACE + 0.1)
        theirs.sendall(b'GET')
        self.assertFalse(slots.take(0))
        ours.recv(3)
        # Its thread would end when the socket is shut down; here the
        # slot is given back by hand.
        threading.Timer(0.2, slots.end, (ours,)).start()
        self.assertTrue(slots.take(0))
        self.assertEqual(b'', theirs.recv(1))
        self.assertFalse(slots.busy(ours))

    def test_a_connection_with_a_request_is_never_closed_for_room(self):
        self._cap(2, 0.2)
        release = threading.Event()
        route = self.api.route
        entered = []

        def slow(method, path, query, body):
            entered.append(path)
            release.wait(10)
            return route(method, path, query, body)

        self.api.route = slow
        srv = self._serve()
        working = []
        for _ in range(2):
            conn = http.client.HTTPConnection(*srv.address, timeout=10)
            self.addCleanup(conn.close)
            conn.request('GET', '/x', headers={'Authorization': 'Basic dTpw'})
            working.append(conn)
        for _ in range(100):
            if len(entered) == 2:
                break
            threading.Event().wait(0.05)
        # Both slots serve a request: the newcomer is the one closed.
        self.assertIsNone(_raw(srv.address, b'GET /x HTTP/1.1\r\n'
                               b'Host: a\r\n\r\n'))
        self.assertIn('2 connections busy', self.logs.output)
        release.set()
        for conn in working:
            self.assertEqual(200, conn.getresponse().status)

    def test_request_log_rotates(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.MockPatchObject(
            http_server, 'REQUEST_LOG_BYTES', 1000))
        path = os.path.join(tmp, 'requests.log')
        srv = self._serve(request_log=path)
        for _ in range(200):
            srv.record('GET', '/volumes', 200, 0.001)
        self.assertLess(os.path.getsize(path), 1100)
        self.assertLess(os.path.getsize(path + '.1'), 1100)


def _client_certificate(directory):
    """A CA and a client certificate it signed: (ca, cert, key) paths."""
    now = datetime.datetime.now(datetime.timezone.utc)
    paths = []
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'ops-ca')])
    for name, key, issuer_key, ca in (
            ('ca', ca_key, ca_key, True),
            ('client', ec.generate_private_key(ec.SECP256R1()), ca_key,
             False)):
        subject = ca_name if ca else x509.Name(
            [x509.NameAttribute(NameOID.COMMON_NAME, 'cinder')])
        cert = (x509.CertificateBuilder()
                .subject_name(subject).issuer_name(ca_name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.BasicConstraints(ca=ca, path_length=None),
                               critical=True)
                .sign(issuer_key, hashes.SHA256()))
        path = os.path.join(directory, name + '.pem')
        with open(path, 'wb') as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        paths.append(path)
        if not ca:
            with open(path + '.key', 'wb') as f:
                f.write(key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption()))
            paths.append(path + '.key')
    return paths


class ArrayAccessTestCase(testtools.TestCase):
    """Flags of a whole array process, checked with python-linstor."""

    def _linstor(self, array, **attrs):
        client = linstor.Linstor(array.linstor_url.replace(
            'https://', 'linstor+ssl://'), timeout=10)
        client.cafile = array.info['ca_cert']
        for key, value in attrs.items():
            setattr(client, key, value)
        client.connect()
        self.addCleanup(client.disconnect)
        return client.node_list_raise()

    def test_faults_are_off_by_default_and_never_on_linstor(self):
        for flags in ([], ['--fault-injection']):
            array = self.useFixture(array_fixture.ReferenceArray(args=flags))
            k2 = 'https://%s:%s%s' % (array.k2_host, array.k2_port,
                                      http_server.ADMIN_FAULTS)

            def post(url, auth=None):
                return requests.post(url, json=RULE, auth=auth, timeout=5,
                                     verify=array.info['ca_cert']).status_code
            self.assertEqual(401, post(k2))
            self.assertEqual(404, post(array.linstor_url +
                                       http_server.ADMIN_FAULTS))
            status = post(k2, (array.info['user'], array.info['password']))
            self.assertEqual(201 if flags else 404, status)
            array.stop()

    def test_linstor_basic_users(self):
        array = self.useFixture(array_fixture.ReferenceArray(
            args=['--linstor-auth', 'basic']))
        self.assertTrue(array.linstor_url.startswith('https://'))
        status, _body = array.linstor('GET', '/v1/nodes')
        self.assertEqual(401, status)
        self.assertRaises(linstor.LinstorError, self._linstor, array,
                          username=array.info['user'], password='wrong')
        nodes = self._linstor(array, username=array.info['user'],
                              password=array.info['password'])
        self.assertTrue(nodes)

    def test_linstor_client_certificates(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        ca, cert, key = _client_certificate(tmp)
        array = self.useFixture(array_fixture.ReferenceArray(
            args=['--linstor-client-ca', ca]))
        self.assertRaises((linstor.LinstorError, ssl.SSLError, OSError),
                          self._linstor, array)
        self.assertTrue(self._linstor(array, certfile=cert, keyfile=key))

    def test_ids_and_sizes_out_of_range(self):
        array = self.useFixture(array_fixture.ReferenceArray())
        auth = (array.info['user'], array.info['password'])
        base = 'https://%s:%s/api/v2' % (array.k2_host, array.k2_port)

        def k2(method, path, body=None):
            return requests.request(method, base + path, json=body,
                                    auth=auth, timeout=10,
                                    verify=array.info['ca_cert']).status_code
        self.assertEqual(404, k2('GET', '/volumes/%d' % (1 << 64)))
        self.assertEqual(404, k2('DELETE', '/hosts/%d' % (1 << 63)))
        self.assertEqual(400, k2('POST', '/volumes', {
            'name': 'v', 'size': 1024 * 1024,
            'volume_group': {'ref': '/volume_groups/%d' % (1 << 64)}}))
        self.assertEqual(201, array.linstor('POST', '/v1/resource-definitions',
                                            {'resource_definition': {
                                                'name': 'huge'}})[0])
        path = '/v1/resource-definitions/huge/volume-definitions'
        self.assertEqual(201, array.linstor('POST', path, {
            'volume_definition': {'size_kib': 1024}})[0])
        # LINSTOR's own refusal: FAIL_INVLD_VLM_SIZE, which its
        # controller answers with HTTP 500 (ApiCallRcRestUtils).
        status, body = array.linstor('PUT', path + '/0',
                                     {'size_kib': 1 << 70})
        self.assertEqual((500, 206), (status, body[0]['ret_code'] & 0x3ff))
        self.assertEqual(1024, array.linstor('GET', path + '/0')[1][
            'size_kib'])
        with open(array.log_file) as f:
            self.assertNotIn('Traceback', f.read())
