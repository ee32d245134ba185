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

"""Replication of consistent groups (Cinder's group replication).

A Cinder group whose group type has ``consistent_group_replication_enabled``
lives in one K2 volume group (:mod:`cinder_driver.k2.groups`), and K2
replicates a volume group as one: a session ships one image of all its
volumes, taken in one instant. A group therefore has one session
(``crg-<group id>``); its volumes fail over together, to the last image
the secondary holds completely, and fail back together.

The peer volume group and volumes carry the primary's names (``cgrp-``,
``cv-``), so after a failover every member is found by name on the
secondary; its provider_id then names the secondary's ids, and the driver
sends that volume's calls to the secondary's adapter.
"""

from cinder import exception
from cinder.i18n import _
from cinder.objects import fields
from oslo_log import log as logging

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import naming
from cinder_driver.k2 import groups
from cinder_driver.k2 import provider_id

LOG = logging.getLogger(__name__)
SESSION_PREFIX = 'crg-'
DEFAULT = 'default'


def session_name(group):
    return SESSION_PREFIX + group.id


def group_id_of(session):
    """The Cinder group a session name stands for, or None."""
    name = session.name or ''
    return name[len(SESSION_PREFIX):] if name.startswith(SESSION_PREFIX) \
        else None


def _statuses(volumes, status, **extra):
    return [dict(extra, id=v.id, replication_status=status)
            for v in volumes]


