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

"""The login phase: identity, CHAP, stages, and refusals on the wire."""

import hashlib
import socket
import threading

import testtools

from reference_array.target.iscsi import errors
from reference_array.target.iscsi import login
from reference_array.target.iscsi import params
from reference_array.target.iscsi import pdu as pdus
from reference_array.target.iscsi import session
from reference_array.target.iscsi import transport

TARGET_IQN = 'iqn.2026-01.io.test:target'
INITIATOR = 'iqn.2026-01.io.test:host'
Op = pdus.Opcode
LoginFailed = errors.LoginFailed


class FakeExports(object):

    def __init__(self, chap=None):
        self.iqn = TARGET_IQN
        self.credentials = chap
        self.asked = []

    def chap(self, initiator):
        self.asked.append(initiator)
        return self.credentials


def request(pairs, csg=pdus.SECURITY, nsg=pdus.OPERATIONAL, transit=True,
            itt=1):
    data = pdus.build_text(pairs)
    pdu = pdus.PDU(data=data)
    pdu.opcode, pdu.immediate = Op.LOGIN, 1
    pdu.transit, pdu.csg, pdu.nsg = int(transit), csg, nsg
    pdu.isid = bytes([0x80, 0, 0, 0, 0, 1])
    pdu.itt, pdu.data_length = itt, len(data)
    return pdu


def first(**extra):
    pairs = [('InitiatorName', INITIATOR), ('TargetName', TARGET_IQN),
             ('SessionType', 'Normal')]
    return pairs + list(extra.items())


def chap_response(identifier, secret, challenge):
    return '0x' + hashlib.md5(bytes([identifier]) + secret.encode() +
                              challenge).hexdigest()


class LoginTestCase(testtools.TestCase):

    def _login(self, chap=None):
        self.exports = FakeExports(chap)
        self.negotiated = params.Negotiated()
        return login.Login(self.exports, self.negotiated)

    def _refused(self, state, pdu, detail):
        e = self.assertRaises(LoginFailed, state.step, pdu)
        self.assertEqual((2, detail), (e.status_class, e.detail))
        return e

    def test_without_chap_straight_to_full_feature(self):
        state = self._login()
        reply, transit = state.step(request(
            first(AuthMethod='None', MaxBurstLength='16384'),
            nsg=pdus.FULL_FEATURE))
        self.assertTrue(transit)
        self.assertEqual([('AuthMethod', 'None'),
                          ('MaxBurstLength', '16384'),
                          ('TargetPortalGroupTag', '1')], reply)
        self.assertEqual((INITIATOR, False, 16384),
                         (state.initiator, state.discovery,
                          self.negotiated.max_burst))

    def test_identity_of_the_first_request(self):
        self._refused(self._login(), request([('TargetName', TARGET_IQN)]),
                      LoginFailed.MISSING_PARAMETER)
        self._refused(self._login(), request(
            [('InitiatorName', INITIATOR), ('TargetName', 'iqn.x:other')]),
            LoginFailed.NOT_FOUND)
        continued = request(first())
        continued.flags |= pdus.CONTINUE
        self._refused(self._login(), continued, LoginFailed.MISCELLANEOUS)

    def test_discovery_needs_no_target_name_nor_chap(self):
        state = self._login(chap=('user', 'secretsecret12'))
        reply, transit = state.step(request(
            [('InitiatorName', INITIATOR), ('SessionType', 'Discovery'),
             ('AuthMethod', 'None')], nsg=pdus.FULL_FEATURE))
        self.assertTrue(transit and state.discovery)
        self.assertEqual([('AuthMethod', 'None')], reply)
        self.assertEqual([], self.exports.asked)

    def test_chap(self):
        state = self._login(chap=('user', 'secretsecret12'))
        reply, transit = state.step(request(first(AuthMethod='CHAP,None')))
        self.assertEqual(([('AuthMethod', 'CHAP')], False), (reply, transit))
        reply, transit = state.step(request([('CHAP_A', '7,5')]))
        offer = dict(reply)
        self.assertEqual('5', offer['CHAP_A'])
        self.assertFalse(transit)
        response = chap_response(int(offer['CHAP_I']), 'secretsecret12',
                                 bytes.fromhex(offer['CHAP_C'][2:]))
        reply, transit = state.step(request(
            [('CHAP_N', 'user'), ('CHAP_R', response)]))
        self.assertEqual(([], True), (reply, transit))
        reply, transit = state.step(request(
            [('MaxBurstLength', '8192')], csg=pdus.OPERATIONAL,
            nsg=pdus.FULL_FEATURE))
        self.assertEqual([('MaxBurstLength', '8192'),
                          ('TargetPortalGroupTag', '1')], reply)

    def test_chap_refusals(self):
        secret = 'secretsecret12'
        state = self._login(chap=('user', secret))
        self._refused(state, request(first(AuthMethod='None')),
                      LoginFailed.AUTHENTICATION)
        state = self._login(chap=('user', secret))
        state.step(request(first(AuthMethod='CHAP')))
        self._refused(state, request([('CHAP_N', 'user'),
                                      ('CHAP_R', '0x00')]),
                      LoginFailed.AUTHENTICATION)
        self._refused(state, request([('CHAP_A', '7')]),
                      LoginFailed.AUTHENTICATION)
        offer = dict(state.step(request([('CHAP_A', '5')]))[0])
        good = chap_response(int(offer['CHAP_I']), secret,
                             bytes.fromhex(offer['CHAP_C'][2:]))
        for pairs in ([('CHAP_N', 'other'), ('CHAP_R', good)],
                      [('CHAP_N', 'user'), ('CHAP_R', 'zz')],
                      [('CHAP_N', 'user'), ('CHAP_R', good),
                       ('CHAP_I', '1'), ('CHAP_C', '0x00')]):
            self._refused(state, request(pairs), LoginFailed.AUTHENTICATION)
        # Skipping security to operational keys is refused as well.
        state = self._login(chap=('user', secret))
        state.step(request(first(AuthMethod='CHAP')))
        self._refused(state, request([], csg=pdus.OPERATIONAL,
                                     nsg=pdus.FULL_FEATURE),
                      LoginFailed.AUTHENTICATION)

    def test_malformed_operational_value(self):
        e = self._refused(self._login(), request(
            first(AuthMethod='None', MaxRecvDataSegmentLength='lots')),
            LoginFailed.MISCELLANEOUS)
        self.assertIn('MaxRecvDataSegmentLength', str(e))


