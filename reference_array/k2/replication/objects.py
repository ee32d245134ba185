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

"""The replication REST objects: peer arrays, sessions, peer volumes.

Creating a peer checks its credentials; changing a session's ``state``
starts, pauses, fails over or reverses replication (K2's states:
``idle``, ``in_sync``, ``suspended``, ``failed_over``).
"""

import logging

from reference_array.k2 import backend
from reference_array.k2 import fields
from reference_array.k2 import models
from reference_array.k2.replication import peer as peer_mod
from reference_array.k2.replication import sessions as sessions_mod

LOG = logging.getLogger(__name__)
PEERS = sessions_mod.PEERS
SESSIONS = sessions_mod.SESSIONS
PEER_VOLUMES = sessions_mod.PEER_VOLUMES
STATES = sessions_mod.STATES
MIN_RPO = sessions_mod.MIN_RPO
PeerError = peer_mod.PeerError
bad = fields.bad
Ref = models.Ref

WRITABLE = {
    PEERS: {'create': ('name', 'mgmt_host', 'url', 'username', 'password',
                       'ca_cert', 'verify_tls'),
            'update': ('username', 'password', 'ca_cert', 'verify_tls')},
    SESSIONS: {'create': ('name', 'replication_peer_k2array',
                          'local_volume_group',
                          'replication_peer_volume_group_name',
                          'remote_replication_session_name', 'rpo',
                          'auto_configure_peer_volumes', 'retention_policy',
                          'external_retention_policy', 'description'),
               'update': ('state', 'rpo', 'description')},
    PEER_VOLUMES: {'create': ('local_volume', 'name',
                              'replication_session'),
                   'update': ()},
}


