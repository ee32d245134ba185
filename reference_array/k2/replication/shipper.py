"""Asynchronous, snapshot-based replication between two reference arrays.

The K2 model: arrays are paired (``replication/peer_k2arrays``); a
*session* replicates one volume group to a group of the peer, and
``replication/peer_volumes`` names the peer volume of each local volume.
The source array decides the remote names, creates the remote objects
when the session first goes ``in_sync``, then ships one consistent point
in time of the whole group every ``rpo`` seconds (or at once when asked).

How a cycle works
-----------------
* Source: every volume's layer is frozen in one transaction (a
  consistent image of the group); the chunks that changed since the image
  shipped last time are sent; then the previous image is released.
* Target: ``begin`` freezes its volumes too, so an interrupted cycle can
  be rolled back; ``commit`` drops that image. A failover in the middle of
  a cycle therefore exposes the last complete image, never a mix.

Session states are K2's: ``idle``, ``in_sync``, ``suspended``,
``failed_over``; roles ``source`` and ``target``. ``failed_over`` on a
target makes its volumes writable; ``in_sync`` on a failed-over target
reverses the direction (the old source becomes the target and receives a
full copy), which is how a failback is done.

The arrays talk to each other over the K2 REST port, under
``/api/v2/_replication/``, with the credentials the peer was registered
with, and TLS verified against the certificate given at registration.
"""

import base64
import logging
import os
import threading
import time

import requests

from reference_array.k2 import api as k2api
from reference_array.k2 import objects as k2objects

LOG = logging.getLogger(__name__)
PEERS = 'replication/peer_k2arrays'
SESSIONS = 'replication/sessions'
PEER_VOLUMES = 'replication/peer_volumes'
STATES = ('idle', 'in_sync', 'suspended', 'failed_over')
# K2 accepts an RPO of 60 s or a multiple of 300 s; shorter ones are
# allowed here so tests do not wait.
MIN_RPO = 1
BATCH_CHUNKS = 64
PEER_TIMEOUT = (5.0, 120.0)
RETRY_SECONDS = 5.0

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


class PeerError(Exception):
    """The peer array could not be reached or refused a call."""


def _check_fields(resource, body, action):
    k2objects.check_fields(WRITABLE, resource, body, action)


def _ref(resource, obj):
    return {'ref': '/%s/%d' % (resource, obj['id'])}


def _id(ref):
    return int(ref['ref'].rsplit('/', 1)[1])


class PeerClient(object):
    """Calls from this array to a paired one."""

    def __init__(self, peer, ca_path):
        self.url = peer['_url'].rstrip('/')
        self.auth = (peer['_username'], peer['_password'])
        self.verify = ca_path if peer.get('verify_tls', True) else False

    def _request(self, method, path, body=None):
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


