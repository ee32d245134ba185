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

"""Hostile probes of the reference array, over its wire protocols only.

``tox -e hostile [-- --only NAME ...] [--json PATH]``. Each probe starts
its own array on 127.0.0.1 (ephemeral ports, a temporary data directory),
does what an adversary or a broken peer on the same machine could do, and
measures what the array let through or what it cost:

========== ==============================================================
reach      requests without credentials that succeed (wanted: 0)
pdu-alloc  bytes the array reserves for one unauthenticated 48-byte
           SCSI WRITE PDU from an initiator that has no LUN (bounded)
bodies     array memory after 30 unauthenticated 16 MiB request bodies
iscsi-keys login keys out of range or out of order: a clean reject, the
           array still serves, one log line each (no traceback)
iscsi-hold connections, login time and command buffers one local process
           can make the target hold (bounded)
rest-edge  REST input no parser foresaw: a 4xx, one log line each
isolation  checksums over iSCSI: writes to an exposable snapshot (a view)
           never reach its source volume or clones made from it
disk-full  a 64 MiB tmpfs filled over iSCSI: SCSI errors (not dropped
           connections), REST keeps answering, capacity bounded by the
           filesystem, the array starts again
unmap      one UNMAP of the largest range the array advertises, and the
           latency of I/O to another LUN meanwhile
========== ==============================================================

The probes talk only to the array's ports (K2 REST, LINSTOR REST, iSCSI)
and read its process status and log, so they hold whatever the array's
inside looks like. Every probe is bounded in time and memory on our side.
"""

import argparse
import contextlib
import hashlib
import json
import os
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from reference_array import launch  # noqa: E402

MiB = 1 << 20
GiB = 1 << 30
INITIATOR = 'iqn.2026-11.io.cinder-flash.hostile:%s'


# -- the array under probe ---------------------------------------------------

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
    def k2(self, method, path, body=None, auth=True, timeout=30):
        """(status, decoded reply or text); status 0: no answer."""
        url = urllib.parse.urlsplit(self.info['k2'])
        headers = {'Content-Type': 'application/json'}
        if auth:
            token = ('%s:%s' % (self.info['user'], self.info['password']))
            import base64
            headers['Authorization'] = 'Basic ' + base64.b64encode(
                token.encode()).decode()
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


def http_request(host, port, method, path, headers, data, tls=False,
                 timeout=30, raw=None):
    """One HTTP/1.1 request on a fresh connection; (status, body)."""
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        if tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            sock = ctx.wrap_socket(sock)
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


# -- a raw iSCSI initiator ---------------------------------------------------

OP_SCSI_CMD, OP_LOGIN, OP_DATA_OUT = 0x01, 0x03, 0x05
OP_SCSI_RSP, OP_LOGIN_RSP, OP_R2T, OP_REJECT = 0x21, 0x23, 0x31, 0x3f


def _text(pairs):
    return b''.join(('%s=%s' % kv).encode() + b'\0' for kv in pairs)


def _parse_text(data):
    return dict(item.decode('utf-8', 'replace').partition('=')[::2]
                for item in data.split(b'\0') if item)


