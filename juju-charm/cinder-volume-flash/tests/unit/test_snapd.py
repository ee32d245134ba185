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

"""The snapd client on replies snapd would not send."""

import os
import socket
import tempfile
import threading
import unittest
from unittest import mock

import snapd
from tests.unit import fake_snapd


class _RawServer(object):
    """Answers every connection with the same bytes."""

    def __init__(self, reply):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, 'snapd.socket')
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(4)
        self.reply = reply
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            with conn:
                _read_request(conn)
                conn.sendall(self.reply)

    def close(self):
        self.sock.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


def _read_request(conn):
    """The whole request.

    Closing a Unix socket with bytes unread resets the client's side,
    which would then see snapd as unreachable.
    """
    data = b''
    while b'\r\n\r\n' not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, body = data.split(b'\r\n\r\n', 1)
    length = 0
    for line in head.split(b'\r\n')[1:]:
        name, _sep, value = line.partition(b':')
        if name.strip().lower() == b'content-length':
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


def _http(body, status='200 OK'):
    return ('HTTP/1.1 %s\r\nContent-Length: %d\r\n\r\n' % (
        status, len(body))).encode() + body


class ClientTestCase(unittest.TestCase):

    def serve(self, reply):
        server = _RawServer(reply)
        self.addCleanup(server.close)
        return snapd.Client(server.path, timeout=5)

    def test_not_json(self):
        client = self.serve(_http(b'<html>proxy error</html>', '502 Bad'))
        with self.assertRaises(snapd.SnapdError) as caught:
            client.snap_apps('x')
        self.assertIn('not its JSON (HTTP 502)', str(caught.exception))
        self.assertTrue(caught.exception.transient)

    def test_oversized_reply_is_not_read_whole(self):
        body = b'{"type": "sync", "result": "' + b'a' * (
            snapd.MAX_REPLY + 10) + b'"}'
        client = self.serve(_http(body))
        with self.assertRaises(snapd.SnapdError) as caught:
            client.get('x', 'flash.a')
        self.assertIn('more than', str(caught.exception))

    def test_unreachable_is_transient(self):
        client = snapd.Client(os.path.join(tempfile.mkdtemp(), 'none'),
                              timeout=1)
        with self.assertRaises(snapd.SnapdError) as caught:
            client.get('x', 'flash.a')
        self.assertTrue(caught.exception.transient)
        self.assertIn('not reachable', str(caught.exception))

    def test_refusal_is_not_transient(self):
        client = self.serve(_http(
            b'{"type": "error", "status-code": 403, "result": '
            b'{"kind": "login-required", "message": "access denied"}}',
            '403 Forbidden'))
        with self.assertRaises(snapd.SnapdError) as caught:
            client.set('x', {'flash.a.b': 'c'})
        self.assertEqual(('login-required', 403, False), (
            caught.exception.kind, caught.exception.status,
            caught.exception.transient))

    def test_a_change_that_never_ends(self):
        fake = fake_snapd.FakeSnapd()
        self.addCleanup(fake.close)
        fake.install('s', ['cinder-flash'])
        fake.changes['7'] = ['Doing', 'Doing', 'Doing', 'Doing']
        with mock.patch.object(snapd, 'POLL_SECONDS', 0):
            with self.assertRaises(snapd.SnapdError) as caught:
                snapd.Client(fake.path).wait('7', timeout=0)
        self.assertTrue(caught.exception.transient)
        self.assertIn('still Doing', str(caught.exception))

    def test_unset_key_reads_as_none(self):
        fake = fake_snapd.FakeSnapd()
        self.addCleanup(fake.close)
        fake.install('s', ['cinder-flash'], conf={'flash': {'a': {
            'k': 'v'}}})
        client = snapd.Client(fake.path)
        self.assertEqual({'k': 'v'}, client.get('s', 'flash.a'))
        self.assertIsNone(client.get('s', 'flash.b'))
