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

from cinder_driver.common import naming
from cinder_driver.k2 import rest as k2_rest

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


class HostCopyOps(object):
    """Mixed into the K2 adapter: uses its client, hosts and mappings."""

    def _host_copy_possible(self, what):
        if self.protocol != 'iSCSI':
            raise exception.VolumeDriverException(message=_(
                'The array cannot copy %s (no volume_source capability) and '
                'the volume service copies only over iSCSI.') % what)

    def _create_by_host_copy(self, volume, source_volume=None,
                             volsnap_id=None):
        what = ('volume %s' % source_volume.id if source_volume
                else 'snapshot')
        self._host_copy_possible(what)
        update = self._create(volume, volume.size)
        volume.provider_id = update['provider_id']
        temp_snapshot = None
        try:
            if source_volume is not None:
                temp_snapshot, volsnap_id = self._copy_snapshot(
                    volume, source_volume)
            _group, target_id = self._volume_ids(volume)
            self._copy_luns(('volsnaps', volsnap_id),
                            ('volumes', target_id))
        except Exception:
            LOG.error('Copying %(what)s into volume %(vol)s failed; the new '
                      'volume is removed.', {'what': what, 'vol': volume.id})
            self.delete_volume(volume)
            raise
        finally:
            if temp_snapshot is not None:
                self.client.delete('snapshots', temp_snapshot)
        return update

    def _copy_snapshot(self, volume, source_volume):
        group_id, source_id = self._volume_ids(source_volume)
        snap = self.client.create('snapshots', {
            'short_name': COPY_SNAPSHOT_PREFIX + volume.id,
            'source': k2_rest.ref('volume_groups', group_id),
            'retention_policy': self.retention_policy,
            'is_auto_deleteable': False})
        volsnap = self.client.find('volsnaps', **{
            'snapshot.ref': '/snapshots/%d' % snap['id'],
            'source.ref': '/volumes/%d' % source_id})
        if volsnap is None:
            self.client.delete('snapshots', snap['id'])
            raise exception.VolumeBackendAPIException(data=_(
                'the array made snapshot %s without an image of volume %s')
                % (snap['id'], source_volume.id))
        return snap['id'], volsnap['id']

    def _copy_luns(self, source, target):
        connector = copy_connector(self.configuration)
        host_id = self._host_id(connector, create=True)
        mappings = []
        try:
            luns = []
            for resource, obj_id in (source, target):
                mapping = self.client.create('mappings', {
                    'volume': k2_rest.ref(resource, obj_id),
                    'host': k2_rest.ref('hosts', host_id)})
                mappings.append(mapping['id'])
                luns.append(mapping['lun'])
            self._qemu_copy(connector, *luns)
        finally:
            for mapping_id in mappings:
                self.client.delete('mappings', mapping_id)

    def _qemu_copy(self, connector, source_lun, target_lun):
        chap = self._chap(naming.host_name(connector, 32))
        portal = self.portals[0]
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
            args += [_url(portal, self.target_iqn, lun,
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