class RawInitiator(object):
    """Just enough of an initiator to send PDUs nobody else would."""

    def __init__(self, portal, name, timeout=10):
        self.sock = socket.create_connection(portal, timeout=timeout)
        self.name = name
        self.cmd_sn = 1
        self.itt = 1

    def close(self):
        with contextlib.suppress(OSError):
            self.sock.close()

    def send(self, bhs, data=b''):
        bhs[5:8] = len(data).to_bytes(3, 'big')
        self.sock.sendall(bytes(bhs) + data + bytes((4 - len(data) % 4) % 4))

    def recv(self):
        """(BHS, data) of the next PDU; None when the target hung up."""
        bhs = self._exact(48)
        if bhs is None:
            return None
        length = int.from_bytes(bhs[5:8], 'big')
        data = self._exact(length + (4 - length % 4) % 4) if length else b''
        return bhs, (data or b'')[:length]

    def _exact(self, n):
        buf = b''
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except (socket.timeout, OSError):
                return None
            if not chunk:
                return None
            buf += chunk
        return buf

    def login_pdu(self, pairs, csg=1, nsg=3, transit=True):
        bhs = bytearray(48)
        bhs[0] = 0x40 | OP_LOGIN
        bhs[1] = (0x80 if transit else 0) | (csg << 2) | nsg
        bhs[8:14] = b'\x40\x00\x01\x37\x00\x00'        # ISID
        struct.pack_into('>IHHII', bhs, 16, self.itt, 0, 0, self.cmd_sn, 0)
        self.send(bhs, _text(pairs))
        return self.recv()

    def login(self, target, extra=(), immediate=False):
        """Security then operational stage; returns the status class."""
        base = [('InitiatorName', self.name), ('SessionType', 'Normal'),
                ('TargetName', target)]
        reply = self.login_pdu(base + [('AuthMethod', 'None')], 0, 1)
        if reply is None or reply[0][36]:
            return reply[0][36] if reply else -1
        reply = self.login_pdu(
            [('HeaderDigest', 'None'), ('DataDigest', 'None'),
             ('ImmediateData', 'Yes' if immediate else 'No'),
             ('InitialR2T', 'Yes')] + list(extra),
            1, 3)
        return reply[0][36] if reply else -1

    def command(self, cdb, edtl, lun=0, data=b''):
        bhs = bytearray(48)
        bhs[0] = OP_SCSI_CMD
        bhs[1] = 0x80 | 0x20                 # final, write
        struct.pack_into('>Q', bhs, 8, lun << 48)
        struct.pack_into('>IIII', bhs, 16, self.itt, edtl, self.cmd_sn, 0)
        bhs[32:32 + len(cdb)] = cdb
        self.itt += 1
        self.cmd_sn += 1
        self.send(bhs, data)

    def write16(self, lba, blocks, edtl, lun=0, data=b''):
        cdb = bytearray(16)
        cdb[0] = 0x8a
        struct.pack_into('>QI', cdb, 2, lba, blocks)
        self.command(cdb, edtl, lun, data)

    def unmap(self, extents, lun):
        """One UNMAP with a descriptor per (lba, blocks)."""
        params = bytearray(8 + 16 * len(extents))
        struct.pack_into('>HH', params, 0, len(params) - 2,
                         16 * len(extents))
        for n, (lba, blocks) in enumerate(extents):
            struct.pack_into('>QI', params, 8 + 16 * n, lba, blocks)
        cdb = bytearray(10)
        cdb[0] = 0x42
        struct.pack_into('>H', cdb, 7, len(params))
        self.command(cdb, len(params), lun, bytes(params))


# -- probes ------------------------------------------------------------------

class Result(object):

    def __init__(self):
        self.rows = []

    def add(self, probe, measure, value, wanted, ok, detail=''):
        self.rows.append({'probe': probe, 'measure': measure,
                          'value': value, 'wanted': wanted, 'ok': bool(ok),
                          'detail': detail})

    @property
    def failed(self):
        return [r for r in self.rows if not r['ok']]


def _tracebacks(text):
    return text.count('Traceback (most recent call last)')


def probe_reach(res):
    """Requests without credentials that are answered with success: on an
    array with default flags, and on one started with fault injection and
    LINSTOR authentication (basic) on.
    """
    for flags in ([], ['--fault-injection', '--linstor-auth', 'basic']):
        with Array(args=flags) as arr:
            _reach(res, arr, ' '.join(flags) or 'default flags', bool(flags))


def _reach(res, arr, label, linstor_auth):
    tries = [('GET', '/system/state'), ('GET', '/volumes'),
             ('GET', '/hosts'), ('POST', '/volume_groups')]
    hits = []
    for method, path in tries:
        status, _ = arr.k2(method, path,
                           {} if method == 'POST' else None, auth=False)
        if 200 <= status < 300:
            hits.append('K2 %s %s' % (method, path))
    k2 = urllib.parse.urlsplit(arr.info['k2'])
    lin = urllib.parse.urlsplit(arr.info['linstor'])
    lin_tls = lin.scheme == 'https'
    rule = json.dumps([{'path': '.*', 'kind': 'status', 'status': 503,
                        'fraction': 1.0}]).encode()
    for name, url, tls in (('K2', k2, True), ('LINSTOR', lin, lin_tls)):
        for method, data in (('GET', None), ('POST', rule)):
            status, _ = http_request(
                url.hostname, url.port, method, '/_admin/faults',
                {'Content-Type': 'application/json'}, data, tls=tls)
            if 200 <= status < 300:
                hits.append('%s %s /_admin/faults' % (name, method))
    if linstor_auth:
        for method, path, body in (
                ('GET', '/v1/nodes', None),
                ('POST', '/v1/resource-definitions',
                 {'resource_definition': {'name': 'probe'}})):
            status, _ = arr.linstor(method, path, body)
            if 200 <= status < 300:
                hits.append('LINSTOR %s %s' % (method, path))
    # After a possible injection, does an authenticated call still work?
    status, _ = arr.k2('GET', '/system/state')
    res.add('reach', 'unauthenticated successes (%s)' % label, len(hits), 0,
            not hits, '; '.join(hits))
    res.add('reach', 'authenticated K2 call after the probes (%s)' % label,
            status, 200, status == 200)


