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

"""What a peer can make the target hold: connections, login time, memory.

An initiator names its own transfer lengths, and any process on the
machine can connect and log in (an initiator name is not a credential).
So the target bounds everything a connection makes it keep: how many
connections are open, how long a login may take, and how many bytes of
command buffers all connections hold together. A command's own length
is bounded before this (``scsi`` checks the LUN and the range first).
"""

import threading
import time

MAX_CONNECTIONS = 128
# The whole login, from connect to full feature phase, however slowly
# the bytes arrive.
LOGIN_TIMEOUT = 15.0
# Bytes of command buffers (solicited write data, large reads) of all
# connections together: 32 commands of the largest transfer at once.
BUFFER_BUDGET = 128 << 20
# A command that finds the budget spent waits this long, then is
# answered BUSY (initiators retry it).
BUFFER_WAIT = 5.0
# Below this a command's buffer is not counted: small I/O never waits.
COUNTED = 65536


class Limits(object):
    """The bounds one portal applies (tests use smaller ones)."""

    def __init__(self, max_connections=MAX_CONNECTIONS,
                 login_timeout=LOGIN_TIMEOUT, buffer_budget=BUFFER_BUDGET,
                 buffer_wait=BUFFER_WAIT):
        self.max_connections = max_connections
        self.login_timeout = login_timeout
        self.buffers = BufferBudget(buffer_budget, buffer_wait)
        self._connections = 0
        self._lock = threading.Lock()

    # -- connections ---------------------------------------------------------
    def connect(self):
        """Count a new connection; False: the portal is full."""
        with self._lock:
            if self._connections >= self.max_connections:
                return False
            self._connections += 1
            return True

    def disconnect(self):
        with self._lock:
            self._connections -= 1

    @property
    def connections(self):
        return self._connections

    def login_deadline(self):
        return time.monotonic() + self.login_timeout


class BufferBudget(object):
    """Bytes of command buffers the target holds at once."""

    def __init__(self, budget, wait):
        self.budget, self.wait = budget, wait
        self.held = 0
        self.peak = 0
        self._cond = threading.Condition()

    def take(self, size):
        """Reserve ``size`` bytes; False if they did not free in time."""
        if size < COUNTED:
            return True
        deadline = None
        with self._cond:
            while self.held + size > self.budget:
                if deadline is None:
                    deadline = time.monotonic() + self.wait
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            self.held += size
            self.peak = max(self.peak, self.held)
            return True

    def give(self, size):
        if size < COUNTED:
            return
        with self._cond:
            self.held -= size
            self._cond.notify_all()
