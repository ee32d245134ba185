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

"""The K2 mappings of a host as LUNs, and its CHAP secret.

An initiator belongs to the K2 host that registered it as a host IQN;
the host sees each volume or volsnap mapped to it under the mapping's LUN
number, and must log in with its auth profile's CHAP user and secret.
"""

import hashlib
import time

from reference_array.core import devices
from reference_array.k2 import refs


class LUN(devices.Device):
    """A mapped volume or volsnap; I/O always finds its current layer."""

    def __init__(self, store, engine, resource, obj, system_id, read_only):
        self.resource = resource
        self.obj_id = obj['id']
        size_kib = obj['size'] if resource == 'volumes' else obj['_size']
        serial = obj['scsi_sn']
        digest = hashlib.sha256(('%s/%s' % (system_id, serial)).encode())
        # NAA 6 (registered extended) designator, stable per object.
        naa = bytes([0x60 | (digest.digest()[0] & 0x0f)]) + \
            digest.digest()[1:16]
        super().__init__(store, engine, devices.blocks_of(size_kib), serial,
                         naa, read_only)

    def _layer(self):
        obj = self.store.get(self.resource, self.obj_id)
        if obj is None:
            raise self.gone()
        # An exposed view's writes go to its own layer.
        return obj.get('_view') or obj['_layer']

    def _count(self, direction, nbytes, started):
        if self.resource == 'volumes':
            self.engine.count_volume(self.obj_id, direction, nbytes,
                                     time.monotonic() - started)


class K2Exporter(devices.Exporter):

    def __init__(self, store, engine, system_id):
        self.store = store
        self.engine = engine
        self.system_id = system_id

    def _host_of(self, initiator):
        port = self.store.first('host_iqns', 'iqn', initiator)
        return port['host']['ref'] if port else None

    def _read_only(self, resource, obj):
        """Volsnaps are read-only unless their snapshot is an exposed
        view.
        """
        if obj.get('read_only'):
            return True
        if resource != 'volsnaps':
            return False
        snap = self.store.get('snapshots', refs.id_of(obj['snapshot']))
        return not (snap and snap.get('is_exposable'))

    def luns_for(self, initiator):
        host_ref = self._host_of(initiator)
        if host_ref is None:
            return {}
        luns = {}
        with self.store.lock:
            for mapping in self.store.find('mappings', 'host.ref', host_ref):
                resource, obj_id = refs.parse(mapping['volume'])
                obj = self.store.get(resource, obj_id)
                if obj is not None:
                    luns[mapping['lun']] = LUN(
                        self.store, self.engine, resource, obj,
                        self.system_id, self._read_only(resource, obj))
        return luns

    def chap_for(self, initiator):
        host_ref = self._host_of(initiator)
        if host_ref is None:
            return None
        host = self.store.get('hosts', refs.id_of({'ref': host_ref}))
        ref = (host or {}).get('host_auth_profile')
        if not ref:
            return None
        profile = self.store.get('host_auth_profiles', refs.id_of(ref))
        if not profile:
            return None
        return profile['username'], profile['_secret']