class GroupReplication(object):
    """Group replication between the primary and its replication target.

    Composed into the backend's ReplicationManager: uses its clients, its
    pairing and its copy-back wait.
    """

    def __init__(self, manager):
        self.manager = manager

    @property
    def primary(self):
        return self.manager.primary

    @property
    def secondary(self):
        return self.manager.secondary

    @property
    def backend_id(self):
        return self.manager.backend_id

    def _group_id(self, client, group):
        found = client.volume_group_by_name(groups.group_name(group))
        if found is None:
            raise exception.GroupNotFound(group_id=group.id)
        return found.id

    # -- enable / disable --------------------------------------------------
    def enable(self, group, volumes):
        """Start the group's session: every member, one image at a time."""
        client = self.primary
        group_id = self._group_id(client, group)
        name = session_name(group)
        existing = client.session_by_name(name)
        session = existing.id if existing is not None else \
            client.create_session(name, self.manager.peer(client), group_id,
                                  groups.group_name(group),
                                  self.manager.device['rpo'])
        try:
            members = {v.name: v.id for v in client.volumes_in_group(
                group_id)}
            for volume in volumes:
                array_name = naming.volume_name(volume)
                if array_name not in members:
                    raise exception.VolumeBackendAPIException(data=_(
                        'volume %(vol)s is not in the volume group of '
                        'group %(grp)s') % {'vol': volume.id,
                                            'grp': group.id})
                try:
                    client.add_peer_volume(session, members[array_name],
                                           array_name)
                except flash_exception.ObjectExists:
                    # Already replicated by this session (a retry).
                    pass
            client.set_session_state(session, 'in_sync')
        except Exception:
            if existing is None:
                self.stop(group)
            raise
        status = fields.ReplicationStatus.ENABLED
        return ({'replication_status': status},
                _statuses(volumes, status))

    def disable(self, group, volumes):
        """Stop the session; the secondary's copy of the group goes."""
        self.stop(group, volumes)
        status = fields.ReplicationStatus.DISABLED
        return ({'replication_status': status},
                _statuses(volumes, status))

    def stop(self, group, volumes=None):
        """Stop a group's replication; its copy goes when reachable."""
        session = self.primary.session_by_name(session_name(group))
        if session is not None:
            self.primary.delete_session(session.id)
        try:
            self.remove_copy(self.secondary, group, volumes)
        except flash_exception.ArrayAPIError as e:
            LOG.warning('The replica of group %(grp)s stays on %(array)s: '
                        '%(err)s', {'grp': group.id,
                                    'array': self.secondary.name, 'err': e})

    def remove_copy(self, client, group, volumes=None):
        """Remove a group's session, volumes and volume group on ``client``.

        Volumes that are not the group's (by name) are never touched: the
        volume group then stays.
        """
        session = client.session_by_name(session_name(group))
        if session is not None:
            client.delete_session(session.id)
        found = client.volume_group_by_name(groups.group_name(group))
        if found is None:
            return
        names = None if volumes is None else {naming.volume_name(v)
                                              for v in volumes}
        for vol in client.volumes_in_group(found.id):
            if names is not None and vol.name not in names:
                continue
            client.unmap(client.mappings_of(volume_id=vol.id))
            client.delete_volume(vol.id)
        try:
            client.delete_volume_group(found.id)
        except flash_exception.ObjectBusy as e:
            LOG.warning('Volume group %(vg)s on %(array)s is kept: %(err)s',
                        {'vg': found.name, 'array': client.name,
                         'err': e.msg})

    # -- members -----------------------------------------------------------
    def add_member(self, group, volume, volume_id):
        """A new member of a replicating group joins its session."""
        session = self.primary.session_by_name(session_name(group))
        if session is None:
            raise exception.VolumeBackendAPIException(data=_(
                'group %s replicates, but its session is gone from the '
                'array; disable and enable its replication') % group.id)
        self.primary.add_peer_volume(session.id, volume_id,
                                     naming.volume_name(volume))
        # Ship an image with the new member now, not in one RPO.
        self.primary.set_session_state(session.id, 'in_sync')
        return {'replication_status': fields.ReplicationStatus.ENABLED}

    # -- failover and failback ---------------------------------------------
    def failover(self, group, volumes, secondary_id):
        """(group update, volume updates) of a failover or a failback."""
        if secondary_id == DEFAULT:
            return self._failback(group, volumes)
        if secondary_id not in (None, self.backend_id):
            raise exception.InvalidReplicationTarget(reason=_(
                'unknown replication target %(id)s (configured: %(known)s)')
                % {'id': secondary_id, 'known': self.backend_id})
        return self._failover(group, volumes)

    def _copies(self, client, volumes, array):
        """Volume updates pointing at the members' copies on ``client``."""
        copies = client.volumes_by_names(
            {naming.volume_name(v) for v in volumes})
        updates, missing = [], []
        for volume in volumes:
            copy = copies.get(naming.volume_name(volume))
            if copy is None or copy.group_id is None:
                missing.append(volume.id)
                continue
            updates.append({'id': volume.id, 'provider_id': str(
                provider_id.ProviderId(copy.group_id, copy.id, shared=True,
                                       array=array))})
        if missing:
            raise exception.VolumeBackendAPIException(data=_(
                'no copy of volumes %(vols)s on %(array)s') % {
                    'vols': ', '.join(missing), 'array': client.name})
        return updates

    def _failover(self, group, volumes):
        target = self.secondary
        session = target.session_by_name(session_name(group))
        if session is None:
            raise exception.VolumeBackendAPIException(data=_(
                'group %(grp)s has no replica on %(array)s') % {
                    'grp': group.id, 'array': target.name})
        updates = self._copies(target, volumes, self.backend_id)
        if session.state != 'failed_over':
            # The secondary drops a half-shipped image: every member is
            # the last image it holds completely, the same for all.
            target.set_session_state(session.id, 'failed_over')
        status = fields.ReplicationStatus.FAILED_OVER
        for update in updates:
            update['replication_status'] = status
        return {'replication_status': status}, updates

    def _failback(self, group, volumes):
        source, primary = self.secondary, self.primary
        self.manager.require_primary()
        name = session_name(group)
        on_source = source.session_by_name(name)
        on_primary = primary.session_by_name(name)
        if on_source is None or on_primary is None:
            raise exception.VolumeBackendAPIException(data=_(
                'the replication session of group %s is gone') % group.id)
        serving = source.volumes_by_names(
            {naming.volume_name(v) for v in volumes})
        self.manager.switch_back(on_source, on_primary.id,
                                 [c.id for c in serving.values()])
        updates = self._copies(primary, volumes, None)
        status = fields.ReplicationStatus.ENABLED
        for update in updates:
            update['replication_status'] = status
        return {'replication_status': status}, updates

    # -- a whole backend's failover ----------------------------------------
    def failover_backend(self, replicated_groups, volumes, secondary_id):
        """Groups' part of failover_host: (group updates, volume updates).

        Volume updates are Cinder's ``{'volume_id', 'updates'}`` form;
        volumes of the groups handled here are left out of ``volumes``
        by the caller.
        """
        group_updates, volume_updates = [], []
        for group in replicated_groups:
            members = [v for v in volumes if v.group_id == group.id]
            wanted = (fields.ReplicationStatus.FAILED_OVER
                      if secondary_id == DEFAULT else
                      fields.ReplicationStatus.ENABLED)
            if group.replication_status != wanted:
                # Not replicating (or already where it is asked to go):
                # its volumes stay as they are.
                continue
            try:
                update, updates = self.failover(group, members,
                                                secondary_id)
            except Exception as e:
                LOG.error('Failover of group %(grp)s failed: %(err)s',
                          {'grp': group.id, 'err': e})
                update = {'replication_status':
                          fields.ReplicationStatus.ERROR,
                          'status': fields.GroupStatus.ERROR}
                updates = _statuses(members,
                                    fields.ReplicationStatus.ERROR,
                                    status='error')
            group_updates.append({'group_id': group.id, 'updates': update})
            for item in updates:
                vid = item.pop('id')
                volume_updates.append({'volume_id': vid, 'updates': item})
        return group_updates, volume_updates