def _login_unmapped(arr, name):
    ini = RawInitiator(arr.portal, INITIATOR % name)
    status = ini.login(arr.info['iqn'])
    return ini, status


def probe_pdu_alloc(res):
    """Memory the array commits per WRITE from an unmapped initiator.

    PDUs go one at a time and stop as soon as one costs more than 256 MiB,
    so that the probe cannot exhaust the machine it runs on.
    """
    with Array() as arr:
        base = arr.status('VmHWM')
        peers, grown = [], []
        try:
            for n in range(8):
                ini, status = _login_unmapped(arr, 'alloc-%d' % n)
                peers.append(ini)
                if status:
                    res.add('pdu-alloc', 'login of an unmapped initiator',
                            status, 0, False)
                    return
                # 2^32-1 blocks on LUN 0, which this initiator does not
                # have, and the largest expected transfer length there is.
                ini.write16(0, 0xffffffff, 0xffffffff)
                ini.sock.settimeout(30)
                ini.recv()
                grown.append(arr.status('VmHWM') - base)
                if grown[-1] > 256 * MiB:
                    break
        finally:
            for ini in peers:
                ini.close()
        per_pdu = grown[-1] / len(grown)
        res.add('pdu-alloc', 'array memory per WRITE PDU (MiB)',
                round(per_pdu / MiB, 1), '<= 1', per_pdu <= MiB,
                'peak RSS growth after 1..%d PDUs: %s MiB' % (
                    len(grown), [round(g / MiB) for g in grown]))
        res.add('pdu-alloc', 'array alive afterwards', arr.alive(), True,
                arr.alive())


def probe_bodies(res):
    """30 unauthenticated 16 MiB bodies, sent at once."""
    with Array() as arr:
        url = urllib.parse.urlsplit(arr.info['k2'])
        rss0 = arr.status('VmRSS')
        body = os.urandom(16 * MiB)
        statuses = []

        def one():
            status, _ = http_request(
                url.hostname, url.port, 'POST', '/api/v2/volumes',
                {'Content-Type': 'application/json'}, body, tls=True,
                timeout=60)
            statuses.append(status)
        threads = [threading.Thread(target=one) for _ in range(30)]
        for t in threads:
            t.start()
        peak_threads = 0
        while any(t.is_alive() for t in threads):
            peak_threads = max(peak_threads, arr.threads())
            time.sleep(0.05)
        grown = arr.status('VmHWM') - rss0
        res.add('bodies', 'array peak RSS growth (MiB)',
                round(grown / MiB), '< 64', grown < 64 * MiB,
                'answers: %s' % sorted(set(statuses)))
        res.add('bodies', 'unauthenticated bodies answered 2xx',
                sum(200 <= s < 300 for s in statuses), 0,
                not any(200 <= s < 300 for s in statuses))
        res.add('bodies', 'array threads at peak', peak_threads, '<= 64',
                peak_threads <= 64)


def _new_lines(arr, before):
    text = arr.log()[len(before):]
    return [line for line in text.splitlines() if line.strip()]


