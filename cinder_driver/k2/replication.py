"""Replication v2.1 of the K2 drivers, on K2 replication sessions.

A replicated volume's volume group gets a session to the paired array
(``replication/sessions``, one per group) that ships a consistent image of
the group every RPO. The peer objects carry the same names as the local
ones (``cvg-``/``cv-``, session ``crs-``), so after a failover every other
operation finds its objects by the usual names on whichever array is
active.

* ``failover``: each replicated volume's session on the secondary goes
  ``failed_over`` (its last complete image becomes writable there).
  Volumes that are not replicated go to ``error``: they stay on the lost
  array.
* failback (``backend_id=default``): the secondary's sessions go
  ``in_sync``, which reverses them: the primary receives a full copy. Once
  that copy is complete the primary takes over again (``failed_over``)
  and replicates to the secondary (``in_sync``).
* ``active_backend_id`` (kept by Cinder across restarts) selects the array
  the adapter talks to from the start.
"""

import time

from cinder import exception
from cinder.i18n import _
from cinder.objects import fields
from oslo_log import log as logging

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import naming
from cinder_driver.common import tls
from cinder_driver.k2 import rest as k2_rest

LOG = logging.getLogger(__name__)
SESSION_PREFIX = 'crs-'
DEFAULT_RPO = 60
PRIMARY = 'default'
POLL_SECONDS = 1.0
DEVICE_KEYS = {'backend_id', 'san_ip', 'san_login', 'san_password',
               'login', 'password', 'san_api_port', 'rpo',
               'driver_ssl_cert_verify', 'driver_ssl_cert_path'}


def session_name(volume):
    return SESSION_PREFIX + volume.name_id


def _bad_device(key, value, reason):
    return flash_exception.InvalidBackendConfig(
        option='replication_device %s' % key, value=value, reason=reason)


def parse_device(configuration):
    """The one replication_device of a backend, validated, or None."""
    devices = configuration.safe_get('replication_device') or []
    if not devices:
        return None
    if len(devices) > 1:
        raise _bad_device('backend_id', ', '.join(
            str(d.get('backend_id')) for d in devices),
            'a K2 array replicates to one paired array; give one '
            'replication_device')
    device = dict(devices[0])
    unknown = sorted(set(device) - DEVICE_KEYS)
    if unknown:
        raise _bad_device(unknown[0], device[unknown[0]],
                          'unknown key (known: %s)' % ', '.join(
                              sorted(DEVICE_KEYS)))
    backend_id = device.get('backend_id')
    if not backend_id or backend_id == PRIMARY:
        raise _bad_device('backend_id', backend_id,
                          'required, and "%s" names the primary' % PRIMARY)
    # The in-tree driver's form: backend_id is the array's address and
    # the credentials are login/password.
    san_ip = device.get('san_ip') or backend_id.rsplit(':', 1)[0]
    login = device.get('san_login') or device.get('login')
    password = device.get('san_password') or device.get('password')
    for key, value in (('san_login', login), ('san_password', password)):
        if not value:
            raise _bad_device(key, value, 'required')
    port = device.get('san_api_port')
    if port is None and ':' in backend_id and 'san_ip' not in device:
        port = backend_id.rsplit(':', 1)[1]
    try:
        port = int(port) if port is not None else None
        if port is not None and not 0 < port < 65536:
            raise ValueError()
    except ValueError:
        raise _bad_device('san_api_port', port, 'not a TCP port')
    try:
        rpo = int(device.get('rpo', DEFAULT_RPO))
    except ValueError:
        raise _bad_device('rpo', device.get('rpo'), 'not a number of '
                          'seconds')
    if rpo != 60 and (rpo <= 0 or rpo % 300):
        raise _bad_device('rpo', rpo, 'K2 takes 60 seconds or a multiple '
                          'of 300')
    verify = device.get('driver_ssl_cert_verify')
    if verify is None:
        # Like the backend: verified unless the section turned it off.
        verify = tls.verify(configuration, tls.K2, log=None) is not False
    elif str(verify).lower() in ('true', 'false'):
        verify = str(verify).lower() == 'true'
    else:
        raise _bad_device('driver_ssl_cert_verify', verify, 'true or false')
    if verify and device.get('driver_ssl_cert_path'):
        verify = device['driver_ssl_cert_path']
    return {'backend_id': backend_id, 'san_ip': san_ip, 'login': login,
            'password': password, 'port': port, 'rpo': rpo,
            'verify': verify}


