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

"""The emulated DRBD devices of each LINSTOR node, as iSCSI LUNs.

A node's own initiator name (``node_initiator``) sees one LUN per volume
of every resource placed on the node; LUN = DRBD minor - 1000 (minors
start at 1000, and LUNs below 256 use the simplest SCSI addressing).

A real DRBD device is a block device of its node, open to root there and
to nobody else. Here it is a LUN on a port any local process reaches, so
the node's initiator must log in with CHAP: user = the initiator name,
secret derived from a key in the array's private configuration
(``array.json``, 0600 in a 0700 directory). Whoever may read that file
plays root on every node; nobody else gets a node's LUNs.
"""

import base64
import hashlib
import hmac
import json
import os
import secrets
import uuid

from reference_array.core import devices
from reference_array.linstor import records as records_mod


INITIATOR_PREFIX = 'iqn.2026-11.io.cinder-flash:linstor.'
# LUNs a target addresses (SAM's flat space).
MAX_LUNS = 16384


# The key of array.json that node secrets derive from.
CHAP_KEY = 'linstor_chap_key'
CONFIG = 'array.json'


def node_initiator(node_name):
    return INITIATOR_PREFIX + node_name.lower()


def new_chap_key():
    return secrets.token_hex(32)


def node_chap(key, node_name):
    """(user, secret) the initiator of ``node_name`` logs in with."""
    user = node_initiator(node_name)
    digest = hmac.new(key.encode(), user.encode(), hashlib.sha256).digest()
    # 16 bytes (128 bits), as 22 URL-safe characters: no shell or URL
    # quoting needed by a client.
    return user, base64.urlsafe_b64encode(digest[:16]).decode().rstrip('=')


def node_chap_from(data_dir, node_name):
    """A node's (user, secret), for whoever may read the data directory."""
    with open(os.path.join(data_dir, CONFIG)) as f:
        return node_chap(json.load(f)[CHAP_KEY], node_name)


class LinstorDevice(devices.Device):
    """The emulated DRBD device of a resource's volume."""

    def __init__(self, store, engine, records, system_id, rd_name,
                 number, size_kib, minor):
        self.records = records
        self.rd_name = rd_name
        self.number = number
        naa = bytes([0x60 | (minor >> 8 & 0x0f)]) + uuid.uuid5(
            uuid.NAMESPACE_OID, '%s/%s/%d' % (system_id, rd_name,
                                              number)).bytes[:15]
        super().__init__(store, engine, devices.blocks_of(size_kib),
                         'LS%08d' % minor, naa)

    def _layer(self):
        rd = self.records.find_definition(self.rd_name)
        vd = None if rd is None else self.records.typed(
            records_mod.RDS, rd).volume(self.number)
        if vd is None:
            raise self.gone()
        return vd.layer


class LinstorExporter(devices.Exporter):

    def __init__(self, store, engine, records, system_id, chap_key):
        """``records``: the LINSTOR records.Records of this array;
        ``chap_key``: what node CHAP secrets derive from.
        """
        self.store = store
        self.engine = engine
        self.records = records
        self.system_id = system_id
        self._chap_key = chap_key

    def _node_of(self, initiator):
        """The node whose own initiator this is, or None."""
        if not isinstance(initiator, str) or \
                not initiator.startswith(INITIATOR_PREFIX):
            return None
        node = self.records.find(records_mod.NODES,
                                 initiator[len(INITIATOR_PREFIX):])
        if node is None or node_initiator(node['name']) != initiator:
            return None
        return node['name']

    def luns_for(self, initiator):
        node = self._node_of(initiator)
        if node is None:
            return {}
        luns = {}
        for rd in self.records.definitions_on(node):
            rd = self.records.typed(records_mod.RDS, rd)
            for vd in rd.vds:
                lun = vd.minor - records_mod.MINOR_BASE
                # A minor a client chose may fall outside the LUN range.
                if not 0 <= lun < MAX_LUNS:
                    continue
                luns[lun] = LinstorDevice(
                    self.store, self.engine, self.records,
                    self.system_id, rd.name, vd.volume_number,
                    vd.usable(), vd.minor)
        return luns

    def chap_for(self, initiator):
        node = self._node_of(initiator)
        if node is None:
            return None
        return node_chap(self._chap_key, node)
