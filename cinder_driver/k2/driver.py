"""Cinder volume drivers for K2-class all-flash arrays.

``volume_driver = cinder_driver.k2.driver.K2ISCSIDriver`` or
``cinder_driver.k2.driver.K2FCDriver``. The classes only translate Cinder
calls; the logic is in :mod:`cinder_driver.k2.adapter`.
"""

from cinder.common import constants
from cinder import coordination
from cinder import interface
from cinder.volume import driver
from cinder.volume.drivers.san import san
from cinder.zonemanager import utils as fczm_utils

from cinder_driver.common import guard
from cinder_driver.common import options as common_options
from cinder_driver.k2 import adapter as k2_adapter
from cinder_driver.k2 import options as k2_options


class K2BaseDriver(driver.VolumeDriver):
    """Version history:

    .. code-block:: none

      1.0.0 - iSCSI and FC; array-side clones; revert; manage/unmanage;
              replication v2.1 with failback and active/active failover
    """

    VERSION = '1.0.0'
    CI_WIKI_NAME = 'cinder-flash_CI'
    SUPPORTS_ACTIVE_ACTIVE = True
    PROTOCOL = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.configuration.append_config_values(san.san_opts)
        self.configuration.append_config_values(common_options.rest_opts)
        self.configuration.append_config_values(k2_options.k2_opts)
        self.adapter = guard.Guarded(k2_adapter.K2Adapter(
            self.configuration, self.PROTOCOL, self.VERSION,
            active_backend_id=kwargs.get('active_backend_id')),
            'K2 backend %s' % self.configuration.config_group)

    @staticmethod
    def get_driver_options():
        additional = ('san_ip', 'san_login', 'san_password', 'san_api_port',
                      'use_chap_auth', 'chap_username', 'chap_password',
                      'driver_ssl_cert_verify', 'driver_ssl_cert_path',
                      'max_over_subscription_ratio', 'reserved_percentage',
                      'volume_backend_name', 'replication_device')
        return (common_options.rest_opts + k2_options.k2_opts +
                [opt for opt in san.san_opts + driver.volume_opts
                 if opt.name in additional])

    def do_setup(self, context):
        self.adapter.do_setup()

    def check_for_setup_error(self):
        self.adapter.check_for_setup_error()

    def create_volume(self, volume):
        return self.adapter.create_volume(volume)

    @coordination.synchronized('cinder-flash-k2-volume-{volume.id}')
    def delete_volume(self, volume):
        self.adapter.delete_volume(volume)

    def extend_volume(self, volume, new_size):
        self.adapter.extend_volume(volume, new_size)

    def create_snapshot(self, snapshot):
        return self.adapter.create_snapshot(snapshot)

    def delete_snapshot(self, snapshot):
        self.adapter.delete_snapshot(snapshot)

    def create_volume_from_snapshot(self, volume, snapshot):
        return self.adapter.create_volume_from_snapshot(volume, snapshot)

    def create_cloned_volume(self, volume, src_vref):
        return self.adapter.create_cloned_volume(volume, src_vref)

    def revert_to_snapshot(self, context, volume, snapshot):
        self.adapter.revert_to_snapshot(volume, snapshot)

    def get_volume_stats(self, refresh=False):
        self._stats = self.adapter.get_volume_stats(refresh)
        return self._stats

    def _update_volume_stats(self):
        self._stats = self.adapter.get_volume_stats(refresh=True)

    @coordination.synchronized('cinder-flash-k2-volume-{volume.id}')
    def retype(self, context, volume, new_type, diff, host):
        return self.adapter.retype(volume, new_type)

    # -- replication ---------------------------------------------------------
    def failover(self, context, volumes, secondary_id=None, groups=None):
        """Active/active: the array side, run by one service."""
        active, updates = self.adapter.failover(volumes, secondary_id)
        return active, updates, []

    def failover_completed(self, context, active_backend_id=None):
        """Active/active: every service switches to the new array."""
        self.adapter.failover_completed(active_backend_id)

    def failover_host(self, context, volumes, secondary_id=None,
                      groups=None):
        active, updates = self.adapter.failover(volumes, secondary_id)
        self.adapter.failover_completed(active)
        return active, updates, []

    def get_replication_error_status(self, context, groups):
        return self.adapter.get_replication_error_status(groups)

    def migrate_volume(self, context, volume, host):
        return self.adapter.migrate_volume(volume, host)

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

    def create_export(self, context, volume, connector):
        pass

    def ensure_export(self, context, volume):
        pass

    def remove_export(self, context, volume):
        pass


def _lock_key(connector):
    """Attach/detach lock per host; force detach has no host."""
    if connector is None:
        return 'force-detach'
    return connector.get('host') or connector.get('initiator') or 'unknown'


class K2AttachDriver(K2BaseDriver):
    """Map and unmap, serialised per host.

    A LUN is never handed out again while the host may still be cleaning
    up the device it named before.
    """

    @coordination.synchronized('cinder-flash-k2-{self.host}-{key}')
    def _attach(self, volume, connector, key):
        return self.adapter.initialize_connection(volume, connector)

    @coordination.synchronized('cinder-flash-k2-{self.host}-{key}')
    def _detach(self, volume, connector, key):
        return self.adapter.terminate_connection(volume, connector)

    def initialize_connection(self, volume, connector):
        return self._attach(volume, connector, _lock_key(connector))

    def terminate_connection(self, volume, connector, **kwargs):
        self._detach(volume, connector, _lock_key(connector))


@interface.volumedriver
class K2ISCSIDriver(K2AttachDriver):
    """K2 array over iSCSI."""

    PROTOCOL = constants.ISCSI


@interface.volumedriver
class K2FCDriver(K2AttachDriver):
    """K2 array over Fibre Channel, with FC zone manager hooks."""

    PROTOCOL = constants.FC

    def initialize_connection(self, volume, connector):
        info = super().initialize_connection(volume, connector)
        fczm_utils.add_fc_zone(info)
        return info

    def terminate_connection(self, volume, connector, **kwargs):
        idle = self._detach(volume, connector, _lock_key(connector))
        info = {'driver_volume_type': 'fibre_channel', 'data': {}}
        if connector is not None and idle:
            # Zones go only with the host's last mapping on the array.
            targets = list(self.adapter.fc_targets)
            info['data'] = {
                'target_wwn': targets,
                'initiator_target_map': {
                    w.lower(): targets for w in connector.get('wwpns', [])}}
            fczm_utils.remove_fc_zone(info)
        return info
