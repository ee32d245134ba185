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

"""What an iSCSI initiator sees: devices, and the exporters that map them.

The target asks one object, ``Exports``, four things: the array's
``iqn``, a ``generation()`` that changes whenever any object changes, the
devices an initiator sees (``resolve``) and the CHAP secret it must
present (``chap``). ``Exports`` asks each dialect's exporter in turn; an
exporter answers only for initiators its dialect knows (a K2 host's
registered ports, a LINSTOR node's own name), so the order matters only
if both claim one name, and the first listed wins.

An exporter whose dialect's writes keep an index of what each initiator
sees offers it as ``exports`` ({initiator: Export}); ``Exports`` reads it
in place of asking, and a login then reads nothing from the store.
It reads an index with the store's lock held, so that no answer shows
a write before it commits.
"""

import collections
import contextlib
import logging
import time

from reference_array.core import engine as engine_mod
from reference_array.target import scsi

LOG = logging.getLogger(__name__)
_refusals = {'logged': -60.0, 'count': 0}


@contextlib.contextmanager
def _space():
    """A full filesystem is a SCSI error of the command, as on a thin
    provisioned LUN whose pool ran out (SBC-3 4.7.3.7).
    """
    try:
        yield
    except engine_mod.NoSpace as e:
        # One line when the disk fills, then one a minute at most.
        now = time.monotonic()
        if now - _refusals['logged'] >= 60:
            LOG.warning('writes refused for want of space (%d since the '
                        'last report): %s', _refusals['count'] + 1, e)
            _refusals.update(logged=now, count=0)
        else:
            _refusals['count'] += 1
        raise scsi.SCSIError(*scsi.SPACE_ALLOCATION_FAILED)


class Device(object):
    """What the SCSI layer reads and writes: one layer of the engine.

    Subclasses say which layer is current (it changes with snapshots and
    restores) and what to count. ``_layer`` raises the SCSI error for an
    unsupported LUN when the object behind the device is gone.
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

    @staticmethod
    def gone():
        """The error a device raises once its object is deleted."""
        return scsi.SCSIError(*scsi.LUN_NOT_SUPPORTED)

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
        with self.store.lock, _space():
            self.engine.write(self._current(), offset, data)
        self._count('write', len(data), started)

    def unmap(self, offset, length):
        """In steps, the lock released between them: other volumes' I/O
        waits for one step, never for the whole range.
        """
        pos, end = offset, offset + length
        while pos < end:
            with self.store.lock, _space():
                pos = self.engine.unmap_step(self._current(), pos, end)
            if pos < end:
                # Let waiting I/O take the lock (it is not fair).
                time.sleep(engine_mod.PAUSE)

    def flush(self):
        with _space():
            self.engine.flush()

    def allocated_run(self, offset, limit):
        with self.store.lock:
            return self.engine.allocated_run(self._current(), offset, limit)

    # The volume a connection's native data path counts I/O for (-1:
    # none).
    counter_id = -1

    def native_view(self):
        """(layer chain, blocks, read_only, counter id) of the device,
        for a connection's native data path (store lock held).
        """
        return (self.engine.chain(self._current()), self.blocks,
                self.read_only, self.counter_id)


def blocks_of(size_kib):
    """Device size in SCSI blocks of an object ``size_kib`` large."""
    return size_kib * 1024 // scsi.BLOCK


Export = collections.namedtuple('Export', 'chap luns')
Export.__doc__ = """What one initiator sees: ``chap`` (user, secret) or None,
``luns`` {lun number: Device}, never changed once given out.
"""


class Exporter(object):
    """One dialect's view of who sees what."""

    # {initiator: Export}, kept current by the dialect's writes, or None:
    # then the exporter is asked (``luns_for``, ``chap_for``).
    exports = None

    def luns_for(self, initiator):
        """{lun number: Device} the initiator sees ({}: none or unknown)."""
        raise NotImplementedError()

    def chap_for(self, initiator):
        """(user, secret) the initiator must present, or None."""
        raise NotImplementedError()


class Exports(object):
    """The target's one view over every dialect's exporter."""

    def __init__(self, store, iqn, exporters, engine=None):
        self.store = store
        self.iqn = iqn
        self.exporters = tuple(exporters)
        # The engine behind every device: a connection runs its data
        # path natively when the engine offers one (``data_path``).
        self.engine = engine

    def generation(self):
        return self.store.generation

    def resolve(self, initiator):
        """{lun number: Device} of the first exporter that has any."""
        for exporter in self.exporters:
            if exporter.exports is None:
                luns = exporter.luns_for(initiator)
            else:
                with self.store.lock:
                    export = exporter.exports.get(initiator)
                luns = export.luns if export else None
            if luns:
                return luns
        return {}

    def chap(self, initiator):
        """The CHAP secret of the first exporter that asks for one."""
        for exporter in self.exporters:
            if exporter.exports is None:
                secret = exporter.chap_for(initiator)
            else:
                with self.store.lock:
                    export = exporter.exports.get(initiator)
                secret = export.chap if export else None
            if secret is not None:
                return secret
        return None
