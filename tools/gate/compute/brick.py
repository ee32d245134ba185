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

"""os-brick's iSCSI connector for a host without a kernel initiator.

Nova's libvirt driver hard-codes os-brick's iSCSI connector for iSCSI
volumes (iscsiadm and the kernel initiator), and Cinder uses the same
connector to copy images to volumes. ``install()`` puts this connector in
its place before the service starts; it attaches through
``tools.iscsi_loop`` (qemu-storage-daemon, FUSE, a buffered loop device)
and returns the loop device, so Nova's own ``LibvirtISCSIVolumeDriver``
and Cinder's copies run unchanged.

Configured by the environment the bed gives the service:
``CINDER_FLASH_INITIATOR`` (the initiator name the service reports to
Cinder and logs in with) and ``CINDER_FLASH_ATTACH_DIR`` (where the
attachments keep their state).
"""

import os

from os_brick import exception
from os_brick.initiator.connectors import base
from oslo_log import log as logging

from tools import iscsi_loop

LOG = logging.getLogger(__name__)
INITIATOR_ENV = 'CINDER_FLASH_INITIATOR'
STATE_ENV = 'CINDER_FLASH_ATTACH_DIR'
CLASS_PATH = __name__ + '.UserspaceISCSIConnector'


def _state_dir():
    path = os.environ.get(STATE_ENV)
    if not path:
        raise exception.BrickException(
            message='%s is not set: nowhere to keep attachments' % STATE_ENV)
    return path


def targets(props):
    """The (portal, iqn, lun) paths of a connection, first one first."""
    portals = props.get('target_portals') or [props.get('target_portal')]
    iqns = props.get('target_iqns') or [props.get('target_iqn')] * len(
        portals)
    luns = props.get('target_luns') or [props.get('target_lun')] * len(
        portals)
    if not portals[0] or len(iqns) != len(portals) or \
            len(luns) != len(portals):
        raise exception.InvalidParameterValue(
            err='iSCSI connection properties without a usable target: '
                'portals %r, iqns %r, luns %r' % (portals, iqns, luns))
    return list(zip(portals, iqns, luns))


def _target(props, portal, iqn, lun):
    chap = None
    if props.get('auth_method') == 'CHAP':
        chap = (props['auth_username'], props['auth_password'])
    return iscsi_loop.Target(portal, iqn, lun, os.environ[INITIATOR_ENV],
                             chap)


class UserspaceISCSIConnector(base.BaseLinuxConnector):

    @staticmethod
    def get_connector_properties(root_helper, *args, **kwargs):
        initiator = os.environ.get(INITIATOR_ENV)
        return {'initiator': initiator} if initiator else {}

    def get_search_path(self):
        return None

    def get_volume_paths(self, connection_properties):
        for path in targets(connection_properties):
            loop = iscsi_loop.Attachment(
                _state_dir(), _target(connection_properties, *path)
            ).attached()
            if loop:
                return [loop]
        return []

    def check_valid_device(self, path, run_as_root=True):
        try:
            with open(path, 'rb') as f:
                f.read(4096)
            return True
        except OSError as e:
            LOG.error('cannot read %s: %s', path, e)
            return False

    def connect_volume(self, connection_properties):
        errors = []
        for path in targets(connection_properties):
            attachment = iscsi_loop.Attachment(
                _state_dir(), _target(connection_properties, *path))
            try:
                loop = attachment.attach()
            except iscsi_loop.AttachError as e:
                LOG.warning('iSCSI path %s LUN %s failed: %s', path[0],
                            path[2], e)
                errors.append(str(e))
                continue
            LOG.info('attached %s LUN %s at %s as %s (buffered loop)',
                     path[1], path[2], path[0], loop)
            return {'type': 'block', 'path': loop}
        raise exception.VolumeDeviceNotFound(device='; '.join(errors))

    def disconnect_volume(self, connection_properties, device_info,
                          force=False, ignore_errors=False):
        for path in targets(connection_properties):
            attachment = iscsi_loop.Attachment(
                _state_dir(), _target(connection_properties, *path))
            try:
                attachment.detach(force=force)
            except iscsi_loop.AttachError as e:
                if not (force and ignore_errors):
                    raise exception.BrickException(message=str(e))
                LOG.warning('detaching %s LUN %s: %s', path[1], path[2], e)

    def extend_volume(self, connection_properties):
        for path in targets(connection_properties):
            attachment = iscsi_loop.Attachment(
                _state_dir(), _target(connection_properties, *path))
            if attachment.attached():
                try:
                    return attachment.resize()
                except iscsi_loop.AttachError as e:
                    raise exception.BrickException(message=str(e))
        raise exception.VolumeDeviceNotFound(
            device=connection_properties.get('target_iqn'))


def install():
    """Make os-brick hand out this connector for iSCSI and iSER."""
    from os_brick import initiator
    from os_brick.initiator import connector
    if not os.environ.get(INITIATOR_ENV):
        raise RuntimeError('%s is not set' % INITIATOR_ENV)
    for mapping in (connector._connector_mapping_linux,):
        mapping[initiator.ISCSI] = CLASS_PATH
        mapping[initiator.ISER] = CLASS_PATH
    # The connector properties a host reports come from every connector
    # listed; this host speaks nothing else, and probing the others (NVMe,
    # FC) needs privileged helpers for nothing.
    connector.unix_connector_list[:] = [
        'os_brick.initiator.connectors.base.BaseLinuxConnector', CLASS_PATH]
