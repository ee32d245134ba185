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

"""Volume copies through the cinder-volume host, for arrays without copies.

K2's documented REST API has no way to make an independent volume from
another one. When the array does not offer ``volume_source`` in its API
discovery, clones and volumes from snapshots are filled by the volume
service itself: it maps the source image and the new, empty volume to its
own iSCSI initiator and copies with ``qemu-img`` (libiscsi, user space).
Zero ranges are skipped (the new volume is known to read as zeros), so
the copy stays thin. A clone copies from a temporary snapshot, so a source
in use by an instance is copied at one point in time.
"""

import os
import socket
import tempfile

from cinder import exception
from cinder.i18n import _
from oslo_concurrency import processutils
from oslo_log import log as logging
from oslo_serialization import jsonutils

from cinder_driver.common import cleanup
from cinder_driver.common import naming
from cinder_driver.k2 import hosts

LOG = logging.getLogger(__name__)
COPY_SNAPSHOT_PREFIX = 'cc-'
INITIATOR_PREFIX = 'iqn.2026-11.io.cinder-flash:copy.'


def copy_connector(configuration):
    """The connector the volume service copies through."""
    host = socket.gethostname()
    initiator = configuration.safe_get('k2_copy_initiator') or (
        INITIATOR_PREFIX + naming.fit(host.lower(), 200))
    return {'host': 'cinder-flash-copy-' + host, 'initiator': initiator}


def _url(portal, iqn, lun, initiator, chap_user):
    host, _sep, port = portal.rpartition(':')
    spec = {'file.driver': 'iscsi', 'file.transport': 'tcp',
            'file.portal': '%s:%s' % (host, port), 'file.target': iqn,
            'file.lun': lun, 'file.initiator-name': initiator}
    if chap_user:
        spec.update({'file.user': chap_user,
                     'file.password-secret': 'chap'})
    return 'json:' + jsonutils.dumps(spec)


class HostCopier(object):
    """Copies through the volume service's own iSCSI initiator.

    Composed into the iSCSI adapter of one array; uses its client, its
    hosts, its portals and CHAP credentials, and its volume create and
    delete.
    """

    def __init__(self, adapter):
        self.adapter = adapter

    @property
    def client(self):
        return self.adapter.client

    def clone(self, volume, source_volume):
        """A new volume holding a point-in-time copy of another."""
        return self._fill(volume, 'volume %s' % source_volume.id,
                          source_volume=source_volume)

    def from_volsnap(self, volume, volsnap_id):
        """A new volume holding a copy of a snapshot's image."""
        return self._fill(volume, 'snapshot', volsnap_id=volsnap_id)

    def _fill(self, volume, what, source_volume=None, volsnap_id=None):
        update = self.adapter.create(volume, volume.size)
        # The new volume's ids, for the lookups and the cleanup below.
        volume.provider_id = update['provider_id']
        temp_snapshot = None
        try:
            if source_volume is not None:
                temp_snapshot, volsnap_id = self._copy_snapshot(
                    volume, source_volume)
            _group, target_id = self.adapter.volume_ids(volume)
            self._copy_luns(volsnap_id, target_id)
        except Exception:
            LOG.error('Copying %(what)s into volume %(vol)s failed; the new '
                      'volume is removed.', {'what': what, 'vol': volume.id})
            self.adapter.delete_volume(volume)
            raise
        finally:
            if temp_snapshot is not None:
                self.client.delete_snapshot(temp_snapshot)
        return update

    def _copy_snapshot(self, volume, source_volume):
        group_id, source_id = self.adapter.volume_ids(source_volume)
        snap_id = self.client.create_snapshot(
            COPY_SNAPSHOT_PREFIX + volume.id, group_id,
            self.adapter.retention_policy_id)
        volsnap = self.client.volsnap_of(snap_id, source_id)
        if volsnap is None:
            self.client.delete_snapshot(snap_id)
            raise exception.VolumeBackendAPIException(data=_(
                'the array made snapshot %s without an image of volume %s')
                % (snap_id, source_volume.id))
        return snap_id, volsnap

    def _copy_luns(self, volsnap_id, volume_id):
        connector = copy_connector(self.adapter.configuration)
        initiators = self.adapter.initiators(connector)
        host_id = self.adapter.hosts.host_id(connector, initiators,
                                             create=True)
        mapped = []
        try:
            source_lun = self.client.map_volsnap(host_id, volsnap_id)
            mapped.append({'volsnap_id': volsnap_id})
            target_lun = self.client.map_volume(host_id, volume_id)
            mapped.append({'volume_id': volume_id})
            self._qemu_copy(connector, source_lun, target_lun)
        finally:
            for which in mapped:
                with cleanup.suppressed('unmapping %s' % which):
                    self.client.unmap(self.client.mappings_of(
                        host_id=host_id, **which))

    def _qemu_copy(self, connector, source_lun, target_lun):
        chap = self.adapter.chap(naming.host_name(connector,
                                                  hosts.HOST_NAME_LIMIT))
        portal = self.adapter.portals[0]
        args = ['qemu-img', 'convert', '-n', '--target-is-zero', '-f',
                'raw', '-O', 'raw']
        secret_file = None
        try:
            if chap is not None:
                # The secret goes through a private file, never argv.
                fd, secret_file = tempfile.mkstemp(prefix='k2-chap-')
                with os.fdopen(fd, 'w') as f:
                    f.write(chap[1])
                args[2:2] = ['--object',
                             'secret,id=chap,file=%s' % secret_file]
            user = chap[0] if chap else None
            args += [_url(portal, self.adapter.target_iqn, lun,
                          connector['initiator'], user)
                     for lun in (source_lun, target_lun)]
            processutils.execute(*args)
        except processutils.ProcessExecutionError as e:
            raise exception.VolumeBackendAPIException(data=_(
                'qemu-img could not copy between LUNs %(src)s and %(dst)s: '
                '%(err)s') % {'src': source_lun, 'dst': target_lun,
                              'err': (e.stderr or '').strip()[-500:]})
        finally:
            if secret_file:
                os.unlink(secret_file)
