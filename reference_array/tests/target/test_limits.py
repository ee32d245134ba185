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

"""What a peer can make the target hold, over a real portal on loopback.

Each test would hold the target's memory or connections without bound
if the limit it names were missing: the buffer a session reserves is
recorded and refused above what the command may need.
"""

import select
import socket
import struct
import time

import fixtures
import testtools

from reference_array.target.iscsi import limits
from reference_array.target.iscsi import pdu as pdus
from reference_array.target.iscsi import server
from reference_array.target.iscsi import session
from reference_array.tests.target import test_scsi

TARGET_IQN = 'iqn.2026-01.io.test:target'
MAPPED = 'iqn.2026-01.io.test:mapped'
UNMAPPED = 'iqn.2026-01.io.test:unmapped'
Op = pdus.Opcode
MIB = 1 << 20


class Exports(object):

    iqn = TARGET_IQN

    def __init__(self):
        self.device = test_scsi.MemoryDevice()

    def generation(self):
        return 1

    def resolve(self, initiator):
        return {0: self.device} if initiator == MAPPED else {}

    def chap(self, initiator):
        return None


class Initiator(object):
    """A raw initiator: sends what it is told, reads what comes back."""

    def __init__(self, portal, name=MAPPED):
        self.sock = socket.create_connection(portal, timeout=10)
        self.name = name
        self.cmd_sn = 1
        self.itt = 0

    def close(self):
        self.sock.close()

    def send(self, pdu):
        pdu.data_length = len(pdu.data)
        self.sock.sendall(pdu.to_bytes())

    def recv(self):
        """The next PDU, or None when the target closed the connection."""
        header = self._exact(pdus.BHS_LENGTH)
        if header is None:
            return None
        pdu = pdus.PDU(bytearray(header))
        length = pdu.data_length
        pdu.data = self._exact(length + pdus.pad(length))[:length]
        return pdu

    def _exact(self, n):
        data = b''
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def login(self, **keys):
        pairs = [('InitiatorName', self.name), ('TargetName', TARGET_IQN),
                 ('SessionType', 'Normal'), ('AuthMethod', 'None'),
                 ('ImmediateData', 'Yes')] + list(keys.items())
        pdu = pdus.PDU(data=pdus.build_text(pairs))
        pdu.opcode, pdu.immediate = Op.LOGIN, 1
        pdu.transit, pdu.csg, pdu.nsg = 1, pdus.SECURITY, pdus.FULL_FEATURE
        pdu.isid = bytes([0x80, 0, 0, 0, 0, 1])
        pdu.cmd_sn = self.cmd_sn
        self.send(pdu)
        reply = self.recv()
        assert reply.status_class == 0, reply.status_class
        return reply

    def command(self, cdb, edtl, data=b'', write=True):
        self.itt += 1
        pdu = pdus.PDU(data=data)
        pdu.opcode = Op.SCSI_COMMAND
        pdu.flags = pdus.FINAL | (pdus.WRITE if write else pdus.READ)
        pdu.lun = bytes(8)
        pdu.itt, pdu.expected_length, pdu.cmd_sn = self.itt, edtl, \
            self.cmd_sn
        pdu.cdb = cdb
        self.cmd_sn += 1
        self.send(pdu)

    def nop(self, data=b''):
        pdu = pdus.PDU(data=data)
        pdu.opcode, pdu.immediate, pdu.flags = Op.NOP_OUT, 1, pdus.FINAL
        pdu.itt, pdu.ttt, pdu.cmd_sn = 0x7777, pdus.NO_TAG, self.cmd_sn
        self.send(pdu)


def write16(lba, blocks):
    return bytes([0x8a, 0]) + struct.pack('>QI', lba, blocks) + bytes(2)


class LimitsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # Every buffer the sessions make is recorded; one larger than a
        # command can need (4 MiB) fails the test instead of taking the
        # test machine's memory.
        self.buffers = []
        real = session.Session._buffer

        def buffer(session_self, size):
            self.buffers.append(size)
            if size > 4 * MIB:
                raise MemoryError('a buffer of %d bytes' % size)
            return real(session_self, size)
        self.useFixture(fixtures.MockPatchObject(session.Session, '_buffer',
                                                 buffer))

    def portal(self, **bounds):
        self.limits = limits.Limits(**bounds)
        self.exports = Exports()
        target = server.Target(self.exports, '127.0.0.1', 0,
                               limits=self.limits)
        target.start()
        self.addCleanup(target.stop)
        return target.host, target.port

    def initiator(self, portal, name=MAPPED, login=True):
        ini = Initiator(portal, name)
        self.addCleanup(ini.close)
        if login:
            ini.login()
        return ini

    def test_write_to_a_lun_not_mapped_allocates_nothing(self):
        ini = self.initiator(self.portal(), UNMAPPED)
        ini.command(write16(0, 0xffffffff), 0xffffffff)
        reply = ini.recv()
        self.assertEqual((Op.SCSI_RESPONSE, 0x02),
                         (reply.opcode, reply.status))
        # LOGICAL UNIT NOT SUPPORTED, without a single R2T before it.
        self.assertEqual((0x05, 0x25), (reply.data[2 + 2] & 0x0f,
                                        reply.data[2 + 12]))
        self.assertEqual([], self.buffers)
        self.assertEqual(0, self.limits.buffers.peak)

    def test_write_out_of_range_allocates_nothing(self):
        ini = self.initiator(self.portal())
        device = self.exports.device
        # Past the end; a length no LUN has; longer than one command may
        # move (8192 blocks), on a LUN large enough for it.
        for lba, count, blocks, asc in ((device.blocks - 1, 2, 2048, 0x21),
                                        (0, 0xffffffff, 2048, 0x21),
                                        (0, 8193, 1 << 40, 0x24)):
            device.blocks = blocks
            ini.command(write16(lba, count), min(count * 512, 0xffffffff))
            reply = ini.recv()
            self.assertEqual((Op.SCSI_RESPONSE, 0x02, asc),
                             (reply.opcode, reply.status,
                              reply.data[2 + 12]))
        self.assertEqual([], self.buffers)

    def test_write_to_a_read_only_lun_allocates_nothing(self):
        ini = self.initiator(self.portal())
        self.exports.device.read_only = True
        ini.command(write16(0, 8), 4096)
        reply = ini.recv()
        self.assertEqual((Op.SCSI_RESPONSE, 0x07),
                         (reply.opcode, reply.data[2 + 2] & 0x0f))
        self.assertEqual([], self.buffers)

    def test_a_good_write_still_lands(self):
        ini = self.initiator(self.portal())
        ini.command(write16(8, 256), 256 * 512)
        r2t = ini.recv()
        self.assertEqual((Op.R2T, 0, 131072),
                         (r2t.opcode, r2t.buffer_offset, r2t.desired_length))
        out = pdus.PDU(data=b'\x5a' * 131072)
        out.opcode, out.flags, out.itt = Op.DATA_OUT, pdus.FINAL, ini.itt
        out.ttt = r2t.ttt
        ini.send(out)
        reply = ini.recv()
        self.assertEqual((Op.SCSI_RESPONSE, 0), (reply.opcode, reply.status))
        self.assertEqual(b'\x5a' * 131072,
                         self.exports.device.data[4096:4096 + 131072])
        self.assertEqual([131072], self.buffers)
        self.assertEqual((131072, 0), (self.limits.buffers.peak,
                                       self.limits.buffers.held))

    def test_immediate_data_beyond_the_first_burst_is_rejected(self):
        ini = self.initiator(self.portal())
        # FirstBurstLength is 65536: 128 KiB of immediate data is more.
        ini.command(write16(0, 256), 256 * 512, data=bytes(131072))
        reply = ini.recv()
        self.assertEqual((Op.REJECT, pdus.PROTOCOL_ERROR),
                         (reply.opcode, reply.reason))
        self.assertEqual([], self.buffers)
        self.assertEqual([], self.exports.device.calls)

    def test_buffers_of_all_connections_are_bounded(self):
        portal = self.portal(buffer_budget=MIB, buffer_wait=0.2)
        first = self.initiator(portal)
        first.command(write16(0, 2048), MIB)
        self.assertEqual(Op.R2T, first.recv().opcode)
        # The first connection holds the whole budget and sends no data:
        # the second one's write is answered BUSY, not buffered.
        second = self.initiator(portal)
        second.command(write16(0, 2048), MIB)
        reply = second.recv()
        self.assertEqual((Op.SCSI_RESPONSE, 0x08),
                         (reply.opcode, reply.status))
        self.assertEqual([MIB], self.buffers)
        # Small commands are not counted and never wait.
        second.command(write16(0, 8), 4096, data=bytes(4096))
        self.assertEqual(0, second.recv().status)

    def test_pdus_queued_during_a_solicited_write_are_bounded(self):
        ini = self.initiator(self.portal())
        ini.command(write16(0, 256), 256 * 512)
        self.assertEqual(Op.R2T, ini.recv().opcode)
        # Three command windows of pings, each with 4 KiB of data.  The
        # target may end the connection before the last of them is sent.
        for _n in range(96):
            try:
                ini.nop(bytes(4096))
            except (BrokenPipeError, ConnectionResetError):
                break
        # The target ends the connection instead of queueing without end.
        self.assertIsNone(ini.recv())

    def test_connections_are_capped(self):
        portal = self.portal(max_connections=2)
        first = self.initiator(portal)
        self.initiator(portal)
        third = self.initiator(portal, login=False)
        self.assertIsNone(third.recv())
        # A freed slot is usable again.
        first.close()
        for _n in range(50):
            if self.limits.connections < 2:
                break
            time.sleep(0.05)
        self.initiator(portal)

    def test_login_must_end_in_time_however_slowly_bytes_come(self):
        portal = self.portal(login_timeout=1.0)
        ini = self.initiator(portal, login=False)
        login = pdus.PDU(data=pdus.build_text([
            ('InitiatorName', MAPPED), ('TargetName', TARGET_IQN),
            ('AuthMethod', 'None')]))
        login.opcode, login.immediate = Op.LOGIN, 1
        login.data_length = len(login.data)
        # A byte every 0.1 s: the header alone would take 4.8 s.
        sent = 0
        for byte in login.to_bytes():
            try:
                ini.sock.sendall(bytes([byte]))
            except OSError:
                break
            sent += 1
            if select.select([ini.sock], [], [], 0.1)[0]:
                break
        self.assertIsNone(ini.recv())
        self.assertLess(sent, pdus.BHS_LENGTH)
