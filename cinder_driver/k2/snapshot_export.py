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

K2 hosts map views, not snapshots: a view is a snapshot of a snapshot
with ``is_exposable``, one volsnap per volume of its volume group. A
Cinder snapshot attached for a backup gets a view of its own
(``csv-<snapshot id>``), made at the first attach and removed with its
last mapping. Cinder reads the snapshot through it; whatever a host
writes to the view never reaches the snapshot, and the view is handed
out read-only.
"""

from cinder import exception
from cinder.i18n import _

from cinder_driver.common import cleanup

VIEW_PREFIX = 'csv-'


def view_name(snapshot):
    return VIEW_PREFIX + snapshot.id


class SnapshotExport(object):
    """Composed into a K2 adapter: uses its client, hosts and protocol."""

    def __init__(self, adapter):
        self.adapter = adapter

    @property
    def client(self):
        return self.adapter.client

    def _source_volume(self, snapshot_id, volsnap_id):
        for volume_id, found in self.client.volsnaps_of(snapshot_id).items():
            if found == volsnap_id:
                return volume_id
        raise exception.SnapshotNotFound(snapshot_id=snapshot_id)

    def attach(self, snapshot, connector):
        snap_id, volsnap_id = self.adapter.snapshot_ids(snapshot)
        volume_id = self._source_volume(snap_id, volsnap_id)
        view = self.client.snapshot_by_name(view_name(snapshot))
        made = None
        if view is None:
            made = self.client.create_view(view_name(snapshot), snap_id,
                                           self.adapter.retention_policy_id)
        view_id = made or view.id
        with cleanup.undo_on_error(
                'removing view %s' % view_name(snapshot),
                lambda: made and self.client.delete_snapshot(made)):
            exposed = self.client.volsnap_of(view_id, volume_id)
            if exposed is None:
                raise exception.VolumeBackendAPIException(data=_(
                    'the view of snapshot %s has no image of its volume')
                    % snapshot.id)
            initiators = self.adapter.initiators(connector)
            host_id = self.adapter.hosts.host_id(connector, initiators,
                                                 create=True)
            lun = self.client.map_volsnap(host_id, exposed)
        info = self.adapter.connection_info(snapshot, connector, lun)
        info['data']['access_mode'] = 'ro'
        return info

    def detach(self, snapshot, connector):
        """Unmap (every host without a connector); the last unmap removes
        the view. Whether a view was removed.
        """
        view = self.client.snapshot_by_name(view_name(snapshot))
        if view is None:
            return False
        exposed = list(self.client.volsnaps_of(view.id).values())
        host_id = None
        if connector is not None:
            host_id = self.adapter.hosts.host_id(
                connector, self.adapter.initiators(connector), create=False)
            if host_id is None:
                return False
        for volsnap_id in exposed:
            self.client.unmap(self.client.mappings_of(volsnap_id=volsnap_id,
                                                      host_id=host_id))
        if any(self.client.mappings_of(volsnap_id=v) for v in exposed):
            return False
        self.client.delete_snapshot(view.id)
        return True
