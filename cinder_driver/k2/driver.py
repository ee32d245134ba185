"""Cinder volume drivers for K2-class all-flash arrays.

``volume_driver = cinder_driver.k2.driver.K2ISCSIDriver`` or
``cinder_driver.k2.driver.K2FCDriver``. The classes only translate Cinder
calls; the logic is in :mod:`cinder_driver.k2.adapter`.
"""

from cinder.common import constants
from cinder import interface
from cinder.volume import driver
from cinder.volume.drivers.san import san
from cinder.zonemanager import utils as fczm_utils

from cinder_driver.common import driver_base
from cinder_driver.common import guard
from cinder_driver.common import options as common_options
from cinder_driver.k2 import adapter as k2_adapter
from cinder_driver.k2 import options as k2_options


class K2BaseDriver(driver_base.AdapterDriver):
    """Version history:

    .. code-block:: none

      1.0.0 - iSCSI and FC; array-side clones; revert; manage/unmanage;
              replication v2.1 with failback and active/active failover
    """

    VERSION = '1.0.0'

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


class K2AttachDriver(driver_base.HostLockedAttach, K2BaseDriver):
    """Map and unmap, serialised per host."""


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
        idle = self._detach(volume, connector, driver_base.lock_key(connector))
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