def probe_iscsi_keys(res):
    cases = [
        ('MaxBurstLength=0', [('MaxBurstLength', '0')]),
        ('MaxRecvDataSegmentLength=abc',
         [('MaxRecvDataSegmentLength', 'abc')]),
        ('FirstBurstLength=-1', [('FirstBurstLength', '-1')]),
        ('MaxBurstLength=2^40', [('MaxBurstLength', str(1 << 40))]),
    ]
    with Array() as arr:
        for name, keys in cases:
            log0 = arr.log()
            ini = RawInitiator(arr.portal, INITIATOR % 'keys')
            status = ini.login(arr.info['iqn'], keys)
            r2ts = 0
            if status == 0:
                # Accepted: a write must not be answered by endless R2Ts.
                ini.write16(0, 8, 4096)
                deadline = time.monotonic() + 2
                while time.monotonic() < deadline:
                    reply = ini.recv()
                    if reply is None or reply[0][0] & 0x3f != OP_R2T:
                        break
                    r2ts += 1
            ini.close()
            time.sleep(0.2)
            new = _new_lines(arr, log0)
            ok = ((status != 0 or r2ts <= 1) and len(new) <= 1 and
                  not _tracebacks('\n'.join(new)))
            res.add('iscsi-keys', name, 'status class %s, %d R2T, %d log '
                    'lines' % (status, r2ts, len(new)),
                    'reject or sane; one log line', ok, ' | '.join(new)[:300])
        # CHAP_N before CHAP_A, in the security stage of a host that
        # needs CHAP.
        k2 = K2(arr)
        profile = k2.create('host_auth_profiles', {
            'name': 'chap', 'auth_type': 'CHAP', 'username': 'probe',
            'secret': 'probe-secret-12'})
        host = k2.create('hosts', {'name': 'chap', 'type': 'Linux',
                                   'host_auth_profile': {
                                       'ref': '/host_auth_profiles/%d' %
                                       profile['id']}})
        k2.create('host_iqns', {'iqn': INITIATOR % 'chap',
                                'host': {'ref': '/hosts/%d' % host['id']}})
        log0 = arr.log()
        ini = RawInitiator(arr.portal, INITIATOR % 'chap')
        reply = ini.login_pdu([('InitiatorName', ini.name),
                               ('SessionType', 'Normal'),
                               ('TargetName', arr.info['iqn']),
                               ('AuthMethod', 'CHAP')], 0, 1, False)
        reply = ini.login_pdu([('CHAP_N', 'probe'), ('CHAP_R', '0x00')],
                              0, 1, False)
        ini.close()
        time.sleep(0.2)
        new = _new_lines(arr, log0)
        refused = reply is not None and reply[0][36] == 2
        res.add('iscsi-keys', 'CHAP_N before CHAP_A (CHAP host)',
                'login refused' if refused else 'answered' if reply
                else 'hung up', 'a login reject, one log line',
                refused and len(new) <= 1 and
                not _tracebacks('\n'.join(new)), ' | '.join(new)[:300])
        status, _ = arr.k2('GET', '/system/state')
        res.add('iscsi-keys', 'array serves afterwards', status, 200,
                status == 200 and arr.alive())


def _open_connections(socks):
    """How many of ``socks`` the target has not closed."""
    open_ = 0
    for s in socks:
        try:
            s.setblocking(False)
            if s.recv(1) == b'':
                continue
        except BlockingIOError:
            pass
        except OSError:
            continue
        open_ += 1
    return open_


def probe_iscsi_hold(res):
    """Connections, login time and buffers one local process can hold."""
    with Array() as arr:
        socks = []
        try:
            for _n in range(200):
                socks.append(socket.create_connection(arr.portal, 10))
            time.sleep(1)
            open_ = _open_connections(socks)
        finally:
            for s in socks:
                s.close()
        res.add('iscsi-hold', 'connections kept open of 200', open_,
                '<= 128', open_ <= 128)
        time.sleep(1)
        # A connection that never logs in.
        s = socket.create_connection(arr.portal, 10)
        s.settimeout(60)
        started = time.monotonic()
        with contextlib.suppress(OSError):
            s.recv(1)
        waited = time.monotonic() - started
        s.close()
        res.add('iscsi-hold', 'silent connection closed after (s)',
                round(waited, 1), '<= 20', waited <= 20)
        # Mapped initiators that announce 4 MiB writes and send no data.
        k2 = K2(arr)
        name = INITIATOR % 'hold'
        host = k2.host('hold', name)
        _group, vol = k2.volume('hold', 1)
        lun = k2.map(host, '/volumes/%d' % vol['id'])
        base = arr.status('VmHWM')
        peers, answers = [], {}
        try:
            for _n in range(48):
                ini = RawInitiator(arr.portal, name, timeout=30)
                peers.append(ini)
                if ini.login(arr.info['iqn']):
                    answers['login refused'] = answers.get(
                        'login refused', 0) + 1
                    continue
                ini.write16(0, 8192, 4 * MiB, lun=lun)
                reply = ini.recv()
                kind = ('none' if reply is None else
                        'R2T' if reply[0][0] & 0x3f == OP_R2T else
                        'status 0x%02x' % reply[0][3])
                answers[kind] = answers.get(kind, 0) + 1
            grown = arr.status('VmHWM') - base
        finally:
            for ini in peers:
                ini.close()
        res.add('iscsi-hold', 'peak RSS growth, 48 x 4 MiB writes held '
                '(MiB)', round(grown / MiB), '<= 160', grown <= 160 * MiB,
                str(answers))
        res.add('iscsi-hold', 'writes answered', str(answers),
                'R2T up to the budget, then BUSY', 'status 0x08' in answers)


