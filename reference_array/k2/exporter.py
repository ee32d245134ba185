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
from reference_array.k2 import export_index
from reference_array.k2 import models


class LUN(devices.Device):
    """A mapped volume or volsnap; I/O always finds its current layer."""

    def __init__(self, records, engine, obj, system_id, read_only):
        self.records = records
        self.ref = models.Ref.to(obj)
        serial = obj.scsi_sn
        digest = hashlib.sha256(('%s/%s' % (system_id, serial)).encode())
        # NAA 6 (registered extended) designator, stable per object.
        naa = bytes([0x60 | (digest.digest()[0] & 0x0f)]) + \
            digest.digest()[1:16]
        super().__init__(records.store, engine, devices.blocks_of(obj.size),
                         serial, naa, read_only)
        if self.ref.kind == models.Volume.KIND:
            self.counter_id = self.ref.id

    def _layer(self):
        obj = self.records.resolve(self.ref)
        if obj is None:
            raise self.gone()
        # An exposed view's writes go to its own layer.
        return getattr(obj, 'view', None) or obj.layer

    def _count(self, direction, nbytes, started):
        if self.ref.kind == models.Volume.KIND:
            self.engine.count_volume(self.ref.id, direction, nbytes,
                                     time.monotonic() - started)


class K2Exporter(devices.Exporter):
    """Answers from an index the K2 writes keep (``exports``); asked by
    name (``luns_for``, ``chap_for``) it reads the store instead, as the
    index would answer.
    """

    def __init__(self, records, engine, system_id):
        self.records = records
        self.store = records.store
        self.engine = engine
        self.system_id = system_id
        self.index = export_index.ExportIndex(records, self._lun)
        self.exports = self.index.entries

    def _lun(self, obj, read_only):
        return LUN(self.records, self.engine, obj, self.system_id, read_only)

    def _host_of(self, initiator):
        port = self.records.by(models.HostIqn, 'iqn', initiator)
        return port.host if port else None

    def luns_for(self, initiator):
        host_ref = self._host_of(initiator)
        if host_ref is None:
            return {}
        luns = {}
        with self.store.lock:
            for mapping in self.records.children(models.Mapping, 'host',
                                                 host_ref):
                obj = self.records.resolve(mapping.volume)
                if obj is not None:
                    luns[mapping.lun] = self._lun(
                        obj, export_index.read_only(self.records, obj))
        return luns

    def chap_for(self, initiator):
        host_ref = self._host_of(initiator)
        if host_ref is None:
            return None
        host = self.records.resolve(host_ref)
        ref = host.host_auth_profile if host else None
        profile = self.records.resolve(ref) if ref else None
        if not profile:
            return None
        return profile.username, profile.secret
