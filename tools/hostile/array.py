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

"""The array under probe: one reference array process, and raw HTTP."""

import base64
import json
import os
import socket
import ssl
import tempfile
import urllib.parse

from reference_array import launch

MiB = 1 << 20
GiB = 1 << 30
INITIATOR = 'iqn.2026-11.io.cinder-flash.hostile:%s'


class Array(object):
    """One reference array process with a data directory of its own."""

    def __init__(self, data_dir=None, args=()):
        self._tmp = None
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix='hostile-')
            data_dir = self._tmp.name
        self.data_dir = data_dir
        self.proc = launch.ArrayProcess(
            data_dir, ['--iscsi-port', '0'] + list(args),
            os.path.join(data_dir, 'array.log'))
        self.info = None

    def __enter__(self):
        self.info = self.proc.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        if self._tmp:
            self._tmp.cleanup()

    def stop(self):
        if self.proc.proc and self.proc.proc.poll() is None:
            return self.proc.stop()
        return self.proc.proc.returncode if self.proc.proc else None

    def kill(self):
        self.proc.kill()

    @property
    def pid(self):
        return self.proc.pid

    def status(self, field):
        """A /proc/PID/status figure in bytes (VmRSS, VmHWM, VmPeak...)."""
        with open('/proc/%d/status' % self.pid) as f:
            for line in f:
                if line.startswith(field + ':'):
                    return int(line.split()[1]) * 1024
        return 0

    def threads(self):
        return len(os.listdir('/proc/%d/task' % self.pid))

    def log(self):
        try:
            with open(os.path.join(self.data_dir, 'array.log'),
                      errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def alive(self):
        return self.proc.proc.poll() is None

    # -- K2 REST --
    def auth_headers(self):
        token = '%s:%s' % (self.info['user'], self.info['password'])
        return {'Content-Type': 'application/json',
                'Authorization': 'Basic ' + base64.b64encode(
                    token.encode()).decode()}

    def k2(self, method, path, body=None, auth=True, timeout=30):
        """(status, decoded reply or text); status 0: no answer."""
        url = urllib.parse.urlsplit(self.info['k2'])
        headers = (self.auth_headers() if auth else
                   {'Content-Type': 'application/json'})
        data = None if body is None else json.dumps(body).encode()
        return http_request(url.hostname, url.port, method,
                            '/api/v2' + path, headers, data, tls=True,
                            timeout=timeout)

    def linstor(self, method, path, body=None, timeout=30):
        url = urllib.parse.urlsplit(self.info['linstor'])
        data = None if body is None else json.dumps(body).encode()
        return http_request(url.hostname, url.port, method, path,
                            {'Content-Type': 'application/json'}, data,
                            tls=url.scheme == 'https', timeout=timeout)

    @property
    def portal(self):
        host, port = self.info['iscsi_portal'].rsplit(':', 1)
        return host, int(port)


def unverified_tls(sock):
    """``sock`` over TLS, the array's certificate not checked (what any
    local process can do without the CA).
    """
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx.wrap_socket(sock)


def http_request(host, port, method, path, headers, data, tls=False,
                 timeout=30, raw=None):
    """One HTTP/1.1 request on a fresh connection; (status, body)."""
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        if tls:
            sock = unverified_tls(sock)
        if raw is None:
            lines = ['%s %s HTTP/1.1' % (method, path),
                     'Host: %s:%d' % (host, port), 'Connection: close']
            lines += ['%s: %s' % kv for kv in headers.items()]
            if data is not None:
                lines.append('Content-Length: %d' % len(data))
            raw = ('\r\n'.join(lines) + '\r\n\r\n').encode() + (data or b'')
        sock.sendall(raw)
        reply = b''
        while len(reply) < 4 * MiB:
            try:
                chunk = sock.recv(65536)
            except (socket.timeout, ConnectionError, ssl.SSLError):
                break
            if not chunk:
                break
            reply += chunk
    except (OSError, ssl.SSLError):
        return 0, ''
    finally:
        sock.close()
    head, _sep, body = reply.partition(b'\r\n\r\n')
    try:
        status = int(head.split(b' ', 2)[1])
    except (IndexError, ValueError):
        return 0, ''
    try:
        return status, json.loads(body) if body else None
    except ValueError:
        return status, body.decode('utf-8', 'replace')