def probe_rest_edge(res):
    with Array() as arr:
        url = urllib.parse.urlsplit(arr.info['k2'])
        lin = urllib.parse.urlsplit(arr.info['linstor'])
        lin_tls = lin.scheme == 'https'
        cases = []
        cases.append(('K2 id above 2^63', lambda: arr.k2(
            'GET', '/volumes/%d' % (1 << 64))))
        deep = '[' * 100000 + ']' * 100000
        cases.append(('K2 JSON nested 100,000 deep', lambda: http_request(
            url.hostname, url.port, 'POST', '/api/v2/volume_groups',
            _auth_headers(arr), deep.encode(), tls=True)))
        cases.append(('K2 Content-Length: abc', lambda: http_request(
            url.hostname, url.port, None, None, None, None, tls=True,
            raw=('POST /api/v2/volume_groups HTTP/1.1\r\nHost: x\r\n'
                 'Content-Length: abc\r\nConnection: close\r\n\r\n{}'
                 ).encode())))

        def lin_raw(data):
            return http_request(lin.hostname, lin.port, 'POST',
                                '/v1/resource-definitions',
                                {'Content-Type': 'application/json'}, data,
                                tls=lin_tls)
        cases.append(('LINSTOR JSON Infinity', lambda: lin_raw(
            b'{"resource_definition": {"name": "x"}, "n": Infinity}')))
        cases.append(('LINSTOR JSON nested 100,000 deep',
                      lambda: lin_raw(deep.encode())))
        # A volume definition grown to 2^70 KiB, then read by an initiator.
        arr.linstor('POST', '/v1/resource-definitions',
                    {'resource_definition': {'name': 'huge'}})
        arr.linstor('POST', '/v1/resource-definitions/huge/'
                    'volume-definitions', {'volume_definition': {
                        'size_kib': 1024}})
        cases.append(('LINSTOR resize to 2^70 KiB', lambda: arr.linstor(
            'PUT', '/v1/resource-definitions/huge/volume-definitions/0',
            {'size_kib': 1 << 70})))
        for name, call in cases:
            log0 = arr.log()
            status, reply = call()
            new = arr.log()[len(log0):]
            ok = 400 <= status < 500 and not _tracebacks(new)
            if name.startswith('LINSTOR resize'):
                # LINSTOR's own refusal: an ApiCallRc error entry
                # (FAIL_INVLD_VLM_SIZE), HTTP 500 as its controller does.
                ok = not _tracebacks(new) and _rc_error(reply)
            res.add('rest-edge', name, status, '4xx, no traceback', ok,
                    '%d tracebacks' % _tracebacks(new))
        # A failed TLS handshake: one log line, no traceback.
        log0 = arr.log()
        with contextlib.suppress(OSError):
            s = socket.create_connection((url.hostname, url.port), 5)
            s.sendall(b'GET / HTTP/1.0\r\n\r\n')
            s.recv(100)
            s.close()
        time.sleep(0.3)
        new = arr.log()[len(log0):]
        res.add('rest-edge', 'failed TLS handshake: log lines',
                len(new.splitlines()), '<= 1, no traceback',
                len(new.splitlines()) <= 1 and not _tracebacks(new))
        status, _ = arr.k2('GET', '/system/state')
        res.add('rest-edge', 'array serves afterwards', status, 200,
                status == 200 and arr.alive())


def _rc_error(reply):
    """Whether a LINSTOR reply is a list of ApiCallRc entries, the first
    an error (the top bits of ret_code).
    """
    return (isinstance(reply, list) and reply and
            isinstance(reply[0], dict) and
            isinstance(reply[0].get('ret_code'), int) and
            reply[0]['ret_code'] < 0)


def _auth_headers(arr):
    import base64
    token = '%s:%s' % (arr.info['user'], arr.info['password'])
    return {'Content-Type': 'application/json',
            'Authorization': 'Basic ' + base64.b64encode(
                token.encode()).decode()}


# -- data-path helpers (qemu's libiscsi initiator) ---------------------------

def _iscsi_url(arr, lun, initiator):
    host, port = arr.portal
    return 'json:' + json.dumps({
        'file.driver': 'iscsi', 'file.transport': 'tcp',
        'file.portal': '%s:%d' % (host, port),
        'file.target': arr.info['iqn'], 'file.lun': lun,
        'file.initiator-name': initiator})


