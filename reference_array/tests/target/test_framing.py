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

"""The target's framing of solicited data, over a real socket pair."""

import os
import socket
import threading

import testtools

from reference_array.target.iscsi import errors
from reference_array.target.iscsi import pdu as pdus
from reference_array.target.iscsi import session
from reference_array.target.iscsi import transport

ITT = 0x1234
Op = pdus.Opcode


def _pdu(opcode, data=b'', itt=ITT, data_sn=0, offset=0):
    pdu = pdus.PDU(data=data)
    pdu.opcode, pdu.flags = opcode, pdus.FINAL
    pdu.data_length = len(data)
    pdu.itt = itt
    pdu.data_sn, pdu.buffer_offset = data_sn, offset
    return pdu.to_bytes()


class CollectTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        ours, self.initiator = socket.socketpair()
        self.addCleanup(ours.close)
        self.addCleanup(self.initiator.close)
        self.initiator.settimeout(10)
        self.session = session.Session(
            None, transport.TCPConnection(ours), 'test')
        self.command = pdus.PDU()
        self.command.opcode = Op.SCSI_COMMAND
        self.command.itt = ITT

    def _collect(self, immediate, total):
        result = {}

        def run():
            try:
                result['data'] = self.session._collect(self.command,
                                                       immediate, total)
            except Exception as e:
                result['error'] = e
        thread = threading.Thread(target=run)
        thread.start()
        self.addCleanup(thread.join, 10)
        r2t = pdus.PDU(bytearray(self._recv(pdus.BHS_LENGTH)))
        self.assertEqual(Op.R2T, r2t.opcode)
        return thread, result, r2t.buffer_offset, r2t.desired_length

    def _recv(self, n):
        data = b''
        while len(data) < n:
            data += self.initiator.recv(n - len(data))
        return data

    def test_data_arrives_in_pieces_around_a_pipelined_command(self):
        data = os.urandom(10001)
        thread, result, offset, length = self._collect(data[:1000], 10001)
        self.assertEqual((1000, 9001), (offset, length))
        nop = _pdu(Op.NOP_OUT, b'ping', itt=0x99)
        self.initiator.sendall(
            nop + _pdu(Op.DATA_OUT, data[1000:6000], offset=1000) +
            _pdu(Op.DATA_OUT, data[6000:], data_sn=1, offset=6000))
        thread.join(10)
        self.assertEqual(data, bytes(result['data']))
        pending = self.session._pending.popleft()
        self.assertEqual((Op.NOP_OUT, 0x99, b'ping'),
                         (pending.opcode, pending.itt, bytes(pending.data)))

    def test_more_data_than_solicited_ends_the_session(self):
        thread, result, offset, length = self._collect(b'', 4096)
        self.initiator.sendall(_pdu(Op.DATA_OUT, bytes(8192)))
        thread.join(10)
        self.assertIsInstance(result['error'], errors.ProtocolError)
        self.assertIn('8192 bytes where 4096 were solicited',
                      str(result['error']))

    def test_data_at_the_wrong_offset_ends_the_session(self):
        thread, result, offset, length = self._collect(b'', 4096)
        self.initiator.sendall(_pdu(Op.DATA_OUT, bytes(4096),
                                    offset=512))
        thread.join(10)
        self.assertIsInstance(result['error'], errors.ProtocolError)
