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

"""Array-to-array calls of replication: the client that makes them and
the API that answers them.

The arrays talk over the K2 REST port, under ``/api/v2/_replication/``,
with the credentials the peer was registered with, and TLS verified
against the certificate given at registration. The target side's calls:
``attach`` (create or adopt the group, volumes and session), ``begin``,
``chunks`` and ``commit`` of a cycle, ``ping`` (a cycle with nothing to
ship) and ``state`` (mirror a state change).
"""

import base64
import os
import time

import requests

from reference_array.core import errors
from reference_array.k2 import fields
from reference_array.k2 import models
from reference_array.k2.replication import sessions as sessions_mod

Ref = models.Ref
PEER_TIMEOUT = (5.0, 120.0)


class PeerError(Exception):
    """The peer array could not be reached or refused a call."""


class PeerClient(object):
    """Calls from this array to a paired one."""

    def __init__(self, peer, ca_path, link_down=None):
        self.url = peer.url.rstrip('/')
        self.auth = (peer.username, peer.password)
        self.verify = ca_path if peer.verify_tls else False
        self.link_down = link_down

    def _request(self, method, path, body=None):
        if self.link_down is not None and self.link_down():
            raise PeerError('peer %s unreachable: the replication link is '
                            'down' % self.url)
        try:
            reply = requests.request(method, self.url + '/api/v2/' + path,
                                     json=body, auth=self.auth,
                                     verify=self.verify,
                                     timeout=PEER_TIMEOUT)
        except requests.RequestException as e:
            raise PeerError('peer %s unreachable: %s' % (self.url, e))
        if reply.status_code >= 400:
            try:
                message = reply.json().get('error_msg')
            except ValueError:
                message = reply.text[:200]
            raise PeerError('peer %s answered %d: %s' % (
                self.url, reply.status_code, message))
        return reply.json() if reply.content else None

    def system_id(self):
        state = self._request('GET', 'system/state/1')
        if not isinstance(state, dict) or not state.get('system_id'):
            raise PeerError('peer %s is not a K2 array: no system_id in '
                            'system/state' % self.url)
        return state['system_id']

    def call(self, op, body):
        return self._request('POST', '_replication/' + op, body)


class Peers(object):
    """The paired arrays: their clients and CA certificates."""

    def __init__(self, records, data_dir, link_down=None):
        """``link_down``: tells whether the replication link is down
        (then no call reaches a peer).
        """
        self.records = records
        self.data_dir = data_dir
        self.link_down = link_down

    def ca_path(self, peer):
        return os.path.join(self.data_dir, 'peer-%d-ca.pem' % peer.id)

    def client(self, peer):
        return PeerClient(peer, self.ca_path(peer), self.link_down)

    def by_system(self, system_id):
        """The peer with this system id (asking peers not yet reached)."""
        for peer in self.records.all(models.Peer):
            if peer.system_id is None:
                try:
                    peer.system_id = self.client(peer).system_id()
                    peer.state = 'connected'
                    self.records.put(peer)
                except PeerError:
                    continue
            if peer.system_id == system_id:
                return peer
        raise fields.bad('array %s is not a replication peer of this '
                         'array' % system_id)


