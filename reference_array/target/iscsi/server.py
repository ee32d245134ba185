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

"""The listening portal: one thread and one session per connection."""

import logging
import socket
import socketserver
import threading
import time

from reference_array.target.iscsi import limits as limits_mod
from reference_array.target.iscsi import session as session_mod
from reference_array.target.iscsi import transport

LOG = logging.getLogger(__name__)

IDLE_TIMEOUT = 300.0


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # Into the array's log, not stderr: a parent that does not read
        # stderr must never be able to stall a connection thread.
        LOG.exception('connection from %s failed', client_address[0])


class Target(object):
    """The listening portal; ``exports`` decides what each host sees.

    ``exports`` offers ``iqn``, ``generation()``, ``resolve(initiator)``
    (LUN number -> device) and ``chap(initiator)`` ((user, secret) or
    None).
    """

    def __init__(self, exports, host='127.0.0.1', port=3260, limits=None):
        self.exports = exports
        self.limits = limits or limits_mod.Limits()
        self._tsih = 0
        self._lock = threading.Lock()
        self._refused = 0
        self._refused_logged = 0.0
        target = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                peer = '%s:%s' % self.client_address[:2]
                if not target.limits.connect():
                    target.refuse(peer)
                    return
                try:
                    self.request.settimeout(IDLE_TIMEOUT)
                    self.request.setsockopt(socket.IPPROTO_TCP,
                                            socket.TCP_NODELAY, 1)
                    session_mod.Session(
                        target, transport.TCPConnection(self.request),
                        peer).run()
                finally:
                    target.limits.disconnect()

        self.server = _Server((host, port), Handler)
        self.host, self.port = self.server.server_address[:2]
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={'poll_interval': 0.2},
                                       daemon=True)

    def refuse(self, peer):
        """A connection beyond the cap is closed at once; a flood of them
        is one log line every ten seconds, not one each.
        """
        with self._lock:
            self._refused += 1
            now = time.monotonic()
            if now - self._refused_logged < 10:
                return
            count, self._refused, self._refused_logged = self._refused, 0, now
        LOG.warning('iSCSI %s: refused, %d connections open (%d refused '
                    'since the last report)', peer,
                    self.limits.max_connections, count)

    def next_tsih(self):
        with self._lock:
            self._tsih = self._tsih % 0xfffe + 1
            return self._tsih

    def start(self):
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
