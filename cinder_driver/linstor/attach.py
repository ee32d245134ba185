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

Creating a resource and marking it are two requests; a service killed
between them would leave a resource nobody owns, which a retried attach
took for one that was there before and a detach never removed. So before
it creates anything, an attach records its intent on the resource
definition: ``Aux/cinder-flash/attaching/<node>`` names the volume (or
snapshot) the node's resource is being made for. It is written only when
the node has no resource of the definition, so a resource that was there
before (a replica, somebody else's client) is never claimed by it. A
retried attach that finds an unmarked resource under an intent naming its
volume marks it; a detach treats it as its own. The intent goes once the
mark is set, or once the detach has removed the resource.
"""

import hashlib

from cinder import exception
from cinder.i18n import _
from oslo_log import log as logging

from cinder_driver.common import cleanup
from cinder_driver.linstor import apicallrc
from cinder_driver.linstor import client as linstor_client

LOG = logging.getLogger(__name__)
MANAGED_BY = 'Aux/cinder-flash/attached-for'
INTENT = 'Aux/cinder-flash/attaching/'
# LINSTOR refuses a property path longer than this (PropsContainer).
KEY_MAX = 256
TWO_PRIMARIES = 'DrbdOptions/Net/allow-two-primaries'
DISKLESS_FLAGS = ('DRBD_DISKLESS', 'DISKLESS', 'NVME_INITIATOR')


def diskless(rsc):
    return any(f in DISKLESS_FLAGS for f in rsc.get('flags') or [])


def intent_key(node):
    """The definition's property that records an attach to ``node``.

    LINSTOR node names are case-insensitive, property keys are not; a
    host name too long for a property path is stood for by its digest.
    """
    node = str(node).lower()
    key = INTENT + node
    if len(key) > KEY_MAX:
        key = INTENT + 'sha256-' + hashlib.sha256(
            node.encode('utf-8')).hexdigest()
    return key


def intents(rd):
    """{key: id} of the attach intents on a definition's view."""
    return {k: v for k, v in ((rd or {}).get('props') or {}).items()
            if k.startswith(INTENT)}


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

    def _intents(self, volume, name):
        """Keys of the intents naming ``volume`` on definition ``name``."""
        return {k for k, v in intents(
            self.client.resource_definition(name)).items()
            if v == volume.id}

    def _forget(self, name, keys):
        if keys:
            self.client.modify_resource_definition(
                name, {'delete_props': sorted(keys)})

    def _make(self, volume, name, node, key, remote_ok):
        """Record the intent, then create the node's resource."""
        self.client.modify_resource_definition(
            name, {'override_props': {key: volume.id}})

        def undo():
            # A refused create made nothing: the intent goes. If a
            # resource is there after all, the intent keeps it ours.
            if self.client.resource(name, node) is None:
                self._forget(name, {key})
        with cleanup.undo_on_error('removing the attach intent %s of %s' % (
                key, name), undo):
            self.client.make_available(name, node, diskful=not remote_ok)

    def _existing(self, name, node):
        """The resource of ``name`` on ``node`` before an attach, or None.

        LINSTOR answers a resource view filtered by a node it does not
        know with 404 "Node ... not found": the host cannot be given a
        resource, and nothing has been written yet. Say so in the
        operator's terms rather than as a failed lookup.
        """
        try:
            return self.client.resource(name, node)
        except linstor_client.LinstorRefusal as e:
            if not e.has(apicallrc.FAIL_NOT_FOUND_NODE):
                raise
            raise exception.VolumeBackendAPIException(data=_(
                'Cannot attach %(name)s to host %(node)s: it is not a '
                'LINSTOR node (%(reason)s). Register the host with the '
                'LINSTOR controller (a satellite, diskless at least), '
                'then attach again.') % {
                    'name': name, 'node': node,
                    'reason': apicallrc.text(apicallrc.errors(e.entries))})

    def open(self, volume, name, node, remote_ok=True):
        """A resource of ``name`` on ``node``; its device path."""
        key = intent_key(node)
        rsc = self._existing(name, node)
        if rsc is None:
            self._make(volume, name, node, key, remote_ok)
            mine = {key}
        else:
            # An earlier attach may have died after creating it.
            mine = self._intents(volume, name) & {key}
            self.client.make_available(name, node, diskful=not remote_ok)
        if mine and (rsc is None or not self._tagged(volume, rsc)):
            self.client.modify_resource(name, node, {MANAGED_BY: volume.id})
        self._forget(name, mine)
        rsc = self.client.resource(name, node)
        if rsc is None:
            raise exception.VolumeBackendAPIException(data=_(
                'LINSTOR made %(name)s available on %(node)s, but lists no '
                'resource there') % {'name': name, 'node': node})
        return device_path(rsc, name)

    @staticmethod
    def _tagged(volume, rsc):
        return (rsc.get('props') or {}).get(MANAGED_BY) == volume.id

    def ours(self, volume, name):
        """Nodes of the resources of ``name`` an attach of ``volume`` made
        (marked, or under its intent).
        """
        keys = self._intents(volume, name)
        return [r['node_name'] for r in self.client.resources([name])
                if self._tagged(volume, r) or
                intent_key(r.get('node_name')) in keys]

    def close(self, volume, name, node=None):
        """Remove the resources attach made (on ``node``, or anywhere)."""
        rows = self.client.resources([name])
        keys = self._intents(volume, name)
        if node is not None:
            keys &= {intent_key(node)}
        for rsc in rows:
            if node is not None and str(
                    rsc.get('node_name')).lower() != node.lower():
                continue
            tagged = self._tagged(volume, rsc)
            if not tagged and intent_key(rsc['node_name']) not in keys:
                continue
            if not diskless(rsc):
                others = [r for r in rows if r is not rsc and
                          not diskless(r)]
                if len(others) < self.replicas_wanted(volume):
                    # It carries redundancy now: it stays, as a replica.
                    LOG.info('the replica of %s that an attach made on %s '
                             'stays: the volume needs it', name,
                             rsc['node_name'])
                    if tagged:
                        self.client.modify_resource(
                            name, rsc['node_name'],
                            delete_props=[MANAGED_BY])
                    continue
            self.client.delete_resource(name, rsc['node_name'])
        # Only now: a detach that dies before this still finds them ours.
        self._forget(name, keys)

    def allow_two_primaries(self, name, allow):
        body = ({'override_props': {TWO_PRIMARIES: 'yes'}} if allow else
                {'delete_props': [TWO_PRIMARIES]})
        self.client.modify_resource_definition(name, body)
