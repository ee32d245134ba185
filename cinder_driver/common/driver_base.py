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

"""The part of every cinder-flash driver class that only forwards.

Cinder calls the driver; the backend's adapter holds the logic. Deletes
and retypes of one volume are serialised across services (active/active)
by coordination locks.
"""

from cinder import coordination
from cinder.volume import driver

from cinder_driver.common import locks
from cinder_driver.common import options


def lock_key(connector):
    """Attach/detach lock per host; a force detach has no host."""
    if connector is None:
        return 'force-detach'
    return connector.get('host') or connector.get('initiator') or 'unknown'


class AdapterDriver(driver.VolumeDriver):
    """Forwards to ``self.adapter``, which each backend family provides.

    Errors are the adapter's and its client's own: a reply the array
    should not have sent is ArrayBadReply from the client, and a bug is a
    bug, with its traceback.
    """

    CI_WIKI_NAME = 'cinder-flash_CI'
    SUPPORTS_ACTIVE_ACTIVE = True
    PROTOCOL = None

    def adapter_of(self, volume):
        """The adapter serving ``volume``: the backend's, unless a driver
        knows the volume is on another array.
        """
        return self.adapter

    def do_setup(self, context):
        self.adapter.do_setup()

    def check_for_setup_error(self):
        self.adapter.check_for_setup_error()

    def create_volume(self, volume):
        return self.adapter.create_volume(volume)

    @coordination.synchronized('cinder-flash-volume-{volume.id}')
    def delete_volume(self, volume):
        self.adapter_of(volume).delete_volume(volume)

    def extend_volume(self, volume, new_size):
        self.adapter_of(volume).extend_volume(volume, new_size)

    def create_snapshot(self, snapshot):
        return self.adapter_of(snapshot.volume).create_snapshot(snapshot)

    def delete_snapshot(self, snapshot):
        self.adapter_of(snapshot.volume).delete_snapshot(snapshot)

    def create_volume_from_snapshot(self, volume, snapshot):
        return self.adapter_of(snapshot.volume).create_volume_from_snapshot(
            volume, snapshot)

    def create_cloned_volume(self, volume, src_vref):
        return self.adapter_of(src_vref).create_cloned_volume(volume,
                                                              src_vref)

    def revert_to_snapshot(self, context, volume, snapshot):
        self.adapter_of(volume).revert_to_snapshot(volume, snapshot)

    def get_volume_stats(self, refresh=False):
        self._stats = self.adapter.get_volume_stats(refresh)
        return self._stats

    def _update_volume_stats(self):
        self._stats = self.adapter.get_volume_stats(refresh=True)

    @coordination.synchronized('cinder-flash-volume-{volume.id}')
    def retype(self, context, volume, new_type, diff, host):
        return self.adapter_of(volume).retype(volume, new_type, host)

    def manage_existing(self, volume, existing_ref):
        return self.adapter.manage_existing(volume, existing_ref)

    def manage_existing_get_size(self, volume, existing_ref):
        return self.adapter.manage_existing_get_size(volume, existing_ref)

    def unmanage(self, volume):
        self.adapter.unmanage(volume)

    def get_manageable_volumes(self, cinder_volumes, marker, limit, offset,
                               sort_keys, sort_dirs):
        return self.adapter.get_manageable_volumes(
            cinder_volumes, marker, limit, offset, sort_keys, sort_dirs)

    def manage_existing_snapshot(self, snapshot, existing_ref):
        return self.adapter.manage_existing_snapshot(snapshot, existing_ref)

    def manage_existing_snapshot_get_size(self, snapshot, existing_ref):
        return self.adapter.manage_existing_snapshot_get_size(snapshot,
                                                              existing_ref)

    def unmanage_snapshot(self, snapshot):
        self.adapter.unmanage_snapshot(snapshot)

    def get_manageable_snapshots(self, cinder_snapshots, marker, limit,
                                 offset, sort_keys, sort_dirs):
        return self.adapter.get_manageable_snapshots(
            cinder_snapshots, marker, limit, offset, sort_keys, sort_dirs)

    def create_group(self, context, group):
        return self.adapter.create_group(group)

    def delete_group(self, context, group, volumes):
        return self.adapter.delete_group(group, volumes)

    def update_group(self, context, group, add_volumes=None,
                     remove_volumes=None):
        return self.adapter.update_group(group, add_volumes, remove_volumes)

    def create_group_snapshot(self, context, group_snapshot, snapshots):
        return self.adapter.create_group_snapshot(group_snapshot, snapshots)

    def delete_group_snapshot(self, context, group_snapshot, snapshots):
        return self.adapter.delete_group_snapshot(group_snapshot, snapshots)

    def create_group_from_src(self, context, group, volumes,
                              group_snapshot=None, snapshots=None,
                              source_group=None, source_vols=None):
        return self.adapter.create_group_from_src(
            group, volumes, group_snapshot, snapshots, source_group,
            source_vols)


class HostLockedAttach(object):
    """Attach and detach through the adapter, serialised per host.

    A LUN or device is never handed out again while the host may still
    be cleaning up the one it had before; the export calls are no-ops,
    the adapter does everything at attach time, for volumes and for
    snapshots attached for backups. The lock is the
    cluster's (``cluster_name``, the same on every member) when the
    service is clustered: the members share the backend's hosts. Its
    wait is bounded (``flash_lock_wait``, cinder_driver.common.locks):
    an attach or detach that cinder-api has given up on must not change
    the array afterwards.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.configuration.append_config_values(options.lock_opts)

    @property
    def lock_scope(self):
        return self.cluster_name or self.host

    def host_locked(self, key, call, *args):
        """``call(*args)`` while no other attach or detach of the host
        ``key`` (lock_key) runs.
        """
        # The owner in the log lines is the operation (the cluster soak
        # tells attaches from detaches by it).
        with locks.held('cinder-flash-attach-%s-%s' % (self.lock_scope, key),
                        self.configuration.flash_lock_wait,
                        getattr(call, '__name__', 'host_locked')):
            return call(*args)

    def initialize_connection(self, volume, connector):
        return self.host_locked(lock_key(connector),
                                self.adapter_of(volume).initialize_connection,
                                volume, connector)

    def terminate_connection(self, volume, connector, **kwargs):
        return self.host_locked(lock_key(connector),
                                self.adapter_of(volume).terminate_connection,
                                volume, connector)

    def initialize_connection_snapshot(self, snapshot, connector, **kwargs):
        adapter = self.adapter_of(snapshot.volume)
        return self.host_locked(lock_key(connector),
                                adapter.initialize_connection_snapshot,
                                snapshot, connector)

    def terminate_connection_snapshot(self, snapshot, connector, **kwargs):
        adapter = self.adapter_of(snapshot.volume)
        return self.host_locked(lock_key(connector),
                                adapter.terminate_connection_snapshot,
                                snapshot, connector)

    def create_export(self, context, volume, connector):
        pass

    def ensure_export(self, context, volume):
        pass

    def remove_export(self, context, volume):
        pass

    def create_export_snapshot(self, context, snapshot, connector):
        pass

    def remove_export_snapshot(self, context, snapshot):
        pass
