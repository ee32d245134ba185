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

"""A command set: an opcode table and the pages a device type shows.

Handlers take one ``Command`` and return its Data-In bytes, or raise
``SCSIError``. A new command is one entry of a table (``spc.OPS`` for
every device type, ``sbc.OPS`` for block devices).
"""

import logging
import operator

from reference_array.target.scsi import sense as sense_mod

LOG = logging.getLogger(__name__)
SCSIError = sense_mod.SCSIError


class Op(object):
    """One opcode: its handler, how many bytes of data the initiator
    sends with it (``data_out(cdb)``; None: none), whether it needs a
    LUN that exists (INQUIRY and REPORT LUNS do not), and what can be
    checked from the CDB alone (``check(lun, cdb)`` raises SCSIError),
    before any of its data is received.
    """

    __slots__ = ('handler', 'data_out', 'needs_lun', 'check')

    def __init__(self, handler, data_out=None, needs_lun=True, check=None):
        self.handler, self.data_out = handler, data_out
        self.needs_lun, self.check = needs_lun, check


class Command(tuple):
    """One command as its handler sees it.

    A tuple underneath: one is built per command, and building a tuple
    costs a fraction of running an ``__init__``.
    """

    __slots__ = ()

    command_set = property(operator.itemgetter(0))
    lun = property(operator.itemgetter(1))
    cdb = property(operator.itemgetter(2))
    data_out = property(operator.itemgetter(3))
    report_luns = property(operator.itemgetter(4))
    partial = property(operator.itemgetter(5))


class CommandSet(object):
    """What a device type understands (tgt's device type template)."""

    def __init__(self, ops, vpd_pages, mode_pages):
        self.ops = ops
        self.vpd_pages = vpd_pages          # page code -> page(command)
        self.mode_pages = mode_pages        # page code -> bytes

    def data_out_length(self, cdb):
        """Bytes of data the CDB says the initiator sends (SPDTL)."""
        op = self.ops.get(cdb[0])
        if op is None or op.data_out is None:
            return 0
        return op.data_out(cdb)

    def _op(self, lun, cdb):
        """The command's table entry, once what the CDB says holds."""
        op = self.ops.get(cdb[0])
        if lun is None and (op is None or op.needs_lun):
            raise SCSIError(*sense_mod.LUN_NOT_SUPPORTED)
        if op is None:
            raise SCSIError(*sense_mod.INVALID_OPCODE)
        if op.check is not None:
            op.check(lun, cdb)
        return op

    def check(self, lun, cdb):
        """Sense data if the command fails on its CDB alone (no LUN, out
        of range, too long, write protected), else None: a transport
        checks before it receives or reserves room for any data.
        """
        try:
            self._op(lun, cdb)
        except SCSIError as e:
            return sense_mod.sense(e.key, e.asc, e.ascq)
        return None

    def execute(self, lun, cdb, data_out=b'', report_luns=(),
                partial=False):
        """Run one command: (status, Data-In bytes, sense data or None).

        Never raises for SCSI-level errors. ``partial``: the initiator
        sent less data than the CDB names (its expected length was
        shorter); a write stores just what was sent.
        """
        try:
            op = self._op(lun, cdb)
            data = op.handler(Command((self, lun, cdb, data_out,
                                       report_luns, partial)))
            return sense_mod.GOOD, data, None
        except SCSIError as e:
            return (sense_mod.CHECK_CONDITION, b'',
                    sense_mod.sense(e.key, e.asc, e.ascq))
        except Exception as e:
            # The command fails, the session goes on: an initiator sees
            # an error of this command, never a dropped connection.
            LOG.error('SCSI command 0x%02x failed: %s: %s', cdb[0],
                      type(e).__name__, e)
            return (sense_mod.CHECK_CONDITION, b'',
                    sense_mod.sense(*sense_mod.INTERNAL_FAILURE))
