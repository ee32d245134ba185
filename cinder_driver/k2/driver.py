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
from cinder.objects import fields
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
from cinder_driver.k2 import provider_id
from cinder_driver.k2 import replication

PRIMARY = replication.PRIMARY
FAILED_OVER = fields.ReplicationStatus.FAILED_OVER


def _failed_over_to(active_backend_id):
    """The replication target the backend runs on, None on its primary.

    Cinder records a failback as ``''`` (the service's
    ``active_backend_id`` column) and hands that to a restarted service.
    """
    if not active_backend_id or active_backend_id == PRIMARY:
        return None
    return active_backend_id


class K2BaseDriver(driver_base.AdapterDriver):
    """Version history:

    .. code-block:: none

      1.0.0 - iSCSI and FC; array-side clones; revert; manage/unmanage;
              replication v2.1 with failback and active/active failover
      1.1.0 - group replication (one replication cut per group);
              replication error status Cinder can read; snapshots
              attached for backups through views
    """

    VERSION = '1.1.0'
    ADAPTER = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.configuration.append_config_values(san.san_opts)
        self.configuration.append_config_values(common_options.rest_opts)
        self.configuration.append_config_values(k2_options.k2_opts)
        self.replication = None
        # The adapter of the array the backend uses now: chosen when the
        # adapters are made and at each failover, not at every call.
        self.adapter = None
        self._adapters = {}
        self._activate(_failed_over_to(kwargs.get('active_backend_id')))

    @property
    def adapters(self):
        """{backend id: adapter}; PRIMARY is the configured array."""
        return self._adapters

    @adapters.setter
    def adapters(self, adapters):
        self._adapters = adapters
        self._activate(self.active_backend_id)

    def _activate(self, active_backend_id):
        """Use the array ``active_backend_id`` (None: the primary)."""
        self.active_backend_id = active_backend_id
        self.adapter = self._adapters.get(active_backend_id or PRIMARY)

    def adapter_of(self, volume):
        """The adapter of the array ``volume`` is on.

        The backend's, except for a member of a group failed over on its
        own (group replication): its provider_id names the array that
        serves it now.
        """
        # Only a failed-over volume can be elsewhere: the common case
        # reads one field and parses nothing.
        if volume.replication_status != FAILED_OVER:
            return self.adapter
        pid = provider_id.ProviderId.parse(getattr(volume, 'provider_id',
                                                   None))
        if pid is None:
            return self.adapter
        adapter = self.adapters.get(pid.array or PRIMARY, self.adapter)
        if not adapter.loaded:
            # The other array serves this group only: its targets and
            # policies are read when the first of its volumes is used.
            adapter.load()
        return adapter

    def _refuse_copy_elsewhere(self, source, what):
        """Refuse to copy ``source`` (failed over) when another array
        serves it.

        Copies are made on the backend's array only, so the member of a
        group failed over on its own is refused before anything is made.
        """
        if self.adapter_of(source) is not self.adapter:
            raise exception.VolumeDriverException(message=_(
                '%(what)s %(id)s is on the replication target with its '
                'failed-over group; fail the group back first') % {
                    'what': what, 'id': source.id})

    def create_volume_from_snapshot(self, volume, snapshot):
        if snapshot.volume.replication_status == FAILED_OVER:
            self._refuse_copy_elsewhere(snapshot.volume,
                                        'the volume of snapshot')
        return self.adapter.create_volume_from_snapshot(volume, snapshot)

    def create_cloned_volume(self, volume, src_vref):
        if src_vref.replication_status == FAILED_OVER:
            self._refuse_copy_elsewhere(src_vref, 'volume')
        return self.adapter.create_cloned_volume(volume, src_vref)

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
        return (common_options.rest_opts + common_options.lock_opts +
                k2_options.k2_opts +
                [opt for opt in san.san_opts + driver.volume_opts
                 if opt.name in additional])

    # -- replication ---------------------------------------------------------
    def failover(self, context, volumes, secondary_id=None, groups=None):
        """Active/active: the array side, run by one service.

        Members of replicated groups move with their group's session.
        """
        if self.replication is None:
            raise exception.InvalidReplicationTarget(reason=_(
                'no replication_device is configured'))
        replicated = [g for g in groups or [] if g.is_replicated]
        ids = {g.id for g in replicated}
        active, updates = self.replication.failover(
            [v for v in volumes if v.group_id not in ids], secondary_id,
            self.active_backend_id)
        group_updates, member_updates = \
            self.replication.groups.failover_backend(
                replicated, [v for v in volumes if v.group_id in ids],
                secondary_id)
        return active, updates + member_updates, group_updates

    def failover_completed(self, context, active_backend_id=None):
        """Active/active: every service switches to the new array.

        Only the choice of adapter changes; each adapter's caches (hosts,
        stats, targets) belong to its own array.
        """
        if self.replication is None:
            return
        self._activate(_failed_over_to(active_backend_id))
        self.adapter.load()

    def failover_host(self, context, volumes, secondary_id=None,
                      groups=None):
        active, updates, group_updates = self.failover(
            context, volumes, secondary_id, groups)
        self.failover_completed(context, active)
        return active, updates, group_updates

    def get_replication_error_status(self, context, groups):
        if self.replication is None:
            return [], []
        return self.replication.error_status(self.adapter.client, groups,
                                             context)

    # -- group replication ---------------------------------------------------
    def _group_replication(self, group):
        if self.replication is None or not group.is_replicated:
            raise exception.InvalidGroupType(reason=_(
                'group %s: replication needs a replicated group type on a '
                'backend with a replication_device') % group.id)
        if self.active_backend_id is not None:
            raise exception.InvalidReplicationTarget(reason=_(
                'the backend is failed over to %s; groups replicate from '
                'the primary only') % self.active_backend_id)
        return self.replication.groups

    def enable_replication(self, context, group, volumes):
        return self._group_replication(group).enable(group, volumes)

    def disable_replication(self, context, group, volumes):
        return self._group_replication(group).disable(group, volumes)

    def failover_replication(self, context, group, volumes,
                             secondary_backend_id=None):
        return self._group_replication(group).failover(
            group, volumes, secondary_backend_id)

    def migrate_volume(self, context, volume, host):
        return self.adapter.migrate_volume(volume, host)


class K2AttachDriver(driver_base.HostLockedAttach, K2BaseDriver):
    """Map and unmap, serialised per host; snapshots through views."""


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