class LoginOnTheWireTestCase(testtools.TestCase):
    """A refused login answers a Login Response and ends quietly."""

    class Target(object):
        exports = FakeExports()
        host, port = '127.0.0.1', 3260

        def next_tsih(self):
            return 1

    def _run(self, *requests):
        ours, initiator = socket.socketpair()
        self.addCleanup(ours.close)
        self.addCleanup(initiator.close)
        initiator.settimeout(10)
        outcome = {}

        def run():
            try:
                session.Session(self.Target(), transport.TCPConnection(ours),
                                'test').run()
                outcome['ended'] = True
            except Exception as e:
                outcome['error'] = e
        thread = threading.Thread(target=run)
        thread.start()
        initiator.sendall(b''.join(r.to_bytes() for r in requests))
        replies = []
        for _r in requests:
            header = self._recv(initiator, pdus.BHS_LENGTH)
            if not header:
                break
            reply = pdus.PDU(bytearray(header))
            reply.data = self._recv(initiator, reply.data_length +
                                    pdus.pad(reply.data_length))
            replies.append(reply)
        thread.join(10)
        self.assertEqual({'ended': True}, outcome)
        return replies

    def _recv(self, sock, n):
        data = b''
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                break
            data += chunk
        return data

    def test_values_that_are_not_numbers_or_out_of_range(self):
        for key, value in (('MaxBurstLength', 'abc'),
                           ('MaxRecvDataSegmentLength', '100'),
                           ('FirstBurstLength', '16777216'),
                           ('ImmediateData', 'Maybe'),
                           ('ErrorRecoveryLevel', '-1')):
            replies = self._run(request(first(AuthMethod='None',
                                              **{key: value})))
            self.assertEqual(1, len(replies))
            reply = replies[0]
            self.assertEqual((Op.LOGIN_RESPONSE, 2, 0, 0),
                             (reply.opcode, reply.status_class,
                              reply.status_detail, reply.transit), key)

    def test_good_login_then_logout(self):
        logout = pdus.PDU()
        logout.opcode, logout.immediate, logout.itt = Op.LOGOUT, 1, 9
        replies = self._run(request(first(AuthMethod='None'),
                                    nsg=pdus.FULL_FEATURE), logout)
        login_reply, logout_reply = replies
        self.assertEqual((Op.LOGIN_RESPONSE, 0, 1, pdus.FULL_FEATURE, 1),
                         (login_reply.opcode, login_reply.status_class,
                          login_reply.transit, login_reply.nsg,
                          login_reply.tsih))
        self.assertEqual((Op.LOGOUT_RESPONSE, 0, 9),
                         (logout_reply.opcode, logout_reply.response,
                          logout_reply.itt))
