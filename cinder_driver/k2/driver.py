"""Cinder volume drivers for K2-class all-flash arrays.

``volume_driver = cinder_driver.k2.driver.K2ISCSIDriver`` or
``cinder_driver.k2.driver.K2FCDriver``. The classes only translate Cinder
calls. They keep one adapter per array (the configured one and, with a
replication_device, its replication target) and choose the active one;
the logic is in :mod:`cinder_driver.k2.adapter` and its protocol
subclasses in :mod:`cinder_driver.k2.protocols`.
"""

from cinder import exception
from cinder.i18n import _
from cinder import interface
from cinder.volume import driver
from cinder.volume.drivers.san import san
from cinder.zonemanager import utils as fczm_utils

from cinder_driver.common import driver_base
from cinder_driver.common import exception as flash_exception
from cinder_driver.common import options as common_options
from cinder_driver.common import tls
from cinder_driver.k2 import client as k2_client
from cinder_driver.k2 import options as k2_options
from cinder_driver.k2 import protocols
from cinder_driver.k2 import replication

PRIMARY = replication.PRIMARY


class K2BaseDriver(driver_base.AdapterDriver):
    """Version history:

    .. code-block:: none

      1.0.0 - iSCSI and FC; array-side clones; revert; manage/unmanage;
              replication v2.1 with failback and active/active failover
    """

    VERSION = '1.0.0'
    ADAPTER = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.configuration.append_config_values(san.san_opts)
        self.configuration.append_config_values(common_options.rest_opts)
        self.configuration.append_config_values(k2_options.k2_opts)
        active = kwargs.get('active_backend_id')
        self.active_backend_id = None if active == PRIMARY else active
        # {backend id: adapter}; PRIMARY is the configured array.
        self.adapters = {}
        self.replication = None

    @property
    def adapter(self):
        """The adapter of the array the backend uses now."""
        return self.adapters[self.active_backend_id or PRIMARY]

    def do_setup(self, context):
        conf = self.configuration
        for option in ('san_ip', 'san_login', 'san_password'):
            if not conf.safe_get(option):
                raise flash_exception.InvalidBackendConfig(
                    option=option, value=conf.safe_get(option),
                    reason='required by the K2 driver')
        primary = self._client(conf.san_ip, conf.san_login,
                               conf.san_password,
                               conf.safe_get('san_api_port'),
                               tls.verify(conf, tls.K2))
        device = replication.parse_device(conf)
        adapters = {PRIMARY: primary}
        if device is not None:
            secondary = self._client(device['san_ip'], device['login'],
                                     device['password'], device['port'],
                                     device['verify'])
            self.replication = replication.ReplicationManager(
                conf, device, primary, secondary)
            adapters[device['backend_id']] = secondary
        if self.active_backend_id not in adapters and \
                self.active_backend_id is not None:
            raise flash_exception.InvalidBackendConfig(
                option='replication_device backend_id',
                value=device and device['backend_id'],
                reason='the backend is failed over to %s, which is not its '
                       'replication_device' % self.active_backend_id)
        self.adapters = {
            backend_id: self.ADAPTER(
                conf, client, self.VERSION,
                array_id=None if backend_id == PRIMARY else backend_id,
                replication=self.replication)
            for backend_id, client in adapters.items()}

    def _client(self, host, login, password, port, verify):
        conf = self.configuration
        return k2_client.K2Client(
            host, login, password, port=port, verify=verify,
            connect_timeout=conf.flash_rest_connect_timeout,
            read_timeout=conf.flash_rest_read_timeout,
            retries=conf.flash_rest_retries,
            backoff=conf.flash_rest_retry_backoff)

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
        if self.replication is None:
            raise exception.InvalidReplicationTarget(reason=_(
                'no replication_device is configured'))
        active, updates = self.replication.failover(
            volumes, secondary_id, self.active_backend_id)
        return active, updates, []

    def failover_completed(self, context, active_backend_id=None):
        """Active/active: every service switches to the new array.

        Only the choice of adapter changes; each adapter's caches (hosts,
        stats, targets) belong to its own array.
        """
        if self.replication is None:
            return
        self.active_backend_id = None if active_backend_id in (
            None, PRIMARY) else active_backend_id
        self.adapter.load()

    def failover_host(self, context, volumes, secondary_id=None,
                      groups=None):
        active, updates, _groups = self.failover(context, volumes,
                                                 secondary_id)
        self.failover_completed(context, active)
        return active, updates, []

    def get_replication_error_status(self, context, groups):
        if self.replication is None:
            return [], []
        return self.replication.error_status(self.adapter.client)

    def migrate_volume(self, context, volume, host):
        return self.adapter.migrate_volume(volume, host)


class K2AttachDriver(driver_base.HostLockedAttach, K2BaseDriver):
    """Map and unmap, serialised per host."""


@interface.volumedriver
class K2ISCSIDriver(K2AttachDriver):
    """K2 array over iSCSI."""

    PROTOCOL = protocols.K2ISCSIAdapter.PROTOCOL
    ADAPTER = protocols.K2ISCSIAdapter


@interface.volumedriver
class K2FCDriver(K2AttachDriver):
    """K2 array over Fibre Channel, with FC zone manager hooks."""

    PROTOCOL = protocols.K2FCAdapter.PROTOCOL
    ADAPTER = protocols.K2FCAdapter

    def initialize_connection(self, volume, connector):
        info = super().initialize_connection(volume, connector)
        fczm_utils.add_fc_zone(info)
        return info

    def terminate_connection(self, volume, connector, **kwargs):
        info = super().terminate_connection(volume, connector, **kwargs) or {
            'driver_volume_type': 'fibre_channel', 'data': {}}
        if info['data']:
            # Zones go only with the host's last mapping on the array.
            fczm_utils.remove_fc_zone(info)
        return info
