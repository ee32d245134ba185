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

"""Writes whose data a connection's native loop solicits at once.

A write larger than its immediate data has the rest asked for with R2Ts.
The loop asks for several writes' data at once (each its own buffer) and
stages them in command order; other PDUs wait until they are staged. A
raw initiator on a socket pair drives the loop over a real engine.
"""

import os
import select
import time

from reference_array.target.iscsi import pdu as pdus
from reference_array.tests.target import test_connection_flow
from reference_array.tests.target import test_scsi

Op = pdus.Opcode
BHS = pdus.BHS_LENGTH
KIB = 1024
# Each write: 4 KiB with its command, the rest solicited in one burst.
WRITE = 64 * KIB
IMMEDIATE = 4 * KIB
SOLICITED_MAX = 8
# The task attribute initiators send.
SIMPLE = 1


class SolicitedWritesTestCase(test_connection_flow.ConnectionHarness):

    def setUp(self):
        super().setUp()
        self.inbox = b''

    def command(self, lba, data):
        """A WRITE (10) of ``data`` with its first 4 KiB: its ITT."""
        self.initiator.sendall(self.scsi(
            test_scsi.write10(lba, len(data) // 512),
            pdus.WRITE | SIMPLE, len(data), data[:IMMEDIATE]))
        return self.itt - 1

    def read(self, lba, length):
        """A READ (10) of ``length`` bytes: its ITT."""
        self.initiator.sendall(self.scsi(test_scsi.read10(lba, length // 512),
                                         pdus.READ | SIMPLE, length))
        return self.itt - 1

    def data_out(self, r2t, data):
        """The burst ``r2t`` asked for, from the write's ``data``."""
        start = r2t.buffer_offset
        pdu = pdus.PDU(data=data[start:start + r2t.desired_length])
        pdu.opcode, pdu.flags = Op.DATA_OUT, pdus.FINAL
        pdu.lun, pdu.itt, pdu.ttt = bytes(8), r2t.itt, r2t.ttt
        pdu.data_sn, pdu.buffer_offset = 0, start
        pdu.data_length = len(pdu.data)
        self.initiator.sendall(pdu.to_bytes())

    def pdus(self, count=None, wait=5.0):
        """What the loop sent: ``count`` PDUs, or all it sends within
        ``wait`` seconds.
        """
        out = []
        until = time.monotonic() + wait
        while count is None or len(out) < count:
            while len(self.inbox) >= BHS and (count is None or
                                              len(out) < count):
                bhs = bytearray(self.inbox[:BHS])
                whole = BHS + pdus.data_length(bhs)
                whole += pdus.pad(whole)
                if len(self.inbox) < whole:
                    break
                out.append(pdus.PDU(bhs, self.inbox[
                    BHS:BHS + pdus.data_length(bhs)]))
                self.inbox = self.inbox[whole:]
            if count is not None and len(out) >= count:
                break
            left = until - time.monotonic()
            if left <= 0 or not select.select([self.initiator], [], [],
                                              left)[0]:
                break
            self.inbox += self.initiator.recv(1 << 20)
        return out

    def writes(self, count):
        """The loop serving, and ``count`` writes of unique data sent,
        each with its first 4 KiB: (path, thread, result, data, ITTs).
        """
        path = self.path()
        thread, result = self.serve(path)
        written = [os.urandom(WRITE) for _ in range(count)]
        itts = [self.command(n * WRITE // 512, data)
                for n, data in enumerate(written)]
        return path, thread, result, written, itts

    def test_writes_have_their_data_solicited_at_once(self):
        # Before, the loop asked for one write's data and waited for it
        # before it read the next command: a round trip per burst.
        path, thread, result, written, itts = self.writes(3)
        r2ts = self.pdus(wait=2.0)
        self.assertEqual([(Op.R2T, itt, IMMEDIATE, WRITE - IMMEDIATE)
                          for itt in itts],
                         [(r.opcode, r.itt, r.buffer_offset,
                           r.desired_length) for r in r2ts])
        # The data comes last write first: each is answered in command
        # order, once its own data and that of the writes before it are
        # here.
        for r2t in reversed(r2ts):
            self.data_out(r2t, written[r2ts.index(r2t)])
        replies = self.pdus(3)
        self.assertEqual([(Op.SCSI_RESPONSE, 0, itt) for itt in itts],
                         [(r.opcode, r.status, r.itt) for r in replies])
        self.stop(thread, result)
        stats = path.stats()
        self.assertEqual((3, 3, 3, 0), (
            stats['writes'], stats['solicited'], stats['solicited_peak'],
            stats['collected']))
        self.assertEqual(b''.join(written),
                         self.engine.read(self.layer, 0, 3 * WRITE))

    def test_at_most_eight_are_solicited_then_the_rest_waits(self):
        path, thread, result, written, itts = self.writes(SOLICITED_MAX + 2)
        r2ts = self.pdus(wait=2.0)
        # The last two wait, held back, with no buffer of their own.
        self.assertEqual(itts[:SOLICITED_MAX], [r.itt for r in r2ts])
        for r2t in r2ts:
            self.data_out(r2t, written[itts.index(r2t.itt)])
        replies = self.pdus(SOLICITED_MAX + 1)
        self.assertEqual([Op.SCSI_RESPONSE] * SOLICITED_MAX + [Op.R2T],
                         [r.opcode for r in replies])
        last = [replies[-1]] + self.pdus(1)
        self.assertEqual([Op.R2T, Op.R2T], [r.opcode for r in last])
        for r2t in last:
            self.data_out(r2t, written[itts.index(r2t.itt)])
        self.assertEqual([Op.SCSI_RESPONSE] * 2,
                         [r.opcode for r in self.pdus(2)])
        self.stop(thread, result)
        self.assertEqual(SOLICITED_MAX, path.stats()['solicited_peak'])
        self.assertEqual(b''.join(written), self.engine.read(
            self.layer, 0, len(written) * WRITE))

    def test_a_read_runs_after_the_writes_before_it(self):
        path = self.path()
        thread, result = self.serve(path)
        old = os.urandom(WRITE)
        self.initiator.sendall(self.write(0, old))
        self.assertEqual([Op.SCSI_RESPONSE],
                         [r.opcode for r in self.pdus(1)])
        new = os.urandom(WRITE)
        itt = self.command(0, new)
        (r2t,) = self.pdus(1)
        read_itt = self.read(0, WRITE)
        # The read is held back while the write's data is awaited.
        self.assertEqual([], self.pdus(wait=0.5))
        self.data_out(r2t, new)
        replies = self.pdus(wait=2.0)
        self.assertEqual((Op.SCSI_RESPONSE, itt),
                         (replies[0].opcode, replies[0].itt))
        self.assertEqual({read_itt}, {r.itt for r in replies[1:]})
        self.assertEqual(new, b''.join(r.data for r in replies[1:]))
        self.stop(thread, result)

    def test_writes_go_back_to_the_session_in_command_order(self):
        # What the session resolved changed while their data came: each
        # write goes back to the session with its data and its own
        # CmdSN, once no write waits for data here.
        path, thread, result, written, itts = self.writes(2)
        r2ts = self.pdus(2)
        with self.engine.lock:
            self.engine._native.bump_epoch()
        for r2t, data in zip(r2ts, written):
            self.data_out(r2t, data)
        thread.join(30)
        stat_sn, cmd_sn, unread, collected, error = result['out']
        self.assertEqual((0, b'', None), (cmd_sn, unread, error))
        header, data = collected
        self.assertEqual((itts[0], written[0]),
                         (pdus.PDU(bytearray(header)).itt, data))
        # The session runs it (CmdSN 0) and gives the loop the rest.
        stat_sn, cmd_sn, unread, collected, error = path.serve(
            stat_sn, 1, b'')
        self.assertEqual((1, b'', None), (cmd_sn, unread, error))
        header, data = collected
        self.assertEqual((itts[1], written[1]),
                         (pdus.PDU(bytearray(header)).itt, data))
        self.assertEqual((2, 2, 0), (
            path.stats()['collected'], path.stats()['collected_epoch'],
            path.stats()['writes']))

    def test_data_out_for_a_task_not_solicited_ends_the_session(self):
        path = self.path()
        thread, result = self.serve(path)
        self.command(0, os.urandom(WRITE))
        (r2t,) = self.pdus(1)
        r2t.itt += 100
        self.data_out(r2t, bytes(WRITE))
        thread.join(30)
        self.assertEqual('Data-Out for a task not solicited',
                         result['out'][4])
