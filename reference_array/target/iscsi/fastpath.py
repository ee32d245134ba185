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

"""A session's native data path: READ, WRITE and GET LBA STATUS of the
LUNs it sees run in C, without the GIL (``reference_array/native/path.c``).

The session keeps everything else: login, negotiation, every other
opcode and command, and any command the native loop declines (out of
range, FUA, residuals, a LUN it does not know). The native loop handles
PDUs until one is not its own and returns it unread; the session handles
that one and asks again. Its sequence numbers go to the native loop and
come back with each turn.

What the native loop knows of the LUNs (their engine layers, sizes,
write protection) is looked up here again whenever the engine's epoch
moves, which it does before any change of the objects.
"""

import logging

from reference_array.target.iscsi import errors
from reference_array.target.iscsi import pdu as pdus
from reference_array.target import scsi

LOG = logging.getLogger(__name__)

# What the native loop allocates for a command's data (path.h
# MAX_TRANSFER, and the header kept beside it).
BUFFER = (1 << 20) + pdus.BHS_LENGTH


class _Collected(pdus.PDU):
    """A write command whose data the native loop has received."""
    __slots__ = ()
    collected = True


class FastPath(object):

    def __init__(self, session, conn, engine):
        self.session = session
        self.conn = conn
        self.engine = engine
        self.path = engine.data_path(conn.sock.fileno(),
                                     conn.sock.gettimeout() or -1.0,
                                     session.negotiated)
        self._epoch = None

    @classmethod
    def offer(cls, session):
        """The fast path of a session in full feature phase, or None when
        its target or transport has none, or when the target's command
        buffers cannot hold the native loop's own (one largest transfer,
        held while the connection lasts).
        """
        exports = getattr(session.target, 'exports', None)
        engine = getattr(exports, 'engine', None)
        if session.discovery or not hasattr(engine, 'data_path') or \
                not hasattr(session.conn, 'take_buffered'):
            return None
        buffers = session.limits.buffers
        if not buffers.take(BUFFER):
            return None
        try:
            return cls(session, session.conn, engine)
        except BaseException:
            buffers.give(BUFFER)
            raise

    def close(self):
        """The connection ended: its buffer goes back to the budget."""
        if self.path is not None:
            LOG.info('iSCSI %s: native data path: %s', self.session.peer,
                     ' '.join('%s=%d' % kv for kv in sorted(
                         self.path.stats().items())))
            self.path = None
            self.session.limits.buffers.give(BUFFER)

    def read_pdu(self):
        """The next PDU the session handles itself."""
        session = self.session
        self._refresh()
        self.conn.flush()
        (session.stat_sn, session.exp_cmd_sn, unread, collected,
         error) = self.path.serve(session.stat_sn, session.exp_cmd_sn,
                                  self.conn.take_buffered())
        self.conn.unread(unread)
        if error:
            raise errors.ProtocolError(error)
        if collected is not None:
            # A write whose data came here: the session runs it.
            header, data = collected
            return _Collected(bytearray(header), data)
        return self.conn.read_pdu()

    def _refresh(self):
        engine = self.engine
        if engine.epoch == self._epoch:
            return
        with engine.lock:
            epoch = engine.epoch
            luns = []
            for number, device in self.session.luns().items():
                view = getattr(device, 'native_view', None)
                if view is None:
                    continue
                try:
                    luns.append((number,) + view())
                except scsi.SCSIError:
                    # Gone: the session answers for it.
                    continue
            self.path.set_luns(epoch, luns)
            self._epoch = epoch
