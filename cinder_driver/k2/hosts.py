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

"""The array hosts of connectors: found by initiator, or created.

One registry per array (per adapter): host ids are cached per process,
keyed on the connector's initiators, and belong to that array only.
"""

import threading

from cinder import exception
from cinder.i18n import _

from cinder_driver.common import cleanup
from cinder_driver.common import exception as flash_exception
from cinder_driver.common import naming

HOST_NAME_LIMIT = 32


class HostRegistry(object):
    """Finds or creates the host of a connector's initiators.

    :param client: the K2Client of the array.
    :param kind: initiator kind, 'iscsi' or 'fc'.
    :param chap: callable(host name) -> (user, secret) or None.
    """

    def __init__(self, client, kind, chap):
        self.client = client
        self.kind = kind
        self.chap = chap
        self._hosts = {}
        self._lock = threading.Lock()

    def host_id(self, connector, initiators, create):
        """The host id, created (``create``) or None if the array has none.
        """
        key = tuple(initiators)
        with self._lock:
            cached = self._hosts.get(key)
        if cached is not None:
            return cached
        if create:
            host_id = self._create(connector, initiators)
        else:
            host_id = self.client.host_of_initiators(self.kind, initiators)
            if host_id is None:
                return None
        with self._lock:
            self._hosts[key] = host_id
        return host_id

    def forget(self, initiators):
        with self._lock:
            self._hosts.pop(tuple(initiators), None)

    def _create(self, connector, initiators):
        """The connector's host, created if the array has none.

        Creating first costs no lookup for a new host (host, initiators)
        and one for a known one (its name is taken: find it by initiator),
        so a first attach takes at most three calls either way.
        """
        name = naming.host_name(connector, HOST_NAME_LIMIT)
        chap = self.chap(name)
        profile = None
        if chap is not None:
            profile = self.client.ensure_auth_profile(name, *chap)
        try:
            host_id = self.client.create_host(name, profile)
        except flash_exception.ObjectExists:
            return self._known(name, profile, initiators)
        for initiator in initiators:
            try:
                self.client.add_initiator(self.kind, host_id, initiator)
            except flash_exception.ObjectExists:
                # The initiator belongs to a host of another name: that
                # one is the host, the new one goes.
                found = self.client.host_of_initiators(self.kind,
                                                       initiators)
                if found is None or found == host_id:
                    raise
                with cleanup.suppressed('removing host %s' % host_id):
                    self.client.delete_host(host_id)
                return found
        return host_id

    def _known(self, name, profile, initiators):
        host_id = self.client.host_of_initiators(self.kind, initiators)
        if host_id is None:
            # A host of that name without these initiators (a reinstalled
            # node, say): they are added to it.
            host_id = self.client.host_by_name(name)
            if host_id is None:
                raise exception.VolumeBackendAPIException(data=_(
                    'the array refused host %s and has none of that name')
                    % name)
            for initiator in initiators:
                self.client.add_initiator(self.kind, host_id, initiator)
        if profile is not None:
            # A host made before CHAP was turned on gets its profile.
            self.client.set_host_auth_profile(host_id, profile)
        return host_id
