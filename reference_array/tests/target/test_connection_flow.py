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

"""How a connection's native data path spends a stream of 4k writes, by
count: where the writes go, and whether answers wait for a batch.

An initiator keeps writes in flight (an engine over a real database, the
connection's native loop on one end of a socket pair, raw WRITE PDUs on
the other); the loop's own counters (``DataPath.stats``) say what it did.
"""

import os
import select
import socket
import threading
import time

import testtools

from reference_array.core import native_engine
from reference_array import native
from reference_array.target.iscsi import params
from reference_array.target.iscsi import pdu as pdus
from reference_array.tests import engine_fixture
from reference_array.tests.target import test_scsi
from reference_array.tests import test_ingest_shape

Op = pdus.Opcode
BLOCK = 4096
LUN = 0
VOLUME_BLOCKS = 64 * 1024 * 1024 // 512
# A small write-back cache: the stream fills it many times over.
CACHE_CHUNKS = 64
WINDOW = 32


@testtools.skipUnless(native.AVAILABLE, engine_fixture.NO_NATIVE)
class ConnectionHarness(testtools.TestCase):
    """An engine, a connection's native loop and a raw initiator."""

    def setUp(self):
        super().setUp()
        self.engine_class = native_engine.NativeEngine
        engine_fixture.open_engine(self)
        self.engine._dirty_limit = CACHE_CHUNKS * self.engine.chunk
        self.layer = self.engine.new_layer()
        ours, self.initiator = socket.socketpair()
        self.addCleanup(ours.close)
        self.addCleanup(self.initiator.close)
        self.initiator.settimeout(30)
        ours.settimeout(30)
        self.ours = ours
        self.cmd_sn = 0
        self.itt = 0

    def path(self):
        negotiated = params.Negotiated()
        with self.engine.lock:
            # The room the engine grants the data paths (as a write
            # through the engine would).
            self.engine._room(b'')
            self.engine._grant_room()
        path = self.engine.data_path(self.ours.fileno(), 30.0, negotiated)
        path.set_luns(self.engine.epoch, [
            (LUN, tuple(self.engine.chain(self.layer)), VOLUME_BLOCKS,
             False, -1)])
        return path

    def serve(self, path):
        """Run the loop in a thread until it stops at a PDU not its own."""
        result = {}

        def run():
            try:
                result['out'] = path.serve(0, 0, b'')
            except Exception as e:
                result['error'] = e
        thread = threading.Thread(target=run)
        thread.start()
        self.addCleanup(thread.join, 30)
        return thread, result

    def scsi(self, cdb, flags, length, data=b''):
        """A SCSI Command PDU with the next ITT and CmdSN, moving
        ``length`` bytes (``data``: those sent with it).
        """
        pdu = pdus.PDU(data=data)
        pdu.opcode = Op.SCSI_COMMAND
        pdu.flags = pdus.FINAL | flags
        pdu.lun = bytes(8)
        pdu.itt, pdu.expected_length, pdu.cmd_sn = self.itt, length, \
            self.cmd_sn
        pdu.cdb = cdb
        pdu.data_length = len(data)
        self.itt += 1
        self.cmd_sn += 1
        return pdu.to_bytes()

    def write(self, lba, data=None):
        data = os.urandom(BLOCK) if data is None else data
        return self.scsi(test_scsi.write10(lba, len(data) // 512), pdus.WRITE,
                         len(data), data)

    def stop(self, thread, result):
        """A logout request: the loop hands it to the session."""
        pdu = pdus.PDU()
        pdu.opcode, pdu.immediate, pdu.flags = Op.LOGOUT, 1, pdus.FINAL
        pdu.cmd_sn = self.cmd_sn
        self.initiator.sendall(pdu.to_bytes())
        thread.join(30)
        self.assertNotIn('error', result)

    def answers(self, count):
        """Read ``count`` SCSI responses; all GOOD."""
        got = 0
        buf = b''
        while got < count:
            while len(buf) < pdus.BHS_LENGTH:
                buf += self.initiator.recv(65536)
            reply = pdus.PDU(bytearray(buf[:pdus.BHS_LENGTH]))
            buf = buf[pdus.BHS_LENGTH:]
            self.assertEqual(Op.SCSI_RESPONSE, reply.opcode)
            self.assertEqual(0, reply.status)
            got += 1


class ConnectionFlowTestCase(ConnectionHarness):

    def test_answers_go_out_before_the_connection_stores_a_batch(self):
        # Without the background store the cache fills and the write
        # that fills it stores the oldest chunks itself: the answers of
        # the writes before it, and its own, are sent first, so the
        # initiator goes on meanwhile (before: they waited for the batch).
        path = self.path()
        seen = []
        settle_some = self.engine._settle_some

        def counting():
            got = b''
            while select.select([self.initiator], [], [], 0)[0]:
                got += self.initiator.recv(1 << 20)
            seen.append(len(got) // pdus.BHS_LENGTH)
            self.pending += len(got) // pdus.BHS_LENGTH
            return settle_some()
        self.engine._settle_some = counting
        self.pending = 0
        thread, result = self.serve(path)
        # The first window fills the cache but for one chunk.
        lbas = [n * 32 for n in range(CACHE_CHUNKS + WINDOW)]
        self.initiator.sendall(b''.join(self.write(lba)
                                        for lba in lbas[:CACHE_CHUNKS - 1]))
        self.answers(CACHE_CHUNKS - 1)
        # Then a window of 32 at once: the first fills the cache.
        self.initiator.sendall(b''.join(self.write(lba)
                                        for lba in lbas[CACHE_CHUNKS - 1:
                                                        CACHE_CHUNKS - 1 +
                                                        WINDOW]))
        until = time.monotonic() + 30
        while not seen and time.monotonic() < until:
            time.sleep(0.001)
        self.answers(WINDOW - self.pending)
        self.stop(thread, result)
        stats = path.stats()
        self.assertEqual(1, stats['settles'])
        # The filling write's answer was out when the batch began.
        self.assertEqual([1], seen)
        # Every write staged here, none handed to the session, one lock
        # taken for each.
        self.assertEqual(CACHE_CHUNKS - 1 + WINDOW, stats['writes'])
        self.assertEqual(0, stats['collected'])
        self.assertEqual(stats['writes'], stats['locks'])

    def test_the_batch_a_connection_stores_was_compressed_unlocked(self):
        # Whole chunks fill the cache: the connection digests and
        # compresses the batch without the engine's lock, and the batch
        # stored under it compresses nothing (before: every chunk).
        chunk = self.engine.chunk
        path = self.path()
        thread, result = self.serve(path)
        before = dict(self.engine.work)
        written = []
        for first in range(0, 2 * CACHE_CHUNKS, WINDOW):
            window = [test_ingest_shape.mixed(chunk, 1)
                      for _ in range(WINDOW)]
            written += window
            self.initiator.sendall(b''.join(
                self.write((first + n) * chunk // 512, data)
                for n, data in enumerate(window)))
            self.answers(WINDOW)
        self.stop(thread, result)
        stats = path.stats()
        self.assertGreaterEqual(stats['settles'], 1)
        self.assertEqual(0, stats['collected'])
        work = self.engine.work
        self.assertEqual(0, work['compress_calls'] -
                         before.get('compress_calls', 0))
        self.assertGreater(work['prepared_stored'], 0)
        self.engine.flush()
        self.engine.drop_cache()
        self.assertEqual(b''.join(written), self.engine.read(
            self.layer, 0, len(written) * chunk))

    def test_a_connection_that_used_its_room_asks_the_engine_again(self):
        # The room granted covers one 4k write: the next ones have the
        # engine look at the filesystem and grant more (before: each
        # went to the session, which ran it through the engine).
        path = self.path()
        self.engine._native.room = BLOCK
        thread, result = self.serve(path)
        written = [os.urandom(BLOCK) for _ in range(3)]
        self.initiator.sendall(b''.join(
            self.write(n * BLOCK // 512, data)
            for n, data in enumerate(written)))
        self.answers(3)
        self.stop(thread, result)
        stats = path.stats()
        self.assertEqual((3, 0, 1), (stats['writes'], stats['collected'],
                                     stats['room_refills']))
        self.assertEqual(b''.join(written),
                         self.engine.read(self.layer, 0, 3 * BLOCK))
