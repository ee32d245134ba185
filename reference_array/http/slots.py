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

"""Connection slots of a REST port: how many connections it holds, and
which one a newcomer may close when every slot is taken.
"""

import logging
import select
import socket
import threading
import time

LOG = logging.getLogger(__name__)
# A connection waiting for a request may be closed for room once it has
# waited this long (a client that just had an answer often asks again
# at once), or once its request has been arriving this long without
# its headers being complete (a client that sends a byte now and then
# to keep its slot).
IDLE_GRACE = 0.5
HEADER_GRACE = 5.0
# A connection closed for room is waited for this long to give its slot
# back (its thread wakes at once, but a busy machine may run it late)
# before another may be closed for the same newcomer.
ENDING_GRACE = 5.0
_TAKEN = 'taken'


class Slots(object):
    """Connection slots, and the connections that wait for a request.

    A connection between requests (a client's idle keep-alive, or a new
    one that has not spoken yet) holds a slot while it does nothing; a
    client that opens connections and says nothing could fill every
    slot and lock everybody out. So a newcomer that finds no free slot
    closes the connection that has waited longest, as a server may close
    an idle persistent connection at any time (RFC 9112, 9.3.1: the
    client opens another); a pool reuses its newest connections first,
    so the oldest is the one least likely to be about to carry a
    request. Never one with bytes waiting to be read, nor one whose
    request's headers have arrived (it is being served). A client may
    still be sending a request on the one closed, and cannot know
    whether it was acted on: so there are far more slots than the pools
    of a cloud's services hold (MAX_CONNECTIONS), and this happens only
    when something fills them.
    """

    def __init__(self, count):
        self._free = threading.BoundedSemaphore(count)
        self._lock = threading.Lock()
        # connection -> the moment from which it may be closed for room
        self._waiting = {}
        # connection closed for room -> when; until its thread ends
        self._closing = {}

    def take(self, wait):
        """A slot for a new connection; False after ``wait`` seconds."""
        deadline = time.monotonic() + wait
        while True:
            found = self._close_one()
            if found is _TAKEN:
                return True
            left = deadline - time.monotonic()
            if not found and left <= 0:
                return False
            # A closed connection's thread ends at once and gives its
            # slot back, which is waited for (closing another meanwhile
            # would take two slots for one newcomer); else look again
            # soon, as a connection may come to be closable.
            if self._free.acquire(timeout=0.05 if found else
                                  min(left, 0.05)):
                return True

    def _close_one(self):
        """A free slot (_TAKEN), else close the connection that has
        waited longest for a request, if one may be closed; True while
        a connection closed for room has not given its slot back yet.
        """
        now = time.monotonic()
        with self._lock:
            # Looked at under the lock ``end`` gives slots back under:
            # a connection that has just ended is never thought pending.
            if self._free.acquire(blocking=False):
                return _TAKEN
            if any(since + ENDING_GRACE > now
                   for since in self._closing.values()):
                return True
            for connection, since in sorted(self._waiting.items(),
                                            key=lambda item: item[1]):
                if since > now:
                    return False
                if not _has_input(connection):
                    del self._waiting[connection]
                    self._closing[connection] = now
                    break
            else:
                return False
        LOG.warning('connection from %s closed to make room: it waited for '
                    'a request', _peer(connection))
        try:
            # The socket's own shutdown (not TLS's): it wakes the
            # handler thread blocked in a read, which then ends.
            socket.socket.shutdown(connection, socket.SHUT_RDWR)
        except OSError:
            pass
        return True

    def end(self, connection):
        """``connection``'s thread ends: its slot is given back."""
        with self._lock:
            self._waiting.pop(connection, None)
            self._closing.pop(connection, None)
            self._free.release()

    def idle(self, connection):
        """``connection`` waits for a request."""
        with self._lock:
            self._waiting[connection] = time.monotonic() + IDLE_GRACE

    def reading(self, connection):
        """A request's first bytes came on ``connection``; False when it
        was closed for room first.
        """
        with self._lock:
            if connection not in self._waiting:
                return False
            self._waiting[connection] = time.monotonic() + HEADER_GRACE
            return True

    def busy(self, connection):
        """``connection``'s request headers are in: it is served, never
        closed for room. False when it was closed for room first.
        """
        with self._lock:
            return self._waiting.pop(connection, None) is not None


def _has_input(connection):
    """Bytes (or a hang-up) wait on the socket: a request may be in."""
    try:
        poller = select.poll()
        poller.register(connection.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True


def _peer(connection):
    try:
        peer = connection.getpeername()
    except OSError:
        return 'a closed peer'
    return peer[0] if isinstance(peer, tuple) else 'a local peer'
