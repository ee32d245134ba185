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
  the driver talks to from the start.

The driver keeps one adapter per array and picks the active one; this
manager works on both arrays' clients and never changes which is active.
"""

import time

from cinder import exception
from cinder.i18n import _
from cinder import objects
from cinder.objects import fields
from oslo_log import log as logging

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import naming
from cinder_driver.common import tls
from cinder_driver.k2 import group_replication
from cinder_driver.k2 import provider_id
from cinder_driver.k2 import specs

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


class ReplicationManager(object):
    """Replication between the configured array and its replication target.

    :param device: the parsed replication_device (``parse_device``).
    :param primary: K2Client of the configured array.
    :param secondary: K2Client of the replication_device.
    """

    def __init__(self, configuration, device, primary, secondary):
        self.configuration = configuration
        self.device = device
        self.primary = primary
        self.secondary = secondary
        self._peers = {}
        self.groups = group_replication.GroupReplication(self)

    @property
    def backend_id(self):
        return self.device['backend_id']

    def _other(self, client):
        return self.primary if client is self.secondary else self.secondary

    def peer(self, client):
        """Id, on ``client``'s array, of its pairing to the other array."""
        key = id(client)
        if key not in self._peers:
            other = self._other(client)
            system_id = other.system_state().system_id
            peer = client.peer_array_id(system_id)
            if peer is None:
                raise flash_exception.InvalidBackendConfig(
                    option='replication_device backend_id',
                    value=self.backend_id,
                    reason='array %s is not paired with array %s (no '
                           'replication/peer_k2arrays entry)' % (
                               client.name, other.name))
            self._peers[key] = peer
        return self._peers[key]

    def check(self, client):
        """Warn when the pairing cannot be confirmed (setup goes on)."""
        try:
            self.peer(client)
        except flash_exception.ArrayAPIError as e:
            # The other array may be the one that was lost; replicated
            # creates will say so, everything else works.
            LOG.warning('Replication peer not reachable: %s', e)

    def stats(self, target):
        target.update({'replication_enabled': True,
                       'consistent_group_replication_enabled': True,
                       'replication_type': ['async'],
                       'replication_count': 1,
                       'replication_targets': [self.backend_id]})

    @staticmethod
    def is_replicated(volume):
        return volume.replication_status in (
            fields.ReplicationStatus.ENABLED,
            fields.ReplicationStatus.FAILED_OVER,
            fields.ReplicationStatus.ERROR)

    # -- per volume --------------------------------------------------------
    def start(self, client, volume, group_id, volume_id):
        """Start replicating a volume's group from ``client``'s array."""
        if client is self.secondary:
            raise exception.VolumeBackendAPIException(data=_(
                'replicated volumes cannot be created while the backend is '
                'failed over to %s; fail back first') % self.backend_id)
        name = session_name(volume)
        session = client.create_session(
            name, self.peer(client), group_id, naming.group_name(volume),
            self.device['rpo'])
        try:
            client.add_peer_volume(session, volume_id,
                                   naming.volume_name(volume))
            client.set_session_state(session, 'in_sync')
        except Exception:
            # The peer may already hold the copy (a start whose answer
            # was lost): both sides go.
            try:
                self.stop(client, volume)
            except Exception as e:
                LOG.warning('Cleanup of the replication of volume %(vol)s '
                            'failed: %(err)s', {'vol': volume.id, 'err': e})
            raise
        return {'replication_status': fields.ReplicationStatus.ENABLED}

    def stop(self, client, volume):
        """Stop replicating; remove the peer's copy when it is reachable."""
        session = client.session_by_name(session_name(volume))
        if session is not None:
            client.delete_session(session.id)
        other = self._other(client)
        try:
            self._remove_copy(other, volume)
        except flash_exception.ArrayAPIError as e:
            LOG.warning('The replica of volume %(vol)s stays on %(array)s: '
                        '%(err)s', {'vol': volume.id, 'array': other.name,
                                    'err': e})

    @staticmethod
    def _remove_copy(client, volume):
        session = client.session_by_name(session_name(volume))
        if session is not None:
            client.delete_session(session.id)
        vol = client.volume_by_name(naming.volume_name(volume))
        if vol is not None:
            client.unmap(client.mappings_of(volume_id=vol.id))
            client.delete_volume(vol.id)
        group = client.volume_group_by_name(naming.group_name(volume))
        if group is not None:
            client.delete_volume_group(group.id)

    def _provider_id(self, copy, on_secondary):
        return str(provider_id.ProviderId(
            copy.group_id, copy.id,
            array=self.backend_id if on_secondary else None))

    # -- failover and failback ---------------------------------------------
    def failover(self, volumes, secondary_id, active_backend_id):
        """Array side of a failover or failback; (new active id, updates).

        ``active_backend_id``: the array the driver uses now. Which array
        the driver uses afterwards is the driver's business
        (failover_completed).
        """
        failed_over = active_backend_id == self.backend_id
        if secondary_id == PRIMARY:
            if not failed_over:
                raise exception.InvalidReplicationTarget(reason=_(
                    'the backend is not failed over; nothing to fail back'))
            return PRIMARY, self._failback(volumes)
        if secondary_id not in (None, self.backend_id):
            raise exception.InvalidReplicationTarget(reason=_(
                'unknown replication target %(id)s (configured: %(known)s)')
                % {'id': secondary_id, 'known': self.backend_id})
        if failed_over:
            raise exception.InvalidReplicationTarget(reason=_(
                'the backend is already failed over to %s') %
                self.backend_id)
        return self.backend_id, self._failover(volumes)

    def _failover(self, volumes):
        target = self.secondary
        replicated = [v for v in volumes if self.is_replicated(v)]
        sessions = target.sessions_by_names(
            {session_name(v) for v in replicated})
        copies = target.volumes_by_names(
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
                if session is None or copy is None or copy.group_id is None:
                    raise exception.VolumeBackendAPIException(data=_(
                        'no replica on %s') % target.name)
                if session.state != 'failed_over':
                    target.set_session_state(session.id, 'failed_over')
            except Exception as e:
                LOG.error('Failover of volume %(vol)s failed: %(err)s',
                          {'vol': volume.id, 'err': e})
                updates.append({'volume_id': volume.id, 'updates': {
                    'replication_status': fields.ReplicationStatus.ERROR,
                    'status': 'error'}})
                continue
            updates.append({'volume_id': volume.id, 'updates': {
                'replication_status': fields.ReplicationStatus.FAILED_OVER,
                'provider_id': self._provider_id(copy, on_secondary=True)}})
        return updates

    def _wait_reversed(self, client, session):
        deadline = time.monotonic() + \
            self.configuration.k2_replication_timeout
        while True:
            now = client.session(session.id)
            if now.generation > session.generation and \
                    now.current_snapshot is None:
                return now
            if now.state_reason:
                raise exception.VolumeBackendAPIException(data=_(
                    'copy back to the primary failed: %s') %
                    now.state_reason)
            if time.monotonic() > deadline:
                raise exception.VolumeBackendAPIException(data=_(
                    'copy back to the primary did not finish in %d s') %
                    self.configuration.k2_replication_timeout)
            time.sleep(POLL_SECONDS)

    def reverse(self, session):
        """Start copying a failed-over session back to the primary."""
        self.secondary.set_session_state(session.id, 'in_sync')

    def switch_back(self, session, primary_session_id, serving_ids,
                    reversed_already=False):
        """Finish a failback of one session of the secondary.

        Waits for the copy back (``reverse``) to complete, unmaps the
        secondary's copies (``serving_ids``: they go back to being
        read-only targets), then the primary takes over and replicates to
        the secondary again.
        """
        source, primary = self.secondary, self.primary
        if not reversed_already:
            self.reverse(session)
        self._wait_reversed(source, session)
        for volume_id in serving_ids:
            source.unmap(source.mappings_of(volume_id=volume_id))
        primary.set_session_state(primary_session_id, 'failed_over')
        primary.set_session_state(primary_session_id, 'in_sync')

    def require_primary(self):
        """A failback needs the primary array back: refuse it early."""
        try:
            self.primary.system_state()
        except flash_exception.ArrayAPIError as e:
            raise exception.UnableToFailOver(reason=_(
                'the primary array is not reachable: %s') % e)

    def _failback(self, volumes):
        source, primary = self.secondary, self.primary
        self.require_primary()
        replicated = [v for v in volumes if v.replication_status ==
                      fields.ReplicationStatus.FAILED_OVER]
        names = {session_name(v) for v in replicated}
        on_source = source.sessions_by_names(names)
        on_primary = primary.sessions_by_names(names)
        copies = primary.volumes_by_names(
            {naming.volume_name(v) for v in volumes})
        serving = source.volumes_by_names(
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
                self.reverse(session)
                started.append((volume, session))
            except Exception as e:
                updates.append(self._failback_error(volume, e))
        for volume, session in started:
            try:
                serving_copy = serving.get(naming.volume_name(volume))
                self.switch_back(
                    session, on_primary[session_name(volume)].id,
                    [serving_copy.id] if serving_copy is not None else [],
                    reversed_already=True)
                copy = copies[naming.volume_name(volume)]
                if copy.group_id is None:
                    raise exception.VolumeBackendAPIException(data=_(
                        '%s is not in a volume group') % copy.name)
            except Exception as e:
                updates.append(self._failback_error(volume, e))
                continue
            updates.append({'volume_id': volume.id, 'updates': {
                'replication_status': fields.ReplicationStatus.ENABLED,
                'provider_id': self._provider_id(copy, on_secondary=False)}})
        done = {u['volume_id'] for u in updates}
        for volume in volumes:
            if volume.id in done:
                continue
            if naming.volume_name(volume) not in copies:
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

    @staticmethod
    def troubled(client):
        """Sessions ``client``'s array replicates from that do not ship."""
        return [s for s in client.source_sessions() if _troubled(s)]

    def status(self, client):
        """The backend's replication_status: Cinder asks for the error
        status of groups and volumes (get_replication_error_status) only
        while the backend reports ``error``.
        """
        return (fields.ReplicationStatus.ERROR if self.troubled(client)
                else fields.ReplicationStatus.ENABLED)

    def error_status(self, client, groups=(), context=None):
        """Cinder's replication error status: (group, volume updates).

        The volumes and groups whose session on ``client``'s array (the
        source) reports a problem go to ``error``; a group that Cinder
        holds in ``error`` and whose session is sound again goes back to
        ``enabled``, with its volumes. Each session's group is judged as
        Cinder's database holds it after the sessions were read: the
        ``groups`` Cinder passes (read before) are read again, and the
        others are looked up in ``context``. In a cluster Cinder passes
        none: it asks for the groups of its cluster by the name without
        the pool, which no group's ``cluster_name`` equals.
        """
        error = fields.ReplicationStatus.ERROR
        enabled = fields.ReplicationStatus.ENABLED
        group_updates, volume_updates, troubled = [], [], set()
        sessions = client.source_sessions()
        known = {g.id: g for g in groups or []}
        current = {}
        for session in sessions:
            gid = group_replication.group_id_of(session)
            if gid is not None and gid not in current:
                current[gid] = _current(known.get(gid), gid, context)
        for session in sessions:
            if not _troubled(session):
                continue
            owner_group = group_replication.group_id_of(session)
            group = current.get(owner_group)
            # A group failed over on purpose: its source session stops
            # shipping (the secondary serves it now); that is not an
            # error, and an error status would stop Cinder from failing
            # it back.
            if group is not None and group.replication_status in (
                    fields.ReplicationStatus.FAILED_OVER,
                    fields.ReplicationStatus.FAILING_OVER):
                continue
            if owner_group is not None:
                troubled.add(owner_group)
                group_updates.append({'group_id': owner_group,
                                      'replication_status': error})
            if session.group_id is None:
                continue
            for vol in client.volumes_in_group(session.group_id):
                owner = specs.owner_of(vol.description)
                if owner:
                    volume_updates.append({'volume_id': owner,
                                           'replication_status': error})
        for gid, group in sorted(current.items()):
            if (group is None or gid in troubled or
                    group.replication_status != error):
                continue
            group_updates.append({'group_id': gid,
                                  'replication_status': enabled})
            volume_updates.extend(
                {'volume_id': v.id, 'replication_status': enabled}
                for v in group.volumes if v.replication_status == error)
        return group_updates, volume_updates


def _current(group, group_id, context):
    """Cinder's group ``group_id`` as its database holds it now: ``group``
    (as Cinder passed it) read again, or looked up in ``context``. Cinder
    marks a group failing over before its failover touches the array, so
    a session that a failover troubled is never taken for an error of a
    group read as enabled before it. None: not Cinder's group (gone).
    """
    try:
        if group is not None:
            group.refresh()
        elif context is not None:
            group = objects.Group.get_by_id(context, group_id)
    except exception.GroupNotFound:
        # Deleted meanwhile: judged as Cinder passed it, if it did.
        LOG.debug('group %s is not in the database', group_id)
    except Exception as e:
        # Unreadable now: judged as Cinder passed it, and said, since a
        # failed-over group Cinder did not pass is then reported.
        LOG.warning('group %(grp)s could not be read: %(err)s',
                    {'grp': group_id, 'err': e})
    return group


def _troubled(session):
    """Whether a source session does not ship."""
    return bool(session.state_reason) or session.state != 'in_sync'
