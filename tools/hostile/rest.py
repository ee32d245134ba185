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

"""REST probes: unauthenticated reach, request bodies, odd input,
connections held.
"""

import contextlib
import json
import os
import socket
import threading
import time
import urllib.parse

from reference_array.http import server as http_server
from tools.hostile import array
from tools.hostile import results

MiB = array.MiB
# Connections the holding probe opens on each REST port: more than the
# array holds open at once.
HOLD = http_server.MAX_CONNECTIONS + 32


def probe_reach(res):
    """Requests without credentials that are answered with success: on an
    array with default flags, and on one started with fault injection and
    LINSTOR authentication (basic) on.
    """
    for flags in ([], ['--fault-injection', '--linstor-auth', 'basic']):
        with array.Array(args=flags) as arr:
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
            status, _ = array.http_request(
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


def probe_bodies(res):
    """30 unauthenticated 16 MiB bodies, sent at once."""
    with array.Array() as arr:
        url = urllib.parse.urlsplit(arr.info['k2'])
        rss0 = arr.status('VmRSS')
        body = os.urandom(16 * MiB)
        statuses = []

        def one():
            status, _ = array.http_request(
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


def probe_rest_edge(res):
    with array.Array() as arr:
        url = urllib.parse.urlsplit(arr.info['k2'])
        lin = urllib.parse.urlsplit(arr.info['linstor'])
        lin_tls = lin.scheme == 'https'
        cases = []
        cases.append(('K2 id above 2^63', lambda: arr.k2(
            'GET', '/volumes/%d' % (1 << 64))))
        deep = '[' * 100000 + ']' * 100000
        http = array.http_request
        cases.append(('K2 JSON nested 100,000 deep', lambda: http(
            url.hostname, url.port, 'POST', '/api/v2/volume_groups',
            arr.auth_headers(), deep.encode(), tls=True)))
        cases.append(('K2 Content-Length: abc', lambda: http(
            url.hostname, url.port, None, None, None, None, tls=True,
            raw=('POST /api/v2/volume_groups HTTP/1.1\r\nHost: x\r\n'
                 'Content-Length: abc\r\nConnection: close\r\n\r\n{}'
                 ).encode())))

        def lin_raw(data):
            return http(lin.hostname, lin.port, 'POST',
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
            ok = 400 <= status < 500 and not results.tracebacks(new)
            if name.startswith('LINSTOR resize'):
                # LINSTOR's own refusal: an ApiCallRc error entry
                # (FAIL_INVLD_VLM_SIZE), HTTP 500 as its controller does.
                ok = not results.tracebacks(new) and _rc_error(reply)
            res.add('rest-edge', name, status, '4xx, no traceback', ok,
                    '%d tracebacks' % results.tracebacks(new))
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
                len(new.splitlines()) <= 1 and not results.tracebacks(new))
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


def _held(host, port, tls, trickle):
    """A connection that never sends a request (after the TLS handshake,
    on a TLS port), or only its first byte.
    """
    sock = socket.create_connection((host, port), timeout=10)
    if tls:
        sock = array.unverified_tls(sock)
    if trickle:
        sock.sendall(b'G')
    return sock


def probe_rest_hold(res):
    """One local process opens more connections than a REST port holds
    open at once, half of them silent, half sending one byte of a request;
    a client with credentials must still be answered on a fresh
    connection, within the array's wait for a slot.
    """
    with array.Array() as arr:
        k2 = urllib.parse.urlsplit(arr.info['k2'])
        lin = urllib.parse.urlsplit(arr.info['linstor'])
        ports = (('K2', k2.hostname, k2.port, True, '/api/v2/system/state',
                  arr.auth_headers()),
                 ('LINSTOR', lin.hostname, lin.port,
                  lin.scheme == 'https', '/v1/nodes', {}))
        threads0 = arr.threads()
        for name, host, port, tls, path, headers in ports:
            held = []
            try:
                for n in range(HOLD):
                    with contextlib.suppress(OSError):
                        held.append(_held(host, port, tls, n % 2))
                # Past the grace a request's first byte gets (5 s).
                time.sleep(5.5)
                peak = arr.threads()
                started = time.monotonic()
                status, _ = array.http_request(host, port, 'GET', path,
                                               headers, None, tls=tls)
                took = time.monotonic() - started
            finally:
                for sock in held:
                    sock.close()
            res.add('rest-hold', '%s answered with %d connections held'
                    % (name, len(held)), status, 200,
                    status == 200 and took < 5.0, 'in %.2f s' % took)
            most = http_server.MAX_CONNECTIONS + 2
            res.add('rest-hold', '%s array threads while held' % name,
                    peak - threads0, '<= %d' % most, peak - threads0 <= most)
        status, _ = arr.k2('GET', '/system/state')
        res.add('rest-hold', 'array serves afterwards', status, 200,
                status == 200 and arr.alive())