class PeerAPI(object):
    """The target side of replication: what a source array calls."""

    def __init__(self, records, engine, volumes, sessions, peers, shipper):
        self.records = records
        self.store = records.store
        self.engine = engine
        self.volumes = volumes
        self.sessions = sessions
        self.peers = peers
        self.shipper = shipper
        self._calls = {'attach': self.attach, 'begin': self.begin,
                       'chunks': self.chunks, 'commit': self.commit,
                       'ping': self.ping, 'state': self.state}

    def call(self, op, body):
        if not isinstance(body, dict):
            raise fields.bad('the request body must be a JSON object')
        handler = self._calls.get(op)
        if handler is None:
            raise errors.NotFound('no replication operation %s' % op)
        return handler(body)

    def _target_session(self, body):
        session = self.sessions.find(body.get('session'))
        if session is None:
            raise errors.NotFound('no replication session %s' % (
                body.get('session'),))
        return session

    def _following_session(self, body):
        """The target session of a call, refusing one that took over."""
        session = self._target_session(body)
        if session.current_role != 'target' or \
                session.state == 'failed_over':
            raise errors.WrongState('session %s is %s as %s' % (
                session.name, session.state, session.current_role))
        return session

    def _ensure_volumes(self, session, vg, volumes):
        vg_ref = Ref.to(vg)
        for spec in volumes:
            vol = self.records.by(models.Volume, 'name', spec['name'])
            if vol is None:
                vol = self.volumes.create_volume({
                    'name': spec['name'], 'size': spec['size'],
                    'volume_group': vg_ref.to_wire()})
            elif vol.volume_group != vg_ref:
                raise fields.bad('volume %s exists outside %s' % (
                    spec['name'], vg.name))
            if vol.size < spec['size']:
                vol.size = spec['size']
            vol.read_only = True
            self.records.put(vol)
            known = {pv.local_volume for pv in self.sessions.members(session)}
            if Ref.to(vol) not in known:
                self.records.new(models.PeerVolume(
                    name=spec['source_name'], local_volume=Ref.to(vol),
                    replication_session=Ref.to(session)))

    def attach(self, body):
        peer = self.peers.by_system(body.get('system_id'))
        with self.store.transaction():
            session = self.sessions.find(body['session'])
            vg = self.records.by(models.VolumeGroup, 'name',
                                 body['volume_group'])
            if vg is None:
                vg = self.volumes.create_volume_group({
                    'name': body['volume_group'], 'quota': 0,
                    'is_dedup': bool(body['is_dedup'])})
            elif vg.is_dedup != bool(body['is_dedup']):
                raise fields.bad('volume group %s exists with is_dedup=%s'
                                 % (vg.name, vg.is_dedup))
            if session is None:
                if vg.replication_session:
                    raise fields.bad('volume group %s is already '
                                     'replicated' % vg.name)
                session = self.records.new(models.Session(
                    name=body['session'], current_role='target',
                    replication_peer_k2array=Ref.to(peer),
                    local_volume_group=Ref.to(vg),
                    replication_peer_volume_group_name=body[
                        'source_volume_group'],
                    remote_replication_session_name=body['source_session'],
                    rpo=body['rpo']))
                vg.replication_session = Ref.to(session)
                self.records.put(vg)
            elif session.local_volume_group != Ref.to(vg):
                raise fields.bad('session %s replicates another group' %
                                 session.name)
            # The other side took over (failback): this side follows now,
            # and what it held gets replaced by a full copy.
            for pv in self.sessions.members(session):
                self.sessions.release_base(pv)
                self.records.put(pv)
            self.sessions.rollback(session)
            session.current_role, session.state = 'target', 'in_sync'
            session.state_reason = ''
            self.sessions.put(session)
            self._ensure_volumes(session, vg, body['volumes'])
            self.shipper.forget(session.name)
        return {'session': session.id}

    def begin(self, body):
        with self.store.transaction():
            session = self._following_session(body)
            vg = self.sessions.group_of(session)
            self._ensure_volumes(session, vg, body['volumes'])
            consistent = session.consistent
            for vol in self.sessions.volumes(session):
                if vol.name in consistent:
                    partial = vol.layer
                    vol.layer = self.engine.new_layer(
                        parent=consistent[vol.name], dedup=vol.is_dedup)
                    self.engine.release(partial)
                else:
                    consistent[vol.name] = vol.layer
                    vol.layer = self.engine.freeze(vol.layer)
                self.records.put(vol)
            session.current_snapshot_id = body['generation']
            session.current_snapshot_progress = 0
            self.sessions.put(session)
        return {}

    def chunks(self, body):
        with self.store.transaction(durable=False):
            session = self._target_session(body)
            if session.current_snapshot_id is None:
                raise errors.WrongState('session %s has no cycle open' %
                                        session.name)
            vol = self.records.by(models.Volume, 'name', body.get('volume'))
            if vol is None or vol.volume_group != \
                    session.local_volume_group:
                raise errors.NotFound('volume %s is not in session %s' % (
                    body.get('volume'), session.name))
            for offset, data in body['chunks']:
                if data is None:
                    self.engine.unmap(vol.layer, offset, self.engine.chunk)
                else:
                    self.engine.write(vol.layer, offset,
                                      base64.b64decode(data))
        return {}

    def commit(self, body):
        with self.store.transaction():
            session = self._target_session(body)
            if session.current_snapshot_id != body['generation']:
                raise errors.WrongState('session %s: cycle %s is not open'
                                        % (session.name,
                                           body['generation']))
            for image in session.consistent.values():
                self.engine.release(image)
            session.consistent = {}
            session.generation_number = body['generation']
            session.current_snapshot_id = None
            session.current_snapshot_progress = 100
            session.last_sync_time = int(time.time())
            self.sessions.put(session)
        self.engine.flush()
        return {}

    def ping(self, body):
        """A cycle with nothing to ship: the image is the current one."""
        with self.store.transaction():
            session = self._following_session(body)
            if session.current_snapshot_id is None:
                session.generation_number = body['generation']
                session.last_sync_time = int(time.time())
                self.sessions.put(session)
        return {}

    def state(self, body):
        if body.get('state') not in sessions_mod.STATES:
            raise fields.bad('bad state %r' % (body.get('state'),))
        with self.store.transaction():
            session = self._target_session(body)
            if session.state != 'failed_over' or \
                    session.current_role == 'source':
                session.state = body['state']
                if session.current_role == 'source':
                    self.shipper.forget(session.name)
                self.sessions.put(session)
        return {}
