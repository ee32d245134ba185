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

"""Replication sessions: what the REST objects, the shipper and the peer
API share (names of the stored kinds, session locks, member volumes and
the rollback of a half-applied cycle)."""

import threading

from reference_array.k2 import models

PEERS = models.Peer.KIND
SESSIONS = models.Session.KIND
PEER_VOLUMES = models.PeerVolume.KIND
STATES = ('idle', 'in_sync', 'suspended', 'failed_over')
# K2 accepts an RPO of 60 s or a multiple of 300 s; shorter ones are
# allowed here so tests do not wait.
MIN_RPO = 1


class Sessions(object):

    def __init__(self, records, engine):
        self.records = records
        self.store = records.store
        self.engine = engine
        self._locks = {}
        self._locks_lock = threading.Lock()

    def lock(self, name):
        """The lock that orders state changes and cycles of a session."""
        with self._locks_lock:
            return self._locks.setdefault(name, threading.Lock())

    def find(self, name):
        return self.records.by(models.Session, 'name', name)

    def get(self, session_id):
        return self.records.get(models.Session, session_id)

    def put(self, session):
        self.records.put(session)

    def peer_of(self, session):
        return self.records.resolve(session.replication_peer_k2array)

    def group_of(self, session):
        return self.records.resolve(session.local_volume_group)

    def members(self, session):
        """The peer_volumes of a session."""
        return self.records.children(models.PeerVolume,
                                     'replication_session',
                                     models.Ref.to(session))

    def volumes(self, session):
        """The volumes of the session's local volume group."""
        return self.records.children(models.Volume, 'volume_group',
                                     session.local_volume_group)

    def release_base(self, pv):
        """Forget the image last shipped for a peer volume."""
        if pv.base:
            self.engine.release(pv.base)
            pv.base = None

    def set_read_only(self, session, read_only):
        for vol in self.volumes(session):
            if vol.read_only != read_only:
                vol.read_only = read_only
                self.records.put(vol)

    def rollback(self, session):
        """Drop a half-applied cycle: back to the last complete image."""
        for vol in self.volumes(session):
            image = session.consistent.get(vol.name)
            if image is None:
                continue
            partial = vol.layer
            vol.layer = self.engine.new_layer(parent=image,
                                              dedup=vol.is_dedup)
            self.engine.release(partial)
            self.records.put(vol)
        for image in session.consistent.values():
            self.engine.release(image)
        session.consistent = {}
        session.current_snapshot_id = None
        session.current_snapshot_progress = 100
