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

"""iSCSI target probes: buffers, login keys, what a process can hold.

Buffers the array reserves per unauthenticated PDU, login keys out of
range or order, connections and buffers one local process can make the
target hold.
"""

import contextlib
import socket
import time

from tools.hostile import array
from tools.hostile import initiator
from tools.hostile import k2_rest
from tools.hostile import results

MiB = array.MiB


def _login_unmapped(arr, name):
    ini = initiator.RawInitiator(arr.portal, array.INITIATOR % name)
    status = ini.login(arr.info['iqn'])
    return ini, status


def probe_pdu_alloc(res):
    """Memory the array commits per WRITE from an unmapped initiator.

    PDUs go one at a time and stop as soon as one costs more than 256 MiB,
    so that the probe cannot exhaust the machine it runs on.
    """
    with array.Array() as arr:
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


def probe_iscsi_keys(res):
    cases = [
        ('MaxBurstLength=0', [('MaxBurstLength', '0')]),
        ('MaxRecvDataSegmentLength=abc',
         [('MaxRecvDataSegmentLength', 'abc')]),
        ('FirstBurstLength=-1', [('FirstBurstLength', '-1')]),
        ('MaxBurstLength=2^40', [('MaxBurstLength', str(1 << 40))]),
    ]
    with array.Array() as arr:
        for name, keys in cases:
            log0 = arr.log()
            ini = initiator.RawInitiator(arr.portal, array.INITIATOR % 'keys')
            status = ini.login(arr.info['iqn'], keys)
            r2ts = 0
            if status == 0:
                # Accepted: a write must not be answered by endless R2Ts.
                ini.write16(0, 8, 4096)
                deadline = time.monotonic() + 2
                while time.monotonic() < deadline:
                    reply = ini.recv()
                    if reply is None or reply[0][0] & 0x3f != initiator.OP_R2T:
                        break
                    r2ts += 1
            ini.close()
            time.sleep(0.2)
            new = results.new_lines(arr, log0)
            ok = ((status != 0 or r2ts <= 1) and len(new) <= 1 and
                  not results.tracebacks('\n'.join(new)))
            res.add('iscsi-keys', name, 'status class %s, %d R2T, %d log '
                    'lines' % (status, r2ts, len(new)),
                    'reject or sane; one log line', ok, ' | '.join(new)[:300])
        # CHAP_N before CHAP_A, in the security stage of a host that
        # needs CHAP.
        k2 = k2_rest.K2(arr)
        profile = k2.create('host_auth_profiles', {
            'name': 'chap', 'auth_type': 'CHAP', 'username': 'probe',
            'secret': 'probe-secret-12'})
        host = k2.create('hosts', {'name': 'chap', 'type': 'Linux',
                                   'host_auth_profile': {
                                       'ref': '/host_auth_profiles/%d' %
                                       profile['id']}})
        k2.create('host_iqns', {'iqn': array.INITIATOR % 'chap',
                                'host': {'ref': '/hosts/%d' % host['id']}})
        log0 = arr.log()
        ini = initiator.RawInitiator(arr.portal, array.INITIATOR % 'chap')
        reply = ini.login_pdu([('InitiatorName', ini.name),
                               ('SessionType', 'Normal'),
                               ('TargetName', arr.info['iqn']),
                               ('AuthMethod', 'CHAP')], 0, 1, False)
        reply = ini.login_pdu([('CHAP_N', 'probe'), ('CHAP_R', '0x00')],
                              0, 1, False)
        ini.close()
        time.sleep(0.2)
        new = results.new_lines(arr, log0)
        refused = reply is not None and reply[0][36] == 2
        res.add('iscsi-keys', 'CHAP_N before CHAP_A (CHAP host)',
                'login refused' if refused else 'answered' if reply
                else 'hung up', 'a login reject, one log line',
                refused and len(new) <= 1 and
                not results.tracebacks('\n'.join(new)), ' | '.join(new)[:300])
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
    with array.Array() as arr:
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
        k2 = k2_rest.K2(arr)
        name = array.INITIATOR % 'hold'
        host = k2.host('hold', name)
        _group, vol = k2.volume('hold', 1)
        lun = k2.map(host, '/volumes/%d' % vol['id'])
        base = arr.status('VmHWM')
        peers, answers = [], {}
        try:
            for _n in range(48):
                ini = initiator.RawInitiator(arr.portal, name, timeout=30)
                peers.append(ini)
                if ini.login(arr.info['iqn']):
                    answers['login refused'] = answers.get(
                        'login refused', 0) + 1
                    continue
                ini.write16(0, 8192, 4 * MiB, lun=lun)
                reply = ini.recv()
                kind = ('none' if reply is None else
                        'R2T' if reply[0][0] & 0x3f == initiator.OP_R2T else
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
        # The native data path solicits several 1 MiB writes at once,
        # each into a buffer of its own: 16 connections announce eight
        # each and send no data. Beyond the buffers all connections share
        # (64 MiB), a connection solicits one write at a time into its
        # own buffer.
        r2ts = 0
        peers = []
        try:
            for n in range(16):
                ini = initiator.RawInitiator(arr.portal, name, timeout=30)
                peers.append(ini)
                if ini.login(arr.info['iqn']):
                    continue
                for k in range(8):
                    ini.write16((n * 8 + k) * 2048, 2048, MiB, lun=lun)
                ini.sock.settimeout(0.5)
                while True:
                    reply = ini.recv()
                    if reply is None or \
                            reply[0][0] & 0x3f != initiator.OP_R2T:
                        break
                    r2ts += 1
        finally:
            for ini in peers:
                ini.close()
        res.add('iscsi-hold', 'R2Ts for 16 x 8 held 1 MiB writes', r2ts,
                '<= 64 + 16', r2ts <= 64 + 16)
