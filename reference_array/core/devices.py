"""What each iSCSI initiator sees: the K2 mappings of its host as LUNs."""

import hashlib
import time

from reference_array import scsi

KIB = 1024


class Device(object):
    """What the SCSI layer reads and writes: one layer of the engine.

    Subclasses say which layer is current (it changes with snapshots and
    restores) and what to count.
    """

    def __init__(self, store, engine, blocks, serial, naa, read_only=False):
        self.store = store
        self.engine = engine
        self.blocks = blocks
        self.serial = serial
        self.naa = naa
        self.read_only = read_only
        self.chunk_blocks = engine.chunk // scsi.BLOCK
        self._known = (None, None)

    def _layer(self):
        raise NotImplementedError()

    def _current(self):
        """The layer I/O goes to; looked up again after any object change
        (every change of the objects bumps the store's generation).
        Called with the store's lock held.
        """
        generation = self.store.generation
        if self._known[0] != generation:
            self._known = (generation, self._layer())
        return self._known[1]

    def _count(self, direction, nbytes, started):
        pass

    def read(self, offset, length):
        started = time.monotonic()
        with self.store.lock:
            data = self.engine.read(self._current(), offset, length)
        self._count('read', length, started)
        return data

    def write(self, offset, data):
        started = time.monotonic()
        with self.store.lock:
            self.engine.write(self._current(), offset, data)
        self._count('write', len(data), started)

    def unmap(self, offset, length):
        with self.store.lock:
            self.engine.unmap(self._current(), offset, length)

    def flush(self):
        self.engine.flush()

    def allocated_run(self, offset, limit):
        with self.store.lock:
            return self.engine.allocated_run(self._current(), offset, limit)


class LUN(Device):
    """A mapped volume or volsnap; I/O always finds its current layer."""

    def __init__(self, exports, resource, obj, system_id):
        self.resource = resource
        self.obj_id = obj['id']
        size_kib = obj['size'] if resource == 'volumes' else obj['_size']
        serial = obj['scsi_sn']
        digest = hashlib.sha256(('%s/%s' % (system_id, serial)).encode())
        # NAA 6 (registered extended) designator, stable per object.
        naa = bytes([0x60 | (digest.digest()[0] & 0x0f)]) + \
            digest.digest()[1:16]
        read_only = bool(obj.get('read_only')) or (
            resource == 'volsnaps' and not exports.is_view(obj))
        super().__init__(exports.store, exports.engine,
                         size_kib * KIB // scsi.BLOCK, serial, naa, read_only)

    def _layer(self):
        obj = self.store.get(self.resource, self.obj_id)
        if obj is None:
            raise scsi.SCSIError(*scsi.LUN_NOT_SUPPORTED)
        return obj['_layer']

    def _count(self, direction, nbytes, started):
        if self.resource == 'volumes':
            self.engine.count_volume(self.obj_id, direction, nbytes,
                                     time.monotonic() - started)


class Exports(object):

    def __init__(self, store, engine, iqn, system_id):
        self.store = store
        self.engine = engine
        self.iqn = iqn
        self.system_id = system_id
        # The LINSTOR dialect's model: its nodes' emulated devices.
        self.linstor = None

    def generation(self):
        return self.store.generation

    def is_view(self, volsnap):
        snap_id = int(volsnap['snapshot']['ref'].rsplit('/', 1)[1])
        snap = self.store.get('snapshots', snap_id)
        return bool(snap and snap.get('is_exposable'))

    def _host_of(self, initiator):
        for port in self.store.all('host_iqns'):
            if port['iqn'] == initiator:
                return port['host']['ref']
        return None

    def resolve(self, initiator):
        """{lun number: LUN} mapped to the initiator's host."""
        if self.linstor is not None:
            luns = self.linstor.luns(initiator)
            if luns:
                return luns
        host_ref = self._host_of(initiator)
        if host_ref is None:
            return {}
        luns = {}
        with self.store.lock:
            for mapping in self.store.all('mappings'):
                if mapping['host']['ref'] != host_ref:
                    continue
                resource, obj_id = mapping['volume']['ref'][1:].rsplit('/', 1)
                obj = self.store.get(resource, int(obj_id))
                if obj is not None:
                    luns[mapping['lun']] = LUN(self, resource, obj,
                                               self.system_id)
        return luns

    def chap(self, initiator):
        """(user, secret) the initiator's host must present, or None."""
        host_ref = self._host_of(initiator)
        if host_ref is None:
            return None
        host = self.store.get('hosts', int(host_ref.rsplit('/', 1)[1]))
        ref = (host or {}).get('host_auth_profile')
        if not ref:
            return None
        profile = self.store.get('host_auth_profiles',
                                 int(ref['ref'].rsplit('/', 1)[1]))
        if not profile:
            return None
        return profile['username'], profile['_secret']