class Replication(object):

    def __init__(self, store, engine, objects, system, data_dir):
        self.store = store
        self.engine = engine
        self.objects = objects
        self.system = system
        self.data_dir = data_dir
        self._locks = {}
        self._locks_lock = threading.Lock()
        self._due = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name='replication')

    # -- lifecycle -------------------------------------------------------
    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _session_lock(self, name):
        with self._locks_lock:
            return self._locks.setdefault(name, threading.Lock())

    # -- peers -----------------------------------------------------------
    def _ca_path(self, peer):
        return os.path.join(self.data_dir, 'peer-%d-ca.pem' % peer['id'])

    def client(self, peer):
        return PeerClient(peer, self._ca_path(peer))

    def _peer_of(self, session):
        return self.store.get(PEERS, _id(session['replication_peer_k2array']))

    def _find(self, resource, **fields):
        for obj in self.store.all(resource):
            if all(obj.get(k) == v for k, v in fields.items()):
                return obj
        return None

    def add_peer(self, body, check=True):
        """Pair with another array; its credentials are checked first."""
        _check_fields(PEERS, body, 'create')
        name = k2objects._name('volume_groups', body)
        host = body.get('mgmt_host')
        if not isinstance(host, str) or not host:
            raise k2objects.bad('mgmt_host must be the peer\'s host[:port], '
                                'not %r' % (host,))
        for key in ('username', 'password'):
            if not isinstance(body.get(key), str) or not body[key]:
                raise k2objects.bad('%s of the peer array is mandatory' % key)
        ca_pem = body.get('ca_cert')
        if ca_pem is not None and (not isinstance(ca_pem, str) or
                                   'BEGIN CERTIFICATE' not in ca_pem):
            raise k2objects.bad('ca_cert must be the peer\'s PEM '
                                'certificate text')
        url = body.get('url') or 'https://%s' % host
        if not url.startswith(('https://', 'http://')):
            raise k2objects.bad('url %r is not an http(s) URL' % (url,))
        verify = k2objects._bool(body, 'verify_tls', True)
        with self.store.transaction():
            self.objects._unique(PEERS, 'name', name)
            self.objects._unique(PEERS, 'mgmt_host', host)
            peer = {'id': self.store.next_id(PEERS), 'name': name,
                    'mgmt_host': host, 'state': 'disconnected',
                    'system_id': None, 'verify_tls': verify, '_url': url,
                    '_username': body['username'],
                    '_password': body['password']}
            if ca_pem:
                with open(self._ca_path(peer), 'w') as f:
                    f.write(ca_pem)
            if check:
                try:
                    peer['system_id'] = self.client(peer).system_id()
                except PeerError as e:
                    raise k2objects.bad(str(e))
                peer['state'] = 'connected'
                if peer['system_id'] == self.system['system_id']:
                    raise k2objects.bad('%s is this array itself' % host)
            self.store.put(PEERS, peer['id'], peer)
        return peer

    def _peer_by_system(self, system_id):
        for peer in self.store.all(PEERS):
            if peer.get('system_id') is None:
                try:
                    peer['system_id'] = self.client(peer).system_id()
                    peer['state'] = 'connected'
                    self.store.put(PEERS, peer['id'], peer)
                except PeerError:
                    continue
            if peer['system_id'] == system_id:
                return peer
        raise k2objects.bad('array %s is not a replication peer of this '
                            'array' % system_id)

    # -- REST entry points -----------------------------------------------
    def create(self, resource, body):
        if resource == PEERS:
            return self.add_peer(body)
        _check_fields(resource, body, 'create')
        with self.store.transaction():
            if resource == SESSIONS:
                return self._create_session(body)
            return self._create_peer_volume(body)

    def update(self, resource, obj_id, body):
        _check_fields(resource, body, 'update')
        obj = self.objects._existing(resource, obj_id)
        if 'state' in body and body['state'] not in STATES:
            raise k2objects.bad('state %r is not one of %s' % (
                body['state'], ', '.join(STATES)))
        if resource == PEERS:
            with self.store.transaction():
                for key in ('username', 'password'):
                    if key in body:
                        obj['_' + key] = str(body[key])
                if 'verify_tls' in body:
                    obj['verify_tls'] = k2objects._bool(body, 'verify_tls')
                if body.get('ca_cert'):
                    with open(self._ca_path(obj), 'w') as f:
                        f.write(body['ca_cert'])
                self.store.put(PEERS, obj_id, obj)
            return obj
        if 'rpo' in body:
            obj['rpo'] = k2objects._int(body, 'rpo', minimum=MIN_RPO)
        if 'description' in body:
            obj['description'] = str(body['description'])
        self.store.put(SESSIONS, obj_id, obj)
        if 'state' in body:
            obj = self._change_state(obj, body['state'])
        return obj

    def delete(self, resource, obj_id):
        with self.store.transaction():
            obj = self.objects._existing(resource, obj_id)
            if resource == PEERS:
                ref = '/%s/%d' % (PEERS, obj_id)
                if self.objects._children(SESSIONS,
                                          'replication_peer_k2array', ref):
                    raise k2objects.bad('peer %s still has sessions' %
                                        obj['name'])
            elif resource == SESSIONS:
                self._drop_session(obj)
            else:
                self._drop_peer_volume(obj)
            self.store.delete(resource, obj_id)

    # -- sessions --------------------------------------------------------
    def _create_session(self, body):
        name = k2objects._name('volume_groups', body)
        self.objects._unique(SESSIONS, 'name', name)
        _r, peer = self.objects._deref(body, 'replication_peer_k2array',
                                       (PEERS,))
        _r, vg = self.objects._deref(body, 'local_volume_group',
                                     ('volume_groups',))
        remote_vg = k2objects._name(
            'volume_groups', body, 'replication_peer_volume_group_name')
        remote_session = k2objects._name(
            'volume_groups', body, 'remote_replication_session_name')
        rpo = k2objects._int(body, 'rpo', minimum=MIN_RPO) \
            if 'rpo' in body else 300
        if vg.get('replication_session'):
            raise k2objects.bad('volume group %s is already replicated' %
                                vg['name'])
        session = self.objects._new(SESSIONS, {
            'name': name, 'state': 'idle', 'current_role': 'source',
            'replication_peer_k2array': _ref(PEERS, peer),
            'local_volume_group': _ref('volume_groups', vg),
            'replication_peer_volume_group_name': remote_vg,
            'remote_replication_session_name': remote_session,
            'rpo': rpo, 'generation_number': 0,
            'current_snapshot_progress': 100, 'current_snapshot_id': None,
            'state_reason': '', 'last_sync_time': None,
            'description': str(body.get('description', '')),
            '_consistent': {}})
        vg['replication_session'] = _ref(SESSIONS, session)
        self.store.put('volume_groups', vg['id'], vg)
        return session

    def _create_peer_volume(self, body):
        name = k2objects._name('volumes', body)
        _r, vol = self.objects._deref(body, 'local_volume', ('volumes',))
        _r, session = self.objects._deref(body, 'replication_session',
                                          (SESSIONS,))
        if vol['volume_group'] != session['local_volume_group']:
            raise k2objects.bad('volume %s is not in the volume group of '
                                'session %s' % (vol['name'],
                                                session['name']))
        session_ref = '/%s/%d' % (SESSIONS, session['id'])
        for pv in self.objects._children(PEER_VOLUMES, 'replication_session',
                                         session_ref):
            if pv['name'] == name or pv['local_volume']['ref'] == \
                    '/volumes/%d' % vol['id']:
                raise k2objects.bad('session %s already replicates %s' % (
                    session['name'], name))
        pv = self.objects._new(PEER_VOLUMES, {
            'name': name, 'local_volume': _ref('volumes', vol),
            'replication_session': _ref(SESSIONS, session), '_base': None})
        if session['state'] == 'in_sync':
            self.request_sync(session['name'])
        return pv

    def _members(self, session):
        ref = '/%s/%d' % (SESSIONS, session['id'])
        return self.objects._children(PEER_VOLUMES, 'replication_session',
                                      ref)

    def _release_base(self, pv):
        if pv.get('_base'):
            self.engine.release(pv['_base'])
            pv['_base'] = None

    def _drop_peer_volume(self, pv):
        self._release_base(pv)

    def _drop_session(self, session):
        self._rollback(session)
        for pv in self._members(session):
            self._release_base(pv)
            self.store.delete(PEER_VOLUMES, pv['id'])
        vg = self.store.get('volume_groups',
                            _id(session['local_volume_group']))
        if vg is not None:
            vg['replication_session'] = None
            self.store.put('volume_groups', vg['id'], vg)
            self._set_read_only(session, False)
        self._due.pop(session['name'], None)

    def _volumes(self, session):
        ref = session['local_volume_group']['ref']
        return self.objects._children('volumes', 'volume_group', ref)

    def _set_read_only(self, session, read_only):
        for vol in self._volumes(session):
            if vol['read_only'] != read_only:
                vol['read_only'] = read_only
                self.store.put('volumes', vol['id'], vol)

    def _rollback(self, session):
        """Drop a half-applied cycle: back to the last complete image."""
        consistent = session.get('_consistent') or {}
        for vol in self._volumes(session):
            image = consistent.get(vol['name'])
            if image is None:
                continue
            partial = vol['_layer']
            vol['_layer'] = self.engine.new_layer(parent=image,
                                                  dedup=vol['is_dedup'])
            self.engine.release(partial)
            self.store.put('volumes', vol['id'], vol)
        for image in consistent.values():
            self.engine.release(image)
        session['_consistent'] = {}
        session['current_snapshot_id'] = None
        session['current_snapshot_progress'] = 100

    def _change_state(self, session, state):
        if state not in STATES:
            raise k2objects.bad('state %r is not one of %s' % (
                state, ', '.join(STATES)))
        lock = self._session_lock(session['name'])
        with lock:
            session = self.store.get(SESSIONS, session['id'])
            role = session['current_role']
            if state == 'failed_over':
                if role != 'target':
                    raise k2objects.bad(
                        'session %s is the source; fail over on the target '
                        'array' % session['name'])
                with self.store.transaction():
                    self._rollback(session)
                    self._set_read_only(session, False)
                    session['state'] = 'failed_over'
                    self.store.put(SESSIONS, session['id'], session)
                self._tell_peer(session, 'suspended')
                return session
            if role == 'target':
                if state != 'in_sync' or session['state'] != 'failed_over':
                    raise k2objects.bad(
                        'session %s is a replication target; change its '
                        'state on the source array' % session['name'])
                return self._reverse(session)
            if state == 'in_sync':
                if session['state'] == 'in_sync':
                    # Already replicating: ship a new image now.
                    self.request_sync(session['name'])
                    return session
                self._attach_peer(session)
                session = self.store.get(SESSIONS, session['id'])
                session['state'], session['state_reason'] = 'in_sync', ''
                self.store.put(SESSIONS, session['id'], session)
                self.request_sync(session['name'])
                return session
            session['state'] = state
            self.store.put(SESSIONS, session['id'], session)
            self._due.pop(session['name'], None)
            self._tell_peer(session, state)
            return session

    def _tell_peer(self, session, state):
        """Mirror a state change; the peer may be gone (failover)."""
        peer = self._peer_of(session)
        try:
            self.client(peer).call('state', {
                'session': session['remote_replication_session_name'],
                'state': state})
        except PeerError as e:
            LOG.warning('session %s: could not tell the peer about %s: %s',
                        session['name'], state, e)

    def _attach_peer(self, session):
        """Create or adopt the remote group, volumes and session."""
        vg = self.store.get('volume_groups',
                            _id(session['local_volume_group']))
        volumes = []
        for pv in self._members(session):
            vol = self.store.get('volumes', _id(pv['local_volume']))
            volumes.append({'name': pv['name'], 'source_name': vol['name'],
                            'size': vol['size']})
        try:
            self.client(self._peer_of(session)).call('attach', {
                'system_id': self.system['system_id'],
                'session': session['remote_replication_session_name'],
                'source_session': session['name'],
                'volume_group': session['replication_peer_volume_group_name'],
                'source_volume_group': vg['name'],
                'is_dedup': vg['is_dedup'], 'rpo': session['rpo'],
                'volumes': volumes})
        except PeerError as e:
            raise k2objects.bad(str(e))

    def _reverse(self, session):
        """in_sync on a failed-over target: this side becomes the source."""
        with self.store.transaction():
            session['current_role'] = 'source'
            self.store.put(SESSIONS, session['id'], session)
            for pv in self._members(session):
                self._release_base(pv)
                self.store.put(PEER_VOLUMES, pv['id'], pv)
        try:
            self._attach_peer(session)
        except Exception:
            with self.store.transaction():
                session['current_role'] = 'target'
                self.store.put(SESSIONS, session['id'], session)
            raise
        session = self.store.get(SESSIONS, session['id'])
        session['state'], session['state_reason'] = 'in_sync', ''
        self.store.put(SESSIONS, session['id'], session)
        self.request_sync(session['name'])
        return session

    # -- the peer's side -------------------------------------------------
    def peer_call(self, op, body):
        if not isinstance(body, dict):
            raise k2api.error(400, 'the request body must be a JSON object')
        handler = getattr(self, '_peer_' + op, None)
        if handler is None:
            raise k2api.error(404, 'no replication operation %s' % op)
        return handler(body)

    def _target_session(self, body):
        session = self._find(SESSIONS, name=body.get('session'))
        if session is None:
            raise k2api.error(404, 'no replication session %s' % (
                body.get('session'),))
        return session

    def _following_session(self, body):
        """The target session of a call, refusing one that took over."""
        session = self._target_session(body)
        if session['current_role'] != 'target' or \
                session['state'] == 'failed_over':
            raise k2api.error(409, 'session %s is %s as %s' % (
                session['name'], session['state'], session['current_role']))
        return session

    def _ensure_volumes(self, session, vg, volumes):
        session_ref = _ref(SESSIONS, session)
        for spec in volumes:
            vol = self._find('volumes', name=spec['name'])
            if vol is None:
                vol = self.objects._create_volumes({
                    'name': spec['name'], 'size': spec['size'],
                    'volume_group': _ref('volume_groups', vg)})
            elif vol['volume_group'] != _ref('volume_groups', vg):
                raise k2objects.bad('volume %s exists outside %s' % (
                    spec['name'], vg['name']))
            if vol['size'] < spec['size']:
                vol['size'] = spec['size']
            vol['read_only'] = True
            self.store.put('volumes', vol['id'], vol)
            known = {pv['local_volume']['ref']
                     for pv in self._members(session)}
            if '/volumes/%d' % vol['id'] not in known:
                self.objects._new(PEER_VOLUMES, {
                    'name': spec['source_name'],
                    'local_volume': _ref('volumes', vol),
                    'replication_session': session_ref, '_base': None})

    def _peer_attach(self, body):
        peer = self._peer_by_system(body.get('system_id'))
        with self.store.transaction():
            session = self._find(SESSIONS, name=body['session'])
            vg = self._find('volume_groups', name=body['volume_group'])
            if vg is None:
                vg = self.objects._create_volume_groups({
                    'name': body['volume_group'], 'quota': 0,
                    'is_dedup': bool(body['is_dedup'])})
            elif vg['is_dedup'] != bool(body['is_dedup']):
                raise k2objects.bad('volume group %s exists with is_dedup=%s'
                                    % (vg['name'], vg['is_dedup']))
            if session is None:
                if vg.get('replication_session'):
                    raise k2objects.bad('volume group %s is already '
                                        'replicated' % vg['name'])
                session = self.objects._new(SESSIONS, {
                    'name': body['session'], 'current_role': 'target',
                    'replication_peer_k2array': _ref(PEERS, peer),
                    'local_volume_group': _ref('volume_groups', vg),
                    'replication_peer_volume_group_name':
                        body['source_volume_group'],
                    'remote_replication_session_name':
                        body['source_session'],
                    'rpo': body['rpo'], 'generation_number': 0,
                    'current_snapshot_progress': 100,
                    'current_snapshot_id': None, 'state_reason': '',
                    'last_sync_time': None, 'description': '',
                    '_consistent': {}})
                vg['replication_session'] = _ref(SESSIONS, session)
                self.store.put('volume_groups', vg['id'], vg)
            elif session['local_volume_group'] != _ref('volume_groups', vg):
                raise k2objects.bad('session %s replicates another group' %
                                    session['name'])
            # The other side took over (failback): this side follows now,
            # and what it held gets replaced by a full copy.
            for pv in self._members(session):
                self._release_base(pv)
                self.store.put(PEER_VOLUMES, pv['id'], pv)
            self._rollback(session)
            session.update({'current_role': 'target', 'state': 'in_sync',
                            'state_reason': ''})
            self.store.put(SESSIONS, session['id'], session)
            self._ensure_volumes(session, vg, body['volumes'])
            self._due.pop(session['name'], None)
        return {'session': session['id']}

    def _peer_begin(self, body):
        with self.store.transaction():
            session = self._following_session(body)
            vg = self.store.get('volume_groups',
                                _id(session['local_volume_group']))
            self._ensure_volumes(session, vg, body['volumes'])
            consistent = session.get('_consistent') or {}
            for vol in self._volumes(session):
                if vol['name'] in consistent:
                    partial = vol['_layer']
                    vol['_layer'] = self.engine.new_layer(
                        parent=consistent[vol['name']],
                        dedup=vol['is_dedup'])
                    self.engine.release(partial)
                else:
                    consistent[vol['name']] = vol['_layer']
                    vol['_layer'] = self.engine.freeze(vol['_layer'])
                self.store.put('volumes', vol['id'], vol)
            session['_consistent'] = consistent
            session['current_snapshot_id'] = body['generation']
            session['current_snapshot_progress'] = 0
            self.store.put(SESSIONS, session['id'], session)
        return {}

    def _peer_chunks(self, body):
        with self.store.transaction(durable=False):
            session = self._target_session(body)
            if session['current_snapshot_id'] is None:
                raise k2api.error(409, 'session %s has no cycle open' %
                                  session['name'])
            vol = self._find('volumes', name=body.get('volume'))
            if vol is None or vol['volume_group'] != \
                    session['local_volume_group']:
                raise k2api.error(404, 'volume %s is not in session %s' % (
                    body.get('volume'), session['name']))
            for offset, data in body['chunks']:
                if data is None:
                    self.engine.unmap(vol['_layer'], offset,
                                      self.engine.chunk)
                else:
                    self.engine.write(vol['_layer'], offset,
                                      base64.b64decode(data))
        return {}

    def _peer_commit(self, body):
        with self.store.transaction():
            session = self._target_session(body)
            if session['current_snapshot_id'] != body['generation']:
                raise k2api.error(409, 'session %s: cycle %s is not open' % (
                    session['name'], body['generation']))
            for image in (session.get('_consistent') or {}).values():
                self.engine.release(image)
            session.update({'_consistent': {},
                            'generation_number': body['generation'],
                            'current_snapshot_id': None,
                            'current_snapshot_progress': 100,
                            'last_sync_time': int(time.time())})
            self.store.put(SESSIONS, session['id'], session)
        self.engine.flush()
        return {}

    def _peer_ping(self, body):
        """A cycle with nothing to ship: the image is the current one."""
        with self.store.transaction():
            session = self._following_session(body)
            if session['current_snapshot_id'] is None:
                session['generation_number'] = body['generation']
                session['last_sync_time'] = int(time.time())
                self.store.put(SESSIONS, session['id'], session)
        return {}

    def _peer_state(self, body):
        if body.get('state') not in STATES:
            raise k2api.error(400, 'bad state %r' % (body.get('state'),))
        with self.store.transaction():
            session = self._target_session(body)
            if session['state'] != 'failed_over' or \
                    session['current_role'] == 'source':
                session['state'] = body['state']
                if session['current_role'] == 'source':
                    self._due.pop(session['name'], None)
                self.store.put(SESSIONS, session['id'], session)
        return {}

    # -- shipping ----------------------------------------------------------
    def request_sync(self, name):
        self._due[name] = 0.0
        self._wake.set()

    def _loop(self):
        for session in self.store.all(SESSIONS):
            if session['current_role'] == 'source' and \
                    session['state'] == 'in_sync':
                self._due[session['name']] = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            for name, due in list(self._due.items()):
                if due <= now and not self._stop.is_set():
                    self._cycle(name)
            self._wake.wait(0.5)
            self._wake.clear()

    def _cycle(self, name):
        lock = self._session_lock(name)
        with lock:
            session = self._find(SESSIONS, name=name)
            if session is None or session['current_role'] != 'source' or \
                    session['state'] != 'in_sync':
                self._due.pop(name, None)
                return
            try:
                self.sync(session)
                session = self.store.get(SESSIONS, session['id'])
                delay = session['rpo']
            except PeerError as e:
                LOG.warning('session %s: replication cycle failed: %s',
                            name, e)
                session = self.store.get(SESSIONS, session['id'])
                session['state_reason'] = str(e)
                if ' 409: ' in str(e):
                    # The target has been failed over: stop shipping.
                    session['state'] = 'suspended'
                self.store.put(SESSIONS, session['id'], session)
                delay = RETRY_SECONDS
            if name in self._due:
                self._due[name] = time.monotonic() + delay

    def sync(self, session):
        """Ship one consistent image of the group to the peer."""
        client = self.client(self._peer_of(session))
        with self.store.transaction():
            # Above anything this session saw, whichever array numbered it
            # (a reversed session continues the peer's numbering).
            generation = max(self.store.next_id('generation'),
                             session['generation_number'] + 1)
            plan = []
            for pv in self._members(session):
                vol = self.store.get('volumes', _id(pv['local_volume']))
                if pv['_base'] and self.engine.layer_is_empty(
                        vol['_layer']) and self.engine.parent_of(
                        vol['_layer']) == pv['_base'] and \
                        pv.get('_size') == vol['size']:
                    # Unchanged since the last cycle: nothing to freeze.
                    plan.append((pv, vol, None))
                    continue
                image = vol['_layer']
                vol['_layer'] = self.engine.freeze(image)
                self.store.put('volumes', vol['id'], vol)
                plan.append((pv, vol, image))
            unchanged = session['generation_number'] and all(
                image is None for _pv, _vol, image in plan)
        remote = session['remote_replication_session_name']
        if unchanged:
            # Nothing to ship; still make sure the peer is there and
            # following, so a lost peer shows up within one RPO.
            client.call('ping', {'session': remote,
                                 'generation': generation})
            with self.store.transaction():
                session = self.store.get(SESSIONS, session['id'])
                session.update({'generation_number': generation,
                                'last_sync_time': int(time.time()),
                                'state_reason': ''})
                self.store.put(SESSIONS, session['id'], session)
            return generation
        with self.store.transaction():
            session['current_snapshot_id'] = generation
            session['current_snapshot_progress'] = 0
            self.store.put(SESSIONS, session['id'], session)
        try:
            client.call('begin', {
                'session': remote, 'generation': generation,
                'volumes': [{'name': pv['name'], 'source_name': vol['name'],
                             'size': vol['size']}
                            for pv, vol, _img in plan]})
            for pv, _vol, image in plan:
                if image is not None:
                    self._ship(client, remote, pv['name'], image,
                               pv['_base'])
            client.call('commit', {'session': remote,
                                   'generation': generation})
        except BaseException:
            with self.store.transaction():
                for _pv, _vol, image in plan:
                    if image is not None:
                        self.engine.release(image)
                session = self.store.get(SESSIONS, session['id'])
                session['current_snapshot_id'] = None
                self.store.put(SESSIONS, session['id'], session)
            raise
        with self.store.transaction():
            for pv, vol, image in plan:
                if image is None:
                    continue
                pv = self.store.get(PEER_VOLUMES, pv['id'])
                if pv is None:
                    self.engine.release(image)
                    continue
                self._release_base(pv)
                pv['_base'], pv['_size'] = image, vol['size']
                self.store.put(PEER_VOLUMES, pv['id'], pv)
            session = self.store.get(SESSIONS, session['id'])
            session.update({'generation_number': generation,
                            'current_snapshot_id': None,
                            'current_snapshot_progress': 100,
                            'state_reason': '',
                            'last_sync_time': int(time.time())})
            self.store.put(SESSIONS, session['id'], session)
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