def _qemu_io(target, *commands, timeout=60):
    """qemu-io through libiscsi; a hang is a failure, not a wait."""
    cmd = ['qemu-io', '-f', 'raw']
    for c in commands:
        cmd += ['-c', c]
    try:
        return subprocess.run(cmd + [target], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(
            cmd, -1, '', 'no answer in %d s' % timeout)


def _read_digest(target, offset, length):
    with tempfile.NamedTemporaryFile() as f:
        r = subprocess.run(
            ['qemu-img', 'dd', '-f', 'raw', '-O', 'raw', 'if=' + target,
             'of=' + f.name, 'bs=%d' % length, 'skip=%d' % (offset // length),
             'count=1'], capture_output=True, text=True, timeout=300)
        if r.returncode:
            return 'error: ' + r.stderr.strip()[-200:]
        return hashlib.sha256(f.read()).hexdigest()[:16]


def _write_file(target, path):
    return subprocess.run(['qemu-img', 'convert', '-n', '-f', 'raw', '-O',
                           'raw', path, target], capture_output=True,
                          text=True, timeout=600)


class K2(object):
    """The few K2 REST calls the data-path probes need."""

    def __init__(self, arr):
        self.arr = arr

    def _ok(self, status, reply, what):
        if not 200 <= status < 300:
            raise RuntimeError('%s: %s %s' % (what, status, reply))
        return reply

    def create(self, resource, body):
        return self._ok(*self.arr.k2('POST', '/' + resource, body),
                        'create ' + resource)

    def patch(self, resource, oid, body):
        return self._ok(*self.arr.k2('PATCH', '/%s/%d' % (resource, oid),
                                     body), 'patch ' + resource)

    def search(self, resource, **query):
        q = urllib.parse.urlencode(query)
        reply = self._ok(*self.arr.k2('GET', '/%s?%s' % (resource, q)),
                         'search ' + resource)
        return reply['hits']

    def volume(self, name, size_gib, group=None):
        if group is None:
            group = self.create('volume_groups', {
                'name': name + '-vg', 'is_dedup': True, 'quota': 0})
        vol = self.create('volumes', {
            'name': name, 'size': size_gib * 1024 * 1024,
            'volume_group': {'ref': '/volume_groups/%d' % group['id']}})
        return group, vol

    def host(self, name, initiator):
        host = self.create('hosts', {'name': name, 'type': 'Linux'})
        self.create('host_iqns', {'iqn': initiator,
                                  'host': {'ref': '/hosts/%d' % host['id']}})
        return host

    def map(self, host, ref):
        m = self.create('mappings', {'host': {'ref': '/hosts/%d' % host['id']},
                                     'volume': {'ref': ref}})
        return m['lun']


def probe_isolation(res):
    """A view's writes stay in the view: for a snapshot created exposable
    and for one patched to it after a clone was made from it.
    """
    for patched in (False, True):
        with Array() as arr:
            _isolation(res, arr, patched)


def _isolation(res, arr, patched):
    label = 'patched exposable' if patched else 'exposable at creation'
    k2 = K2(arr)
    ini = INITIATOR % 'isolation'
    host = k2.host('isolation', ini)
    group, vol = k2.volume('iso-src', 1)
    lun = k2.map(host, '/volumes/%d' % vol['id'])
    src = _iscsi_url(arr, lun, ini)
    with tempfile.TemporaryDirectory() as tmp:
        a = os.path.join(tmp, 'a')
        with open(a, 'wb') as f:
            f.write(os.urandom(4 * MiB))
        _write_file(src, a)
    before = _read_digest(src, 0, 4 * MiB)
    snap = k2.create('snapshots', {
        'short_name': 'iso-snap', 'source': {
            'ref': '/volume_groups/%d' % group['id']},
        'retention_policy': {'ref': '/retention_policies/1'},
        'is_exposable': not patched})
    volsnap = k2.search('volsnaps', **{
        'snapshot.ref': '/snapshots/%d' % snap['id']})[0]
    # A clone made from the snapshot before anything is written to it.
    clone = k2.create('volumes', {
        'name': 'iso-clone', 'size': 1024 * 1024,
        'volume_group': {'ref': '/volume_groups/%d' % k2.create(
            'volume_groups', {'name': 'iso-clone-vg', 'is_dedup': True,
                              'quota': 0})['id']},
        'source': {'ref': '/volsnaps/%d' % volsnap['id']}})
    if patched:
        status, reply = arr.k2('PATCH', '/snapshots/%d' % snap['id'],
                               {'is_exposable': True})
        k2._ok(status, reply, 'PATCH is_exposable')
    # Mapped as Cinder's in-tree driver maps a view: by the snapshot ref.
    status, reply = arr.k2('POST', '/mappings', {
        'host': {'ref': '/hosts/%d' % host['id']},
        'volume': {'ref': '/snapshots/%d' % snap['id']}})
    res.add('isolation', 'mapping a view by its snapshot ref (%s)' % label,
            status, '2xx', 200 <= status < 300, str(reply)[:200])
    if not 200 <= status < 300:
        return
    view = _iscsi_url(arr, reply['lun'], ini)
    w = _qemu_io(view, 'write -P 0xa5 0 1M')
    res.add('isolation', 'write to the view accepted (%s)' % label,
            w.returncode == 0, True, w.returncode == 0,
            w.stderr.strip()[-200:])
    written = _read_digest(view, 0, 4 * MiB)
    clun = k2.map(host, '/volumes/%d' % clone['id'])
    for name, url in (('source', src),
                      ('clone', _iscsi_url(arr, clun, ini))):
        digest = _read_digest(url, 0, 4 * MiB)
        res.add('isolation', '%s checksum unchanged by view writes (%s)' % (
            name, label), digest == before, True, digest == before,
            'before %s after %s' % (before, digest))
    res.add('isolation', 'the view reads its own writes (%s)' % label,
            written != before, True, written != before)


def probe_disk_full(res):
    """A 64 MiB tmpfs under the array, filled over iSCSI."""
    if os.geteuid() != 0:
        res.add('disk-full', 'needs root to mount a tmpfs', False, True,
                False)
        return
    mnt = tempfile.mkdtemp(prefix='hostile-full-')
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', mnt],
                   check=True)
    try:
        _disk_full(res, os.path.join(mnt, 'array'), mnt)
    finally:
        subprocess.run(['umount', '-l', mnt])
        os.rmdir(mnt)


def _disk_full(res, data_dir, mnt):
    arr = Array(data_dir=data_dir)
    with arr:
        k2 = K2(arr)
        ini = INITIATOR % 'full'
        host = k2.host('full', ini)
        group, vol = k2.volume('full', 1)
        lun = k2.map(host, '/volumes/%d' % vol['id'])
        target = _iscsi_url(arr, lun, ini)
        with tempfile.NamedTemporaryFile(dir='/var/tmp') as f:
            f.write(os.urandom(256 * MiB))
            f.flush()
            try:
                w = subprocess.run(
                    ['qemu-img', 'convert', '-n', '-f', 'raw', '-O', 'raw',
                     f.name, target], capture_output=True, text=True,
                    timeout=120)
            except subprocess.TimeoutExpired as e:
                w = subprocess.CompletedProcess(
                    e.cmd, -1, '', 'no answer in 120 s (the initiator '
                    'kept reconnecting)')
        dropped = w.returncode == -1 or any(s in w.stderr.lower() for s in (
            'connection', 'reconnect', 'broken pipe', 'timed out'))
        res.add('disk-full', 'write of 256 MiB unique data onto 64 MiB',
                'failed' if w.returncode else 'succeeded', 'failed',
                w.returncode != 0, w.stderr.strip()[-200:])
        res.add('disk-full', 'failure is a SCSI error, not a dropped '
                'connection', not dropped, True, not dropped)
        st1, vols = arr.k2('GET', '/volumes')
        st2, cap = arr.k2('GET', '/system/capacity')
        res.add('disk-full', 'REST answers (volumes, capacity)',
                (st1, st2), (200, 200), st1 == 200 and st2 == 200)
        total = None
        if st2 == 200 and cap.get('hits'):
            total = cap['hits'][0].get('total')
        fs = os.statvfs(mnt)
        res.add('disk-full', 'capacity total (KiB) vs filesystem',
                total, '<= %d' % (fs.f_blocks * fs.f_frsize // 1024),
                total is not None and
                total <= fs.f_blocks * fs.f_frsize // 1024)
        r = _qemu_io(target, 'read 0 1M')
        res.add('disk-full', 'reads still served', r.returncode == 0, True,
                r.returncode == 0, r.stderr.strip()[-200:])
        code = arr.stop()
    res.add('disk-full', 'clean stop exit code', code, 0, code == 0)
    again = Array(data_dir=data_dir)
    try:
        with again:
            status, _ = again.k2('GET', '/system/state')
            res.add('disk-full', 'starts again on the full disk', status,
                    200, status == 200)
    except launch.ArrayProcessError as e:
        res.add('disk-full', 'starts again on the full disk', 'no', 200,
                False, str(e)[-300:])


def _unmap_timed(arr, ini, lun, extents, other):
    """(seconds, SCSI status, worst 4k read on ``other`` meanwhile)."""
    lat, stop = [], threading.Event()

    def other_io():
        while not stop.is_set():
            t = time.monotonic()
            _qemu_io(other, 'read 0 4k', timeout=30)
            lat.append(time.monotonic() - t)
    t = threading.Thread(target=other_io)
    t.start()
    time.sleep(0.5)
    started = time.monotonic()
    ini.unmap(extents, lun)
    reply = ini.recv()
    took = time.monotonic() - started
    stop.set()
    t.join()
    return took, reply[0][3] if reply else None, max(lat) if lat else None


def probe_unmap(res):
    """The largest UNMAP the array advertises: on a nearly empty volume,
    then over 128 MiB of unique data; and the latency of another LUN's
    reads meanwhile.
    """
    with Array() as arr:
        k2 = K2(arr)
        ini_name = INITIATOR % 'unmap'
        host = k2.host('unmap', ini_name)
        _g, big = k2.volume('unmap-big', 1024)
        _g2, other = k2.volume('unmap-other', 1)
        big_lun = k2.map(host, '/volumes/%d' % big['id'])
        big_t = _iscsi_url(arr, big_lun, ini_name)
        other_t = _iscsi_url(arr, k2.map(host, '/volumes/%d' % other['id']),
                             ini_name)
        _qemu_io(big_t, 'write -P 0x11 0 1M')
        ini = RawInitiator(arr.portal, ini_name, timeout=300)
        status = ini.login(arr.info['iqn'], immediate=True)
        if status:
            res.add('unmap', 'login', status, 0, False)
            return
        # Block Limits VPD: 256 descriptors of 2^20 blocks (128 GiB).
        extents = [(n << 20, 1 << 20) for n in range(256)]
        try:
            took, scsi_status, worst = _unmap_timed(arr, ini, big_lun,
                                                    extents, other_t)
            res.add('unmap', 'UNMAP of 256 x 2^20 blocks, empty volume: '
                    'seconds', round(took, 2), '< 2',
                    scsi_status == 0 and took < 2,
                    'SCSI status %s' % scsi_status)
            res.add('unmap', 'worst 4k read on another LUN meanwhile (s)',
                    round(worst, 2) if worst else None, '< 1',
                    worst is not None and worst < 1)
            with tempfile.NamedTemporaryFile(dir='/var/tmp') as f:
                f.write(os.urandom(128 * MiB))
                f.flush()
                _write_file(big_t, f.name)
            took, scsi_status, worst = _unmap_timed(arr, ini, big_lun,
                                                    extents, other_t)
            res.add('unmap', 'the same over 128 MiB of data: seconds',
                    round(took, 2), '< 30', scsi_status == 0 and took < 30,
                    'SCSI status %s' % scsi_status)
            res.add('unmap', 'worst 4k read on another LUN meanwhile (s)',
                    round(worst, 2) if worst else None, '< 1',
                    worst is not None and worst < 1)
            r = _qemu_io(big_t, 'read -P 0 0 128M')
            res.add('unmap', 'unmapped range reads as zeros',
                    r.returncode == 0 and 'verification failed' not in
                    r.stdout, True, r.returncode == 0 and
                    'verification failed' not in r.stdout)
        finally:
            ini.close()


PROBES = {
    'reach': probe_reach, 'pdu-alloc': probe_pdu_alloc,
    'bodies': probe_bodies, 'iscsi-keys': probe_iscsi_keys,
    'iscsi-hold': probe_iscsi_hold,
    'rest-edge': probe_rest_edge, 'isolation': probe_isolation,
    'disk-full': probe_disk_full, 'unmap': probe_unmap,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--only', action='append', choices=sorted(PROBES))
    parser.add_argument('--json', help='write the rows here')
    args = parser.parse_args(argv)
    res = Result()
    for name in args.only or list(PROBES):
        started = time.monotonic()
        try:
            PROBES[name](res)
        except Exception as e:
            res.add(name, 'probe ran', '%s: %s' % (type(e).__name__, e),
                    'ran', False)
        print('%-10s %5.1fs' % (name, time.monotonic() - started),
              file=sys.stderr)
    width = max(len(r['measure']) for r in res.rows)
    for r in res.rows:
        print('%-4s %-10s %-*s %-22s wanted %s%s' % (
            'ok' if r['ok'] else 'FAIL', r['probe'], width, r['measure'],
            r['value'], r['wanted'],
            ('  (%s)' % r['detail']) if r['detail'] and not r['ok'] else ''))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(res.rows, f, indent=1)
    print('%d probes, %d failed' % (len(res.rows), len(res.failed)))
    return 1 if res.failed else 0


if __name__ == '__main__':
    sys.exit(main())
