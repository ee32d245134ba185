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

"""Opening a LINSTOR volume on a node, and closing it again.

An attach asks LINSTOR to make the volume available on the node (a
diskless client where remote access is allowed, else a diskful replica).
A resource the attach itself created is marked with the volume's id, and
only a marked resource is ever removed on detach; a diskful one only while
the volume keeps its type's replica count without it. The device path
comes from the resource's layer data: DRBD's stable by-res link when DRBD
is the top layer, else the top layer's own device.
"""

from cinder import exception
from cinder.i18n import _
from oslo_log import log as logging

LOG = logging.getLogger(__name__)
MANAGED_BY = 'Aux/cinder-flash/attached-for'
TWO_PRIMARIES = 'DrbdOptions/Net/allow-two-primaries'
DISKLESS_FLAGS = ('DRBD_DISKLESS', 'DISKLESS', 'NVME_INITIATOR')


def diskless(rsc):
    return any(f in DISKLESS_FLAGS for f in rsc.get('flags') or [])


def device_path(rsc, name, number=0):
    """The block device of volume ``number`` of a resource view."""
    volumes = [v for v in rsc.get('volumes') or []
               if v.get('volume_number') == number]
    if not volumes:
        raise exception.VolumeBackendAPIException(data=_(
            'LINSTOR resource %(name)s on %(node)s has no volume %(n)d') % {
                'name': name, 'node': rsc.get('node_name'), 'n': number})
    volume = volumes[0]
    layers = volume.get('layer_data_list') or []
    top = layers[0].get('type') if layers else (
        rsc.get('layer_object') or {}).get('type')
    if str(top).upper() == 'DRBD':
        # udev's link survives a change of minor number.
        return '/dev/drbd/by-res/%s/%d' % (name, number)
    path = volume.get('device_path') or (
        (layers[0].get('data') or {}).get('device_path') if layers else None)
    if not path:
        raise exception.VolumeBackendAPIException(data=_(
            'LINSTOR reports no device for %(name)s on %(node)s yet') % {
                'name': name, 'node': rsc.get('node_name')})
    return path


class Attachments(object):

    def __init__(self, client, replicas_wanted):
        """``replicas_wanted(volume) -> int``: the type's replica count."""
        self.client = client
        self.replicas_wanted = replicas_wanted

    def open(self, volume, name, node, remote_ok=True):
        """A resource of ``name`` on ``node``; its device path."""
        existed = self.client.resource(name, node) is not None
        self.client.make_available(name, node, diskful=not remote_ok)
        if not existed:
            self.client.modify_resource(name, node, {MANAGED_BY: volume.id})
        rsc = self.client.resource(name, node)
        if rsc is None:
            raise exception.VolumeBackendAPIException(data=_(
                'LINSTOR made %(name)s available on %(node)s, but lists no '
                'resource there') % {'name': name, 'node': node})
        return device_path(rsc, name)

    def _ours(self, volume, rsc):
        return (rsc.get('props') or {}).get(MANAGED_BY) == volume.id

    def close(self, volume, name, node=None):
        """Remove the resources attach made (on ``node``, or anywhere)."""
        rows = self.client.resources([name])
        for rsc in rows:
            if node is not None and str(
                    rsc.get('node_name')).lower() != node.lower():
                continue
            if not self._ours(volume, rsc):
                continue
            if not diskless(rsc):
                others = [r for r in rows if r is not rsc and
                          not diskless(r)]
                if len(others) < self.replicas_wanted(volume):
                    # It carries redundancy now: it stays, as a replica.
                    LOG.info('the replica of %s that an attach made on %s '
                             'stays: the volume needs it', name,
                             rsc['node_name'])
                    self.client.modify_resource(name, rsc['node_name'],
                                                delete_props=[MANAGED_BY])
                    continue
            self.client.delete_resource(name, rsc['node_name'])

    def allow_two_primaries(self, name, allow):
        body = ({'override_props': {TWO_PRIMARIES: 'yes'}} if allow else
                {'delete_props': [TWO_PRIMARIES]})
        self.client.modify_resource_definition(name, body)
