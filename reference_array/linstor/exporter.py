"""The emulated DRBD devices of each LINSTOR node, as iSCSI LUNs.

A node's own initiator name (``node_initiator``) sees one LUN per volume
of every resource placed on the node; LUN = DRBD minor - 1000 (minors
start at 1000, and LUNs below 256 use the simplest SCSI addressing).
"""

import uuid

from reference_array.core import devices

MINOR_BASE = 1000


def node_initiator(node_name):
    return 'iqn.2026-11.io.cinder-flash:linstor.%s' % node_name.lower()


class LinstorDevice(devices.Device):
    """The emulated DRBD device of a resource's volume."""

    def __init__(self, store, engine, definitions, system_id, rd_name,
                 number, size_kib, minor):
        self.definitions = definitions
        self.rd_name = rd_name
        self.number = number
        naa = bytes([0x60 | (minor >> 8 & 0x0f)]) + uuid.uuid5(
            uuid.NAMESPACE_OID, '%s/%s/%d' % (system_id, rd_name,
                                              number)).bytes[:15]
        super().__init__(store, engine, devices.blocks_of(size_kib),
                         'LS%08d' % minor, naa)

    def _layer(self):
        rd = self.definitions.find(self.rd_name)
        for vd in (rd or {}).get('vds', []):
            if vd['volume_number'] == self.number:
                return vd['_layer']
        raise self.gone()


class LinstorExporter(devices.Exporter):

    def __init__(self, store, engine, definitions, system_id, nodes):
        """``definitions``: finds resource definitions by name and by
        node; ``nodes``: the names of the nodes.
        """
        self.store = store
        self.engine = engine
        self.definitions = definitions
        self.system_id = system_id
        self.nodes = nodes

    def _node_of(self, initiator):
        for name in self.nodes():
            if node_initiator(name) == initiator:
                return name
        return None

    def luns_for(self, initiator):
        node = self._node_of(initiator)
        if node is None:
            return {}
        luns = {}
        for rd in self.definitions.on_node(node):
            for vd in rd['vds']:
                luns[vd['minor'] - MINOR_BASE] = LinstorDevice(
                    self.store, self.engine, self.definitions,
                    self.system_id, rd['name'], vd['volume_number'],
                    vd['size_kib'], vd['minor'])
        return luns

    def chap_for(self, initiator):
        return None
