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

"""The source side of replication: a cycle freezes the group, ships the
chunks changed since the last image to the peer and commits there."""

import base64
import logging
import threading
import time

from reference_array.k2 import models
from reference_array.k2.replication import peer as peer_mod

LOG = logging.getLogger(__name__)
BATCH_CHUNKS = 64
RETRY_SECONDS = 5.0
PeerError = peer_mod.PeerError


class Shipper(object):
    """Ships each in-sync source session every ``rpo`` seconds, or at
    once when asked, in one background thread.
    """

    def __init__(self, records, engine, sessions, peers):
        self.records = records
        self.store = records.store
        self.engine = engine
        self.sessions = sessions
        self.peers = peers
        self._due = {}
        self._due_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name='replication')

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def forget(self, name):
        """Stop shipping a session (until ``request_sync``)."""
        with self._due_lock:
            self._due.pop(name, None)

    def request_sync(self, name):
        with self._due_lock:
            self._due[name] = 0.0
        self._wake.set()

    def link_changed(self):
        """The replication link went down or came back: an array notices
        at once, so every session it ships tries a cycle now (it fails
        and says why, or learns where its peer stands).
        """
        with self._due_lock:
            for name in self._due:
                self._due[name] = 0.0
        self._wake.set()

    def _reschedule(self, name, when):
        """The next cycle of a shipping session, unless one was asked
        for sooner while this one ran.
        """
        with self._due_lock:
            if name in self._due:
                self._due[name] = min(self._due[name], when)

    def _loop(self):
        for session in self.records.all(models.Session):
            if session.current_role == 'source' and \
                    session.state == 'in_sync':
                self.request_sync(session.name)
        while not self._stop.is_set():
            now = time.monotonic()
            with self._due_lock:
                due_now = [name for name, due in self._due.items()
                           if due <= now]
                for name in due_now:
                    # Asked for again while it runs: it runs again.
                    self._due[name] = float('inf')
            for name in due_now:
                if not self._stop.is_set():
                    try:
                        self._cycle(name)
                    except Exception:
                        # One session's trouble must not stop the others
                        # (nor this one's next attempt) for good.
                        LOG.exception('session %s: replication cycle '
                                      'broke', name)
                        self._reschedule(name, now + RETRY_SECONDS)
            self._wake.wait(0.5)
            self._wake.clear()

    def _cycle(self, name):
        with self.sessions.lock(name):
            session = self.sessions.find(name)
            if session is None or session.current_role != 'source' or \
                    session.state != 'in_sync':
                self.forget(name)
                return
            try:
                self.sync(session)
                session = self.sessions.get(session.id)
                delay = session.rpo if session is not None else None
            except PeerError as e:
                LOG.warning('session %s: replication cycle failed: %s',
                            name, e)
                session = self.sessions.get(session.id)
                delay = RETRY_SECONDS
                if session is None:
                    # Deleted while the cycle ran (a delete does not wait
                    # for the peer): nothing left to report on.
                    self.forget(name)
                    return
                session.state_reason = str(e)
                if ' 409: ' in str(e):
                    # The target has been failed over: stop shipping.
                    session.state = 'suspended'
                self.sessions.put(session)
            if delay is None:
                self.forget(name)
            else:
                self._reschedule(name, time.monotonic() + delay)

    def sync(self, session):
        """Ship one consistent image of the group to the peer."""
        client = self.peers.client(self.sessions.peer_of(session))
        with self.store.transaction():
            session = self.sessions.get(session.id)
            if session is None:
                return None
            # Above anything this session saw, whichever array numbered it
            # (a reversed session continues the peer's numbering).
            generation = max(self.store.next_id('generation'),
                             session.generation_number + 1)
            plan = []
            for pv in self.sessions.members(session):
                vol = self.records.resolve(pv.local_volume)
                if pv.base and self.engine.layer_is_empty(
                        vol.layer) and self.engine.parent_of(
                        vol.layer) == pv.base and pv.size == vol.size:
                    # Unchanged since the last cycle: nothing to freeze.
                    plan.append((pv, vol, None))
                    continue
                image = vol.layer
                vol.layer = self.engine.freeze(image)
                self.records.put(vol)
                plan.append((pv, vol, image))
            unchanged = session.generation_number and all(
                image is None for _pv, _vol, image in plan)
            if not unchanged:
                # In the freeze's transaction: a session deleted meanwhile
                # is not written back.
                session.current_snapshot_id = generation
                session.current_snapshot_progress = 0
                self.sessions.put(session)
        remote = session.remote_replication_session_name
        if unchanged:
            # Nothing to ship; still make sure the peer is there and
            # following, so a lost peer shows up within one RPO.
            client.call('ping', {'session': remote,
                                 'generation': generation})
            with self.store.transaction():
                session = self.sessions.get(session.id)
                if session is not None:
                    session.generation_number = generation
                    session.last_sync_time = int(time.time())
                    session.state_reason = ''
                    self.sessions.put(session)
            return generation
        try:
            client.call('begin', {
                'session': remote, 'generation': generation,
                'volumes': [{'name': pv.name, 'source_name': vol.name,
                             'size': vol.size}
                            for pv, vol, _img in plan]})
            for pv, _vol, image in plan:
                if image is not None:
                    self._ship(client, remote, pv.name, image, pv.base)
            client.call('commit', {'session': remote,
                                   'generation': generation})
        except BaseException:
            with self.store.transaction():
                for _pv, _vol, image in plan:
                    if image is not None:
                        self.engine.release(image)
                session = self.sessions.get(session.id)
                if session is not None:
                    session.current_snapshot_id = None
                    self.sessions.put(session)
            raise
        with self.store.transaction():
            for pv, vol, image in plan:
                if image is None:
                    continue
                pv = self.records.get(models.PeerVolume, pv.id)
                if pv is None:
                    self.engine.release(image)
                    continue
                self.sessions.release_base(pv)
                pv.base, pv.size = image, vol.size
                self.records.put(pv)
            session = self.sessions.get(session.id)
            if session is None:
                return generation
            session.generation_number = generation
            session.current_snapshot_id = None
            session.current_snapshot_progress = 100
            session.state_reason = ''
            session.last_sync_time = int(time.time())
            self.sessions.put(session)
        return generation

    def _ship(self, client, remote, name, image, base):
        idxs = self.engine.changed_chunks(image, base)
        for start in range(0, len(idxs), BATCH_CHUNKS):
            batch = self.engine.read_chunks(image,
                                            idxs[start:start + BATCH_CHUNKS])
            client.call('chunks', {
                'session': remote, 'volume': name,
                'chunks': [[idx * self.engine.chunk,
                            None if data is None
                            else base64.b64encode(data).decode()]
                           for idx, data in batch]})
