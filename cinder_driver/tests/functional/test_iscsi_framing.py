"""The target's framing of solicited data, over a real socket pair."""

import os
import socket
import struct
import threading

import testtools

from reference_array import iscsi

ITT = 0x1234


def _pdu(opcode, data=b'', itt=ITT, data_sn=0, offset=0):
    bhs = bytearray(iscsi.BHS)
    bhs[0], bhs[1] = opcode, 0x80
    bhs[5:8] = len(data).to_bytes(3, 'big')
    struct.pack_into('>I', bhs, 16, itt)
    struct.pack_into('>II', bhs, 36, data_sn, offset)
    return bytes(bhs) + data + bytes(iscsi._pad(len(data)))


class CollectTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        ours, self.initiator = socket.socketpair()
        self.addCleanup(ours.close)
        self.addCleanup(self.initiator.close)
        self.initiator.settimeout(10)
        self.session = iscsi.Session(None, ours, 'test')
        command = bytearray(iscsi.BHS)
        command[0] = iscsi.OP_SCSI_CMD
        struct.pack_into('>I', command, 16, ITT)
        self.command = iscsi.PDU(command)

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
        r2t = self._recv(iscsi.BHS)
        self.assertEqual(iscsi.OP_R2T, r2t[0] & 0x3f)
        offset, length = struct.unpack_from('>II', r2t, 40)
        return thread, result, offset, length

    def _recv(self, n):
        data = b''
        while len(data) < n:
            data += self.initiator.recv(n - len(data))
        return data

    def test_data_arrives_in_pieces_around_a_pipelined_command(self):
        data = os.urandom(10001)
        thread, result, offset, length = self._collect(data[:1000], 10001)
        self.assertEqual((1000, 9001), (offset, length))
        nop = _pdu(iscsi.OP_NOP_OUT, b'ping', itt=0x99)
        self.initiator.sendall(
            nop + _pdu(iscsi.OP_DATA_OUT, data[1000:6000], offset=1000) +
            _pdu(iscsi.OP_DATA_OUT, data[6000:], data_sn=1, offset=6000))
        thread.join(10)
        self.assertEqual(data, bytes(result['data']))
        pending = self.session._pending.popleft()
        self.assertEqual((iscsi.OP_NOP_OUT, 0x99, b'ping'),
                         (pending.opcode, pending.itt, bytes(pending.data)))

    def test_more_data_than_solicited_ends_the_session(self):
        thread, result, offset, length = self._collect(b'', 4096)
        self.initiator.sendall(_pdu(iscsi.OP_DATA_OUT, bytes(8192)))
        thread.join(10)
        self.assertIsInstance(result['error'], iscsi.ProtocolError)
        self.assertIn('8192 bytes where 4096 were solicited',
                      str(result['error']))

    def test_data_at_the_wrong_offset_ends_the_session(self):
        thread, result, offset, length = self._collect(b'', 4096)
        self.initiator.sendall(_pdu(iscsi.OP_DATA_OUT, bytes(4096),
                                    offset=512))
        thread.join(10)
        self.assertIsInstance(result['error'], iscsi.ProtocolError)
