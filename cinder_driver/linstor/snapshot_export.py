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

"""Snapshots attached to a host (for backups) without a temporary volume.

LINSTOR has no device for a snapshot: its REST API only restores,
rolls back, ships or deletes one. A Cinder snapshot attached for a backup
is therefore restored into a definition of its own,
``snapview-<snapshot id>``, in the source volume's resource group and
marked with the snapshot's id; it is not a Cinder volume and never
appears in Cinder. The attach makes it, the last detach removes it, and a
failed attach removes what that attach made. A definition of that name
without the mark (made by someone else) is refused and left alone.
Whatever a host writes to the device never reaches the snapshot, and the
device is handed out read-only.
"""

from cinder import exception
from cinder.i18n import _
from oslo_log import log as logging

from cinder_driver.common import cleanup
from cinder_driver.common import naming
from cinder_driver.linstor import attach

LOG = logging.getLogger(__name__)
VIEW_OF = 'Aux/cinder-flash/snapshot-view-of'


class NotOurs(exception.VolumeBackendAPIException):
    message = _('LINSTOR resource definition %(name)s exists but was not '
                'made for snapshot %(snapshot)s; it is left as it is')


class SnapshotExport(object):
    """Composed into a LINSTOR adapter: uses its client and names."""

    def __init__(self, adapter):
        self.adapter = adapter

    @property
    def client(self):
        return self.adapter.client

    @property
    def attachments(self):
        # The view holds no redundancy of its own: a replica an attach
        # made goes at detach like a diskless client.
        return attach.Attachments(self.client, lambda _snapshot: 0)

    def _view(self, snapshot):
        """(name, whether it exists); NotOurs for a stranger's definition."""
        name = naming.linstor_snapshot_view_name(snapshot)
        rd = self.client.resource_definition(name)
        if rd is None:
            return name, False
        if (rd.get('props') or {}).get(VIEW_OF) != snapshot.id:
            raise NotOurs(name=name, snapshot=snapshot.id)
        return name, True

    def _make(self, snapshot, name):
        source = self.adapter.rd_name(snapshot.volume)
        rd = self.client.resource_definition(source)
        if rd is None:
            raise exception.VolumeNotFound(volume_id=snapshot.volume_id)
        self.adapter.new_definition(
            lambda: self.client.create_resource_definition(
                name, rd.get('resource_group_name'), {VIEW_OF: snapshot.id}),
            name)
        with cleanup.undo_on_error(
                'removing snapshot view %s' % name,
                lambda: self.client.delete_resource_definition(name)):
            self.client.restore(source, self.adapter.snap_name(snapshot),
                                name)

    def attach(self, snapshot, connector):
        host = connector.get('host')
        if not host:
            raise exception.InvalidConnectorException(missing='host')
        name, exists = self._view(snapshot)
        if not exists:
            self._make(snapshot, name)

        def undo():
            if not exists:
                self.client.delete_resource_definition(name)
        with cleanup.undo_on_error('removing snapshot view %s' % name, undo):
            path = self.attachments.open(
                snapshot, name, host,
                remote_ok=self.adapter.remote_access(snapshot.volume))
        return {'driver_volume_type': 'local',
                'data': {'device_path': path, 'access_mode': 'ro'}}

    def detach(self, snapshot, connector):
        """Close the host's device (every one without a connector); the
        last close removes the view. Whether the view was removed.
        """
        name = naming.linstor_snapshot_view_name(snapshot)
        rd = self.client.resource_definition(name)
        if rd is None:
            return False
        if (rd.get('props') or {}).get(VIEW_OF) != snapshot.id:
            LOG.warning('%s was not made for snapshot %s; left as it is',
                        name, snapshot.id)
            return False
        if connector is not None:
            self.attachments.close(snapshot, name, connector.get('host'))
            if self.attachments.ours(snapshot, name):
                return False
        self.client.delete_resource_definition(name)
        return True
