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

"""PDUs over one TCP connection: buffered receive, batched send.

The session speaks in PDUs and never touches the socket; another
transport (iSER, a second connection) offers the same methods.

PDUs are cut from large reads, and replies wait until no complete PDU
is left to handle: a queue of pipelined commands then costs one receive
and one send, not one of each per command.
"""

import socket
import time

from reference_array.target.iscsi import errors
from reference_array.target.iscsi import params
from reference_array.target.iscsi import pdu as pdus

# One receive takes whatever has arrived, up to a full data segment.
READ_SIZE = params.MAX_RECV_DATA_SEGMENT + pdus.BHS_LENGTH
# Login PDUs may come before the initiator knows our limit.
MAX_DATA_SEGMENT = max(params.MAX_RECV_DATA_SEGMENT, 65536)
# Replies go out once this much waits.
SEND_BATCH = 262144


class TCPConnection(object):

    def __init__(self, sock):
        self.sock = sock
        self._in = bytearray(READ_SIZE)
        self._start = self._end = 0
        self._out = []
        self._out_bytes = 0
        self._deadline = None
        self._timeout = sock.gettimeout()

    def set_deadline(self, when):
        """Receive nothing after ``when`` (monotonic), however slowly the
        bytes come; None: back to the socket's own timeout per receive.
        """
        self._deadline = when
        if when is None:
            self.sock.settimeout(self._timeout)

    def _recv_into(self, view):
        if self._deadline is not None:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout('deadline passed')
            self.sock.settimeout(left)
        count = self.sock.recv_into(view)
        if not count:
            raise ConnectionError('peer closed the connection')
        return count

    # -- receive -----------------------------------------------------------
    def recv_exact(self, n):
        if self._end - self._start < n:
            self._fill(n)
        start = self._start
        self._start = start + n
        return self._in[start:start + n]

    def _fill(self, n):
        """Buffer at least ``n`` unread bytes.

        Replies go out first: the initiator may wait for them before it
        sends anything more.
        """
        self.flush()
        buf, start, end = self._in, self._start, self._end
        if start + n > len(buf):
            unread = buf[start:end]
            if n > len(buf):
                buf = self._in = bytearray(n + READ_SIZE)
            buf[:len(unread)] = unread
            start, end = 0, len(unread)
        with memoryview(buf) as view:
            while end - start < n:
                end += self._recv_into(view[end:])
        self._start, self._end = start, end

    def recv_into(self, view):
        """Fill ``view``: what is buffered, then straight from the socket
        (a write's data is copied once, not once per layer of framing).
        """
        n = len(view)
        have = min(self._end - self._start, n)
        with memoryview(self._in) as buf:
            view[:have] = buf[self._start:self._start + have]
        self._start += have
        if have < n:
            self.flush()
        while have < n:
            have += self._recv_into(view[have:])

    def read_header(self):
        """The next PDU, its data segment not yet read; and its length."""
        bhs = self.recv_exact(pdus.BHS_LENGTH)
        length = pdus.data_length(bhs)
        if length > MAX_DATA_SEGMENT:
            raise errors.ProtocolError('data segment of %d bytes' % length)
        ahs = pdus.ahs_bytes(bhs)
        if ahs:
            self.recv_exact(ahs)
        return pdus.PDU(bhs), length

    def read_data(self, length):
        if not length:
            return b''
        padding = pdus.pad(length)
        data = self.recv_exact(length + padding)
        if padding:
            del data[length:]
        return data

    def skip_padding(self, length):
        if pdus.pad(length):
            self.recv_exact(pdus.pad(length))

    def take_buffered(self):
        """Every byte received and not yet read (the buffer is emptied)."""
        data = bytes(self._in[self._start:self._end])
        self._start = self._end = 0
        return data

    def unread(self, data):
        """Put back bytes received (into an empty buffer), to be read
        next.
        """
        if len(data) > len(self._in):
            self._in = bytearray(len(data) + READ_SIZE)
        self._in[:len(data)] = data
        self._start, self._end = 0, len(data)

    def read_pdu(self):
        pdu, length = self.read_header()
        pdu.data = self.read_data(length)
        return pdu

    # -- send --------------------------------------------------------------
    def send(self, pdu):
        """Queue a (header, data segment) pair, as ``pdu`` builds them."""
        header, data = pdu
        self._out += (header, data, bytes(pdus.pad(len(data))))
        self._out_bytes += pdus.BHS_LENGTH + len(data)
        if self._out_bytes >= SEND_BATCH:
            self.flush()

    def flush(self):
        """Send every waiting reply."""
        if self._out:
            data = b''.join(self._out)
            self._out.clear()
            self._out_bytes = 0
            self.sock.sendall(data)