class ReplicationObjects(object):

    writable = WRITABLE

    def __init__(self, records, engine, sessions, peers, shipper, system_id):
        self.records = records
        self.store = records.store
        self.engine = engine
        self.sessions = sessions
        self.peers = peers
        self.shipper = shipper
        self.system_id = system_id

    def handlers(self):
        """resource -> Operations; a session's update takes the session's
        lock and talks to the peer, so it opens its own transactions.
        """
        return {
            PEERS: backend.operations(self.add_peer, self.update_peer,
                                      self.delete_peer),
            SESSIONS: backend.operations(self.create_session,
                                         self.update_session,
                                         self.delete_session,
                                         update_in_transaction=False),
            PEER_VOLUMES: backend.operations(self.create_peer_volume,
                                             delete=self.delete_peer_volume),
        }

    # -- peers ---------------------------------------------------------------
    def add_peer(self, body, check=True):
        """Pair with another array; its credentials are checked first."""
        fields.check_fields(WRITABLE, PEERS, body, 'create')
        name = fields.name('volume_groups', body)
        host = body.get('mgmt_host')
        if not isinstance(host, str) or not host:
            raise bad('mgmt_host must be the peer\'s host[:port], '
                      'not %r' % (host,))
        for key in ('username', 'password'):
            if not isinstance(body.get(key), str) or not body[key]:
                raise bad('%s of the peer array is mandatory' % key)
        ca_pem = body.get('ca_cert')
        if ca_pem is not None and (not isinstance(ca_pem, str) or
                                   'BEGIN CERTIFICATE' not in ca_pem):
            raise bad('ca_cert must be the peer\'s PEM certificate text')
        url = body.get('url') or 'https://%s' % host
        if not url.startswith(('https://', 'http://')):
            raise bad('url %r is not an http(s) URL' % (url,))
        verify = fields.boolean(body, 'verify_tls', True)
        with self.store.transaction():
            self.records.unique(PEERS, 'name', name)
            self.records.unique(PEERS, 'mgmt_host', host)
            peer = models.Peer(
                id=self.records.next_id(PEERS), name=name, mgmt_host=host,
                verify_tls=verify, url=url, username=body['username'],
                password=body['password'])
            if ca_pem:
                with open(self.peers.ca_path(peer), 'w') as f:
                    f.write(ca_pem)
            if check:
                try:
                    peer.system_id = self.peers.client(peer).system_id()
                except PeerError as e:
                    raise bad(str(e))
                peer.state = 'connected'
                if peer.system_id == self.system_id:
                    raise bad('%s is this array itself' % host)
            self.records.put(peer)
        return peer

    def peer_by_host(self, host):
        return self.records.by(PEERS, 'mgmt_host', host)

    def update_peer(self, peer, body):
        if 'username' in body:
            peer.username = str(body['username'])
        if 'password' in body:
            peer.password = str(body['password'])
        if 'verify_tls' in body:
            peer.verify_tls = fields.boolean(body, 'verify_tls')
        if body.get('ca_cert'):
            with open(self.peers.ca_path(peer), 'w') as f:
                f.write(body['ca_cert'])
        return self.records.put(peer)

    def delete_peer(self, peer):
        if self.records.has_children(SESSIONS, 'replication_peer_k2array',
                                     Ref.to(peer)):
            raise bad('peer %s still has sessions' % peer.name)

    # -- sessions ------------------------------------------------------------
    def create_session(self, body):
        name = fields.name('volume_groups', body)
        self.records.unique(SESSIONS, 'name', name)
        peer = self.records.deref(body, 'replication_peer_k2array',
                                  (models.Peer,))
        vg = self.records.deref(body, 'local_volume_group',
                                (models.VolumeGroup,))
        remote_vg = fields.name(
            'volume_groups', body, 'replication_peer_volume_group_name')
        remote_session = fields.name(
            'volume_groups', body, 'remote_replication_session_name')
        rpo = fields.integer(body, 'rpo', minimum=MIN_RPO) \
            if 'rpo' in body else 300
        if vg.replication_session:
            raise bad('volume group %s is already replicated' % vg.name)
        session = self.records.new(models.Session(
            name=name, replication_peer_k2array=Ref.to(peer),
            local_volume_group=Ref.to(vg),
            replication_peer_volume_group_name=remote_vg,
            remote_replication_session_name=remote_session, rpo=rpo,
            description=fields.text(body, 'description')))
        vg.replication_session = Ref.to(session)
        self.records.put(vg)
        return session

    def update_session(self, session, body):
        if 'state' in body and body['state'] not in STATES:
            raise bad('state %r is not one of %s' % (body['state'],
                                                     ', '.join(STATES)))
        if 'rpo' in body:
            session.rpo = fields.integer(body, 'rpo', minimum=MIN_RPO)
        if 'description' in body:
            session.description = str(body['description'])
        self.sessions.put(session)
        if 'state' in body:
            session = self._change_state(session, body['state'])
        return session

    def delete_session(self, session):
        self.sessions.rollback(session)
        for pv in self.sessions.members(session):
            self.sessions.release_base(pv)
            self.records.delete(pv)
        vg = self.sessions.group_of(session)
        if vg is not None:
            vg.replication_session = None
            self.records.put(vg)
            self.sessions.set_read_only(session, False)
        self.shipper.forget(session.name)

    # -- peer volumes --------------------------------------------------------
    def create_peer_volume(self, body):
        name = fields.name('volumes', body)
        vol = self.records.deref(body, 'local_volume', (models.Volume,))
        session = self.records.deref(body, 'replication_session',
                                     (models.Session,))
        if vol.volume_group != session.local_volume_group:
            raise bad('volume %s is not in the volume group of session %s'
                      % (vol.name, session.name))
        for pv in self.sessions.members(session):
            if pv.name == name or pv.local_volume == Ref.to(vol):
                raise bad('session %s already replicates %s' % (
                    session.name, name))
        pv = self.records.new(models.PeerVolume(
            name=name, local_volume=Ref.to(vol),
            replication_session=Ref.to(session)))
        if session.state == 'in_sync':
            self.shipper.request_sync(session.name)
        return pv

    def delete_peer_volume(self, pv):
        self.sessions.release_base(pv)

    # -- state changes -------------------------------------------------------
    def _change_state(self, session, state):
        with self.sessions.lock(session.name):
            session = self.sessions.get(session.id)
            role = session.current_role
            if state == 'failed_over':
                if role != 'target':
                    raise bad('session %s is the source; fail over on the '
                              'target array' % session.name)
                with self.store.transaction():
                    self.sessions.rollback(session)
                    self.sessions.set_read_only(session, False)
                    session.state = 'failed_over'
                    self.sessions.put(session)
                self._tell_peer(session, 'suspended')
                return session
            if role == 'target':
                if state != 'in_sync' or session.state != 'failed_over':
                    raise bad('session %s is a replication target; change '
                              'its state on the source array' %
                              session.name)
                return self._reverse(session)
            if state == 'in_sync':
                if session.state == 'in_sync':
                    # Already replicating: ship a new image now.
                    self.shipper.request_sync(session.name)
                    return session
                self._attach_peer(session)
                session = self.sessions.get(session.id)
                session.state, session.state_reason = 'in_sync', ''
                self.sessions.put(session)
                self.shipper.request_sync(session.name)
                return session
            session.state = state
            self.sessions.put(session)
            self.shipper.forget(session.name)
            self._tell_peer(session, state)
            return session

    def _tell_peer(self, session, state):
        """Mirror a state change; the peer may be gone (failover)."""
        peer = self.sessions.peer_of(session)
        try:
            self.peers.client(peer).call('state', {
                'session': session.remote_replication_session_name,
                'state': state})
        except PeerError as e:
            LOG.warning('session %s: could not tell the peer about %s: %s',
                        session.name, state, e)

    def _attach_peer(self, session):
        """Create or adopt the remote group, volumes and session."""
        vg = self.sessions.group_of(session)
        volumes = []
        for pv in self.sessions.members(session):
            vol = self.records.resolve(pv.local_volume)
            volumes.append({'name': pv.name, 'source_name': vol.name,
                            'size': vol.size})
        try:
            self.peers.client(self.sessions.peer_of(session)).call(
                'attach', {
                    'system_id': self.system_id,
                    'session': session.remote_replication_session_name,
                    'source_session': session.name,
                    'volume_group':
                        session.replication_peer_volume_group_name,
                    'source_volume_group': vg.name,
                    'is_dedup': vg.is_dedup, 'rpo': session.rpo,
                    'volumes': volumes})
        except PeerError as e:
            raise bad(str(e))

    def _reverse(self, session):
        """in_sync on a failed-over target: this side becomes the source."""
        with self.store.transaction():
            session.current_role = 'source'
            self.sessions.put(session)
            for pv in self.sessions.members(session):
                self.sessions.release_base(pv)
                self.records.put(pv)
        try:
            self._attach_peer(session)
        except Exception:
            with self.store.transaction():
                session.current_role = 'target'
                self.sessions.put(session)
            raise
        session = self.sessions.get(session.id)
        session.state, session.state_reason = 'in_sync', ''
        self.sessions.put(session)
        self.shipper.request_sync(session.name)
        return session
