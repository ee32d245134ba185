"""Cinder volume drivers for LINSTOR controllers.

``volume_driver = cinder_driver.linstor.driver.LinstorDrbdDriver`` (hosts
attach a DRBD device of their own) or
``cinder_driver.linstor.driver.LinstorISCSIDriver`` (the volume service
exports its local DRBD device through Cinder's iSCSI target helper). The
classes only translate Cinder calls; the logic is in
:mod:`cinder_driver.linstor.adapter`.
"""

from cinder.common import constants
from cinder import coordination
from cinder import interface
from cinder.volume import driver
from oslo_utils import importutils

from cinder_driver.common import guard
from cinder_driver.common import options as common_options
from cinder_driver.linstor import adapter as linstor_adapter
from cinder_driver.linstor import options as linstor_options

DRBD = 'DRBD'


class LinstorBaseDriver(driver.VolumeDriver):
    """Version history:

    .. code-block:: none

      1.0.0 - resource group per volume type, DRBD and iSCSI attach,
              clone API, revert, retype with re-placement, manage,
              multiattach, consistency groups, active/active
    """

    VERSION = '1.0.0'
    CI_WIKI_NAME = 'cinder-flash_CI'
    SUPPORTS_ACTIVE_ACTIVE = True
    PROTOCOL = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.configuration.append_config_values(common_options.rest_opts)
        self.configuration.append_config_values(
            linstor_options.linstor_opts)
        self.adapter = guard.Guarded(linstor_adapter.LinstorAdapter(
            self.configuration, self.PROTOCOL, self.VERSION),
            'LINSTOR backend %s' % self.configuration.config_group)

    @staticmethod
    def get_driver_options():
        additional = ('max_over_subscription_ratio', 'reserved_percentage',
                      'volume_backend_name')
        return (common_options.rest_opts + linstor_options.linstor_opts +
                [opt for opt in driver.volume_opts
                 if opt.name in additional])

    def do_setup(self, context):
        self.adapter.do_setup()

    def check_for_setup_error(self):
        self.adapter.check_for_setup_error()

    def create_volume(self, volume):
        return self.adapter.create_volume(volume)

    @coordination.synchronized('cinder-flash-linstor-volume-{volume.id}')
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

    @coordination.synchronized('cinder-flash-linstor-volume-{volume.id}')
    def retype(self, context, volume, new_type, diff, host):
        return self.adapter.retype(volume, new_type, host)

    def manage_existing(self, volume, existing_ref):
        return self.adapter.manage_existing(volume, existing_ref)

    def manage_existing_get_size(self, volume, existing_ref):
        return self.adapter.manage_existing_get_size(volume, existing_ref)

    def unmanage(self, volume):
        self.adapter.unmanage(volume)

    def create_group(self, context, group):
        return self.adapter.create_group(group)

    def delete_group(self, context, group, volumes):
        return self.adapter.delete_group(group, volumes)

    def update_group(self, context, group, add_volumes=None,
                     remove_volumes=None):
        return self.adapter.update_group(group, add_volumes, remove_volumes)

    def create_group_snapshot(self, context, group_snapshot, snapshots):
        from cinder.volume import volume_utils
        if not volume_utils.is_group_a_cg_snapshot_type(group_snapshot):
            raise NotImplementedError()
        return self.adapter.create_group_snapshot(group_snapshot, snapshots)

    def delete_group_snapshot(self, context, group_snapshot, snapshots):
        from cinder.volume import volume_utils
        if not volume_utils.is_group_a_cg_snapshot_type(group_snapshot):
            raise NotImplementedError()
        return self.adapter.delete_group_snapshot(group_snapshot, snapshots)

    def create_group_from_src(self, context, group, volumes,
                              group_snapshot=None, snapshots=None,
                              source_group=None, source_vols=None):
        return self.adapter.create_group_from_src(
            group, volumes, group_snapshot, snapshots, source_group,
            source_vols)


def _lock_key(connector):
    if connector is None:
        return 'force-detach'
    return connector.get('host') or 'unknown'


@interface.volumedriver
class LinstorDrbdDriver(LinstorBaseDriver):
    """Each attaching host opens a DRBD device of its own.

    It is diskless unless the host holds a replica; os-brick's local
    connector opens it.
    """

    PROTOCOL = DRBD

    def create_export(self, context, volume, connector):
        pass

    def ensure_export(self, context, volume):
        pass

    def remove_export(self, context, volume):
        pass

    @coordination.synchronized('cinder-flash-linstor-{volume.id}-{key}')
    def _attach(self, volume, connector, key):
        return self.adapter.initialize_connection(volume, connector)

    @coordination.synchronized('cinder-flash-linstor-{volume.id}-{key}')
    def _detach(self, volume, connector, key):
        return self.adapter.terminate_connection(volume, connector)

    def initialize_connection(self, volume, connector):
        return self._attach(volume, connector, _lock_key(connector))

    def terminate_connection(self, volume, connector, **kwargs):
        self._detach(volume, connector, _lock_key(connector))


@interface.volumedriver
class LinstorISCSIDriver(LinstorBaseDriver):
    """The volume service's node exports the volume over iSCSI.

    The node opens the volume (diskless unless it holds a replica) and
    Cinder's iSCSI target helper exports that device.
    """

    PROTOCOL = constants.ISCSI

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        helper = self.configuration.safe_get('target_helper')
        self.target_driver = importutils.import_object(
            self.target_mapping[helper], configuration=self.configuration,
            executor=self._execute)

    @staticmethod
    def get_driver_options():
        return LinstorBaseDriver.get_driver_options() + [
            opt for opt in driver.volume_opts
            if opt.name in ('target_helper', 'target_ip_address',
                            'target_port', 'target_prefix',
                            'target_protocol')]

    def _local(self, volume):
        return self.adapter.make_local(volume, self.adapter.local_node)

    def create_export(self, context, volume, connector):
        return self.target_driver.create_export(context, volume,
                                                self._local(volume))

    def ensure_export(self, context, volume):
        self.target_driver.ensure_export(context, volume,
                                         self._local(volume))

    def remove_export(self, context, volume):
        self.target_driver.remove_export(context, volume)
        self.adapter.release_local(volume, self.adapter.local_node)

    def initialize_connection(self, volume, connector):
        return self.target_driver.initialize_connection(volume, connector)

    def validate_connector(self, connector):
        return self.target_driver.validate_connector(connector)

    def terminate_connection(self, volume, connector, **kwargs):
        return self.target_driver.terminate_connection(volume, connector,
                                                       **kwargs)