class ReplicationOps(object):
    """Mixed into the K2 adapter: uses its clients and lookups."""

    replica = None          # the parsed replication_device
    primary = None          # client of the configured array
    secondary = None        # client of the replication_device
    active_backend_id = None

    def _setup_replication(self, make_client):
        self.replica = parse_device(self.configuration)
        if self.replica is None:
            if self.active_backend_id not in (None, PRIMARY):
                raise _bad_device('backend_id', self.active_backend_id,
                                  'the backend is failed over to it, but '
                                  'no replication_device is configured')
            return
        dev = self.replica
        self.secondary = make_client(dev['san_ip'], dev['login'],
                                     dev['password'], dev['port'],
                                     dev['verify'])
        if self.active_backend_id not in (None, PRIMARY,
                                          dev['backend_id']):
            raise _bad_device('backend_id', dev['backend_id'],
                              'the backend is failed over to %s, which is '
                              'not this replication_device' %
                              self.active_backend_id)
        if self.failed_over:
            self.client = self.secondary
        self._peer_refs = {}

    @property
    def failed_over(self):
        return bool(self.replica) and \
            self.active_backend_id == self.replica['backend_id']

    def _other(self):
        return self.primary if self.failed_over else self.secondary

    def _peer_ref(self, client, other):
        """Reference, on ``client``'s array, of its pairing to ``other``."""
        key = id(client)
        if key not in self._peer_refs:
            system_id = other.system_state().get('system_id')
            peer = client.find('replication/peer_k2arrays',
                               system_id=system_id)
            if peer is None:
                raise flash_exception.InvalidBackendConfig(
                    option='replication_device backend_id',
                    value=self.replica['backend_id'],
                    reason='array %s is not paired with array %s (no '
                           'replication/peer_k2arrays entry)' % (
                               client.http.array_name,
                               other.http.array_name))
            self._peer_refs[key] = k2_rest.ref('replication/peer_k2arrays',
                                               peer['id'])
        return self._peer_refs[key]

    def _check_replication(self):
        if not self.replica:
            return
        try:
            self._peer_ref(self.client, self._other())
        except flash_exception.ArrayAPIError as e:
            # The other array may be the one that was lost; replicated
            # creates will say so, everything else works.
            LOG.warning('Replication peer not reachable: %s', e)

    def _replication_stats(self, pool):
        if not self.replica:
            pool['replication_enabled'] = False
            return
        pool.update({'replication_enabled': True,
                     'replication_type': ['async'],
                     'replication_count': 1,
                     'replication_targets': [self.replica['backend_id']]})

    # -- per volume --------------------------------------------------------
    def _replicate(self, volume, group_id, volume_id):
        """Start replicating a volume's group; undone on failure."""
        if self.failed_over:
            raise exception.VolumeBackendAPIException(data=_(
                'replicated volumes cannot be created while the backend is '
                'failed over to %s; fail back first') %
                self.replica['backend_id'])
        name = session_name(volume)
        peer = self._peer_ref(self.client, self._other())
        session = self.client.create_unique('replication/sessions', {
            'name': name, 'replication_peer_k2array': peer,
            'local_volume_group': k2_rest.ref('volume_groups', group_id),
            'replication_peer_volume_group_name': naming.group_name(volume),
            'remote_replication_session_name': name,
            'rpo': self.replica['rpo']}, name=name)
        try:
            self.client.create('replication/peer_volumes', {
                'local_volume': k2_rest.ref('volumes', volume_id),
                'name': naming.volume_name(volume),
                'replication_session': k2_rest.ref('replication/sessions',
                                                   session['id'])})
            self.client.update('replication/sessions', session['id'],
                               {'state': 'in_sync'})
        except Exception:
            # The peer may already hold the copy (a start whose answer
            # was lost): both sides go.
            try:
                self._unreplicate(volume)
            except Exception as e:
                LOG.warning('Cleanup of the replication of volume %(vol)s '
                            'failed: %(err)s', {'vol': volume.id, 'err': e})
            raise
        return {'replication_status': fields.ReplicationStatus.ENABLED}

    def _unreplicate(self, volume):
        """Stop replicating; remove the peer's copy when it is reachable."""
        session = self.client.find('replication/sessions',
                                   name=session_name(volume))
        if session is not None:
            self.client.delete('replication/sessions', session['id'])
        other = self._other()
        if other is None:
            return
        try:
            self._remove_copy(other, volume)
        except flash_exception.ArrayAPIError as e:
            LOG.warning('The replica of volume %(vol)s stays on %(array)s: '
                        '%(err)s', {'vol': volume.id,
                                    'array': other.http.array_name,
                                    'err': e})

    def _remove_copy(self, client, volume):
        session = client.find('replication/sessions',
                              name=session_name(volume))
        if session is not None:
            client.delete('replication/sessions', session['id'])
        vol = client.find('volumes', name=naming.volume_name(volume))
        if vol is not None:
            for mapping in client.search('mappings', **{
                    'volume.ref': '/volumes/%d' % vol['id']}):
                client.delete('mappings', mapping['id'])
            client.delete('volumes', vol['id'])
        group = client.find('volume_groups', name=naming.group_name(volume))
        if group is not None:
            client.delete('volume_groups', group['id'])

    @staticmethod
    def _is_replicated(volume):
        return volume.replication_status in (
            fields.ReplicationStatus.ENABLED,
            fields.ReplicationStatus.FAILED_OVER,
            fields.ReplicationStatus.ERROR)

    # -- failover and failback ---------------------------------------------
    def failover(self, volumes, secondary_id):
        """Array side of a failover (A/A: before failover_completed)."""
        if not self.replica:
            raise exception.InvalidReplicationTarget(reason=_(
                'no replication_device is configured'))
        if secondary_id == PRIMARY:
            if not self.failed_over:
                raise exception.InvalidReplicationTarget(reason=_(
                    'the backend is not failed over; nothing to fail back'))
            return PRIMARY, self._failback(volumes)
        if secondary_id not in (None, self.replica['backend_id']):
            raise exception.InvalidReplicationTarget(reason=_(
                'unknown replication target %(id)s (configured: %(known)s)')
                % {'id': secondary_id, 'known': self.replica['backend_id']})
        if self.failed_over:
            raise exception.InvalidReplicationTarget(reason=_(
                'the backend is already failed over to %s') %
                self.replica['backend_id'])
        return self.replica['backend_id'], self._failover(volumes)

    def failover_completed(self, active_backend_id):
        """Use the array ``failover`` made active (A/A: every service)."""
        if not self.replica:
            return
        if active_backend_id in (None, PRIMARY):
            self.active_backend_id = None
            self.client = self.primary
        else:
            self.active_backend_id = active_backend_id
            self.client = self.secondary
        self._stats = None
        # Host ids and targets belong to the array that was active.
        self._hosts = {}
        self._load_active()

    def _by_name(self, client, resource, names):
        """{name: object} for many names in one call."""
        if not names:
            return {}
        found = client.search(resource, name__in=','.join(sorted(names)))
        return {obj['name']: obj for obj in found}

    def _failover(self, volumes):
        target = self.secondary
        replicated = [v for v in volumes if self._is_replicated(v)]
        sessions = self._by_name(target, 'replication/sessions',
                                 {session_name(v) for v in replicated})
        copies = self._by_name(target, 'volumes',
                               {naming.volume_name(v) for v in replicated})
        updates = []
        for volume in volumes:
            if volume not in replicated:
                updates.append({'volume_id': volume.id,
                                'updates': {'status': 'error'}})
                continue
            session = sessions.get(session_name(volume))
            copy = copies.get(naming.volume_name(volume))
            try:
                if session is None or copy is None:
                    raise exception.VolumeBackendAPIException(data=_(
                        'no replica on %s') % target.http.array_name)
                if session['state'] != 'failed_over':
                    target.update('replication/sessions', session['id'],
                                  {'state': 'failed_over'})
            except Exception as e:
                LOG.error('Failover of volume %(vol)s failed: %(err)s',
                          {'vol': volume.id, 'err': e})
                updates.append({'volume_id': volume.id, 'updates': {
                    'replication_status': fields.ReplicationStatus.ERROR,
                    'status': 'error'}})
                continue
            updates.append({'volume_id': volume.id, 'updates': {
                'replication_status': fields.ReplicationStatus.FAILED_OVER,
                'provider_id': self._pid(
                    k2_rest.ref_id(copy['volume_group']), copy['id'],
                    on_secondary=True)}})
        return updates

    def _wait_reversed(self, client, session, before):
        deadline = time.monotonic() + \
            self.configuration.k2_replication_timeout
        while True:
            now = client.get('replication/sessions', session['id'])
            if now.get('generation_number', 0) > before and \
                    now.get('current_snapshot_id') is None:
                return now
            if now.get('state_reason'):
                raise exception.VolumeBackendAPIException(data=_(
                    'copy back to the primary failed: %s') %
                    now['state_reason'])
            if time.monotonic() > deadline:
                raise exception.VolumeBackendAPIException(data=_(
                    'copy back to the primary did not finish in %d s') %
                    self.configuration.k2_replication_timeout)
            time.sleep(POLL_SECONDS)

    def _failback(self, volumes):
        source, primary = self.secondary, self.primary
        try:
            primary.system_state()
        except flash_exception.ArrayAPIError as e:
            raise exception.UnableToFailOver(reason=_(
                'the primary array is not reachable: %s') % e)
        replicated = [v for v in volumes if v.replication_status ==
                      fields.ReplicationStatus.FAILED_OVER]
        names = {session_name(v) for v in replicated}
        on_source = self._by_name(source, 'replication/sessions', names)
        on_primary = self._by_name(primary, 'replication/sessions', names)
        copies = self._by_name(primary, 'volumes',
                               {naming.volume_name(v) for v in volumes})
        serving = self._by_name(source, 'volumes',
                                {naming.volume_name(v) for v in replicated})
        updates, started = [], []
        # All copies back run at once; then each volume is switched over.
        for volume in replicated:
            session = on_source.get(session_name(volume))
            try:
                if session is None or \
                        session_name(volume) not in on_primary:
                    raise exception.VolumeBackendAPIException(data=_(
                        'its replication session is gone'))
                source.update('replication/sessions', session['id'],
                              {'state': 'in_sync'})
                started.append((volume, session))
            except Exception as e:
                updates.append(self._failback_error(volume, e))
        for volume, session in started:
            try:
                self._wait_reversed(source, session,
                                    session.get('generation_number', 0))
                # The secondary's copy goes back to being a read-only
                # target: no host keeps it mapped.
                serving_copy = serving.get(naming.volume_name(volume))
                if serving_copy is not None:
                    for mapping in source.search('mappings', **{
                            'volume.ref': '/volumes/%d' % serving_copy['id']}):
                        source.delete('mappings', mapping['id'])
                back = on_primary[session_name(volume)]
                primary.update('replication/sessions', back['id'],
                               {'state': 'failed_over'})
                primary.update('replication/sessions', back['id'],
                               {'state': 'in_sync'})
                copy = copies[naming.volume_name(volume)]
            except Exception as e:
                updates.append(self._failback_error(volume, e))
                continue
            updates.append({'volume_id': volume.id, 'updates': {
                'replication_status': fields.ReplicationStatus.ENABLED,
                'provider_id': self._pid(
                    k2_rest.ref_id(copy['volume_group']), copy['id'],
                    on_secondary=False)}})
        done = {u['volume_id'] for u in updates}
        for volume in volumes:
            if volume.id in done:
                continue
            copy = copies.get(naming.volume_name(volume))
            if copy is None:
                # Created while failed over, not replicated: it exists on
                # the secondary only.
                updates.append({'volume_id': volume.id,
                                'updates': {'status': 'error'}})
                continue
            updates.append({'volume_id': volume.id, 'updates': {
                'status': 'in-use' if volume.volume_attachment
                else 'available'}})
        return updates

    @staticmethod
    def _failback_error(volume, error):
        LOG.error('Failback of volume %(vol)s failed: %(err)s',
                  {'vol': volume.id, 'err': error})
        return {'volume_id': volume.id, 'updates': {
            'replication_status': fields.ReplicationStatus.ERROR,
            'status': 'error'}}

    def get_replication_error_status(self, groups):
        """Volumes whose replication session reports a problem."""
        if not self.replica:
            return [], []
        updates = []
        for session in self.client.search('replication/sessions',
                                          current_role='source'):
            if not session.get('state_reason') and \
                    session.get('state') == 'in_sync':
                continue
            group_ref = session['local_volume_group']['ref']
            for vol in self.client.search('volumes', **{
                    'volume_group.ref': group_ref}):
                owner = vol.get('description') or ''
                if owner.startswith(self.OWNER_PREFIX):
                    updates.append({
                        'volume_id': owner[len(self.OWNER_PREFIX):],
                        'updates': {'replication_status':
                                    fields.ReplicationStatus.ERROR}})
        return updates, []
