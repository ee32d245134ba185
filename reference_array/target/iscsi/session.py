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

"""One iSCSI session (one connection): login, then the command loop.

Commands are handled one at a time, in CmdSN order. A write's data comes
as immediate data and then as solicited Data-Out (InitialR2T=Yes, one
R2T outstanding); a read's data goes out as Data-In PDUs, the last one
carrying the status.
"""

import collections
import logging
import socket

from reference_array.target.iscsi import errors
from reference_array.target.iscsi import fastpath
from reference_array.target.iscsi import limits as limits_mod
from reference_array.target.iscsi import login as login_mod
from reference_array.target.iscsi import params
from reference_array.target.iscsi import pdu as pdus
from reference_array.target import scsi

LOG = logging.getLogger(__name__)

Op = pdus.Opcode
CMD_WINDOW = 32
# PDUs (and their bytes) held back while a write's data is solicited:
# a window of commands with immediate data, and as many pings.
MAX_PENDING = 2 * CMD_WINDOW
MAX_PENDING_BYTES = CMD_WINDOW * params.FIRST_BURST
# Opcodes that carry a CmdSN the session must see in order.
_SEQUENCED = (Op.SCSI_COMMAND, Op.TEXT, Op.TASK_MANAGEMENT)


class Session(object):
    """State of one connection (one connection per session).

    ``conn`` is the transport: it reads and sends PDUs (``read_pdu``,
    ``read_header``, ``read_data``, ``recv_into``, ``skip_padding``,
    ``send``, ``flush``); the session never touches a socket.
    """

    def __init__(self, target, conn, peer):
        self.target = target
        self.limits = getattr(target, 'limits', None) or limits_mod.Limits()
        self.peer = peer
        self.conn = conn
        self.send = self.conn.send
        self.negotiated = params.Negotiated()
        self.login_state = login_mod.Login(
            target.exports if target is not None else None, self.negotiated)
        self.stat_sn = 0
        self.exp_cmd_sn = 0
        self.full_feature = False
        self.tsih = 0
        # Known once the login completes.
        self.initiator = None
        self.discovery = False
        self._luns = None
        self._generation = None
        # Commands that arrived while a write's data was being solicited:
        # initiators pipeline up to the command window.
        self._pending = collections.deque()
        self._pending_bytes = 0
        # READ, WRITE and GET LBA STATUS in native code, once logged in.
        self._fast = None
        self._handlers = {
            Op.SCSI_COMMAND: self.scsi_command,
            Op.NOP_OUT: self.nop,
            Op.TEXT: self.text,
            Op.TASK_MANAGEMENT: self.task_management,
            Op.LOGOUT: self.logout,
            # Unsolicited data: we negotiate InitialR2T=Yes.
            Op.DATA_OUT: lambda pdu: self.reject(pdu, pdus.PROTOCOL_ERROR),
        }

    def _sequence(self, advance=True):
        """(StatSN, ExpCmdSN, MaxCmdSN) of the next reply."""
        numbers = (self.stat_sn, self.exp_cmd_sn,
                   (self.exp_cmd_sn + CMD_WINDOW - 1) & 0xffffffff)
        if advance:
            self.stat_sn = (self.stat_sn + 1) & 0xffffffff
        return numbers

    # -- main loop -----------------------------------------------------------
    def run(self):
        # The whole login must end in time, however slowly bytes come.
        self.conn.set_deadline(self.limits.login_deadline())
        try:
            while True:
                pdu = self._next()
                if not self.full_feature:
                    if pdu.opcode != Op.LOGIN:
                        raise errors.ProtocolError(
                            'opcode 0x%02x before login' % pdu.opcode)
                    self.login(pdu)
                    continue
                if not self.handle(pdu):
                    return
        except (ConnectionError, socket.timeout, OSError) as e:
            LOG.debug('iSCSI %s: connection ended: %s', self.peer, e)
        except errors.ProtocolError as e:
            LOG.warning('iSCSI %s: protocol error: %s', self.peer, e)
        finally:
            # The last replies (a logout, a refused login) still go out.
            try:
                self.conn.flush()
            except OSError:
                pass
            if self._fast:
                self._fast.close()

    def _next(self):
        if self._pending:
            pdu = self._pending.popleft()
            self._pending_bytes -= len(pdu.data)
            return pdu
        if self._fast:
            return self._fast.read_pdu()
        return self.conn.read_pdu()

    def _hold(self, pdu):
        """Keep a PDU that came while a write's data was solicited."""
        self._pending.append(pdu)
        self._pending_bytes += len(pdu.data)
        if (len(self._pending) > MAX_PENDING or
                self._pending_bytes > MAX_PENDING_BYTES):
            raise errors.ProtocolError(
                '%d PDUs (%d bytes) sent while write data was solicited'
                % (len(self._pending), self._pending_bytes))

    def handle(self, pdu):
        """Handle one full-feature PDU; False ends the session."""
        op = pdu.opcode
        if op in _SEQUENCED and not pdu.immediate:
            # Commands are handled in order, one at a time, so the only
            # acceptable CmdSN is ExpCmdSN; others are dropped (RFC 7143
            # 3.2.2.1).
            cmd_sn = pdu.cmd_sn
            if cmd_sn != self.exp_cmd_sn:
                LOG.debug('iSCSI %s: CmdSN %d outside the window (expected '
                          '%d)', self.peer, cmd_sn, self.exp_cmd_sn)
                return True
            self.exp_cmd_sn = (cmd_sn + 1) & 0xffffffff
        handler = self._handlers.get(op)
        if handler is None:
            self.reject(pdu, pdus.COMMAND_NOT_SUPPORTED)
            return True
        return handler(pdu) is not False

    def _track(self, pdu):
        if not pdu.immediate:
            self.exp_cmd_sn = (pdu.cmd_sn + 1) & 0xffffffff

    def reject(self, pdu, reason):
        self.send(pdus.reject(self._sequence(), reason, pdu.bhs))

    def nop(self, pdu):
        if pdu.itt != pdus.NO_TAG:
            self._track(pdu)
            self.send(pdus.nop_in(pdu.itt, self._sequence(), pdu.data))

    def task_management(self, pdu):
        self.send(pdus.task_management_response(pdu.itt, self._sequence()))

    def logout(self, pdu):
        self._track(pdu)
        self.send(pdus.logout_response(pdu.itt, self._sequence()))
        return False

    def text(self, pdu):
        pairs = []
        for key, _value in pdus.parse_text(pdu.data):
            if key == 'SendTargets':
                pairs.append(('TargetName', self.target.exports.iqn))
                pairs.append(('TargetAddress', '%s:%d,1' % (
                    self.target.host, self.target.port)))
            else:
                pairs.append((key, 'NotUnderstood'))
        self.send(pdus.text_response(pdu.itt, self._sequence(),
                                     pdus.build_text(pairs)))

    # -- login ---------------------------------------------------------------
    def login(self, pdu):
        csg, nsg = pdu.csg, pdu.nsg
        try:
            pairs, transit = self.login_state.step(pdu)
        except errors.LoginFailed as e:
            LOG.info('iSCSI login from %s (%s) refused: %s', self.peer,
                     self.login_state.initiator, e)
            self._login_response(pdu, False, csg, 0, [],
                                 e.status_class, e.detail)
            raise ConnectionError('login refused')
        done = transit and nsg == pdus.FULL_FEATURE
        if done:
            self.tsih = self.target.next_tsih()
        self._login_response(pdu, transit, csg, nsg, pairs)
        if done:
            self.full_feature = True
            self.conn.set_deadline(None)
            self.initiator = self.login_state.initiator
            self.discovery = self.login_state.discovery
            self._fast = fastpath.FastPath.offer(self)
            LOG.info('iSCSI %s session from %s (%s)',
                     'discovery' if self.discovery else 'normal',
                     self.peer, self.initiator)

    def _login_response(self, pdu, transit, csg, nsg, pairs,
                        status_class=0, status_detail=0):
        self.exp_cmd_sn = pdu.cmd_sn
        self.send(pdus.login_response(
            pdu.isid, self.tsih if transit else 0, pdu.itt,
            self._sequence(), transit, csg, nsg, status_class,
            status_detail, pdus.build_text(pairs)))

    # -- SCSI ----------------------------------------------------------------
    def luns(self):
        generation = self.target.exports.generation()
        if generation != self._generation:
            self._luns = self.target.exports.resolve(self.initiator)
            self._generation = generation
        return self._luns

    def scsi_command(self, pdu):
        """One SCSI command: data direction and lengths come from the CDB;
        the initiator's expected length (EDTL) only bounds the transfer,
        and any difference is reported as a residual (RFC 7143 11.4.5).
        """
        if self.discovery:
            return self.reject(pdu, pdus.COMMAND_NOT_SUPPORTED)
        luns = self.luns()
        lun = luns.get(scsi.decode_lun(pdu.lun))
        edtl = pdu.expected_length
        cdb = pdu.cdb
        needed = scsi.data_out_length(cdb)
        data_out = pdu.data
        # A write whose data the native data path received (within the
        # negotiated bursts, into its own bounded buffer).
        collected = getattr(pdu, 'collected', False)
        if data_out and not collected and (
                not self.negotiated.immediate_data or len(
                data_out) > min(self.negotiated.first_burst, edtl)):
            return self.reject(pdu, pdus.PROTOCOL_ERROR)
        write = pdu.flags & pdus.WRITE and needed
        # Nothing is solicited or reserved for a command that fails on
        # its CDB: a LUN this initiator does not see, a range or length
        # out of bounds, a write to a read-only LUN.
        sense_data = (scsi.check(lun, cdb) if write or lun is None
                      else None)
        if sense_data is not None:
            return self._response(pdu, scsi.CHECK_CONDITION, sense_data)
        if collected:
            return self._execute(pdu, lun, luns, cdb, edtl, needed,
                                 data_out, 0)
        size = (min(needed, edtl) if write else
                min(edtl, scsi.MAX_TRANSFER) if pdu.flags & pdus.READ
                else 0)
        if not self.limits.buffers.take(size):
            LOG.warning('iSCSI %s: busy, %d bytes of command buffers held',
                        self.peer, self.limits.buffers.held)
            return self._response(pdu, scsi.BUSY, None)
        try:
            return self._execute(pdu, lun, luns, cdb, edtl, needed,
                                 data_out, size if write else 0)
        finally:
            self.limits.buffers.give(size)

    def _execute(self, pdu, lun, luns, cdb, edtl, needed, data_out,
                 solicit):
        short = needed and edtl < needed
        if solicit:
            # Never solicit more than the initiator expects to send.
            data_out = self._collect(pdu, data_out, solicit)
        if len(data_out) != needed:
            data_out = data_out[:needed]
        status, data_in, sense_data = scsi.execute(
            lun, cdb, data_out, report_luns=luns.keys(),
            partial=bool(short))
        if needed:
            # The initiator expected to send less (overflow: only that
            # much was written) or more (underflow) than the CDB names.
            return self._response(pdu, status, sense_data,
                                  overflow=needed - edtl if short else 0,
                                  underflow=edtl - needed)
        if status != scsi.GOOD:
            return self._response(pdu, status, sense_data)
        if pdu.flags & pdus.READ and edtl:
            return self._data_in(pdu, data_in, edtl)
        length = len(data_in)
        self._response(pdu, status, None,
                       overflow=max(length - edtl, 0),
                       underflow=max(edtl - length, 0)
                       if pdu.flags & pdus.READ else 0)

    def _buffer(self, size):
        """The buffer a command's solicited data is received into; its
        size is checked and reserved from ``limits.buffers`` before.
        """
        return bytearray(size)

    def _collect(self, pdu, data, total):
        """Solicit (R2T) what is missing of ``total`` bytes of data."""
        got = min(len(data), total)
        collected = self._buffer(total)
        collected[:got] = data[:got]
        r2t_sn = 0
        with memoryview(collected) as view:
            while got < total:
                want = min(self.negotiated.max_burst, total - got)
                # The R2TSN serves as the transfer tag.
                self.send(pdus.r2t(pdu.lun, pdu.itt, r2t_sn,
                                   self._sequence(advance=False), r2t_sn,
                                   got, want))
                got = self._receive_burst(pdu, view, got, got + want)
                r2t_sn += 1
        return collected

    def _receive_burst(self, pdu, view, got, end):
        """Receive the Data-Out PDUs of one R2T into ``view[got:end]``."""
        data_sn = 0
        while got < end:
            out, length = self.conn.read_header()
            if out.opcode != Op.DATA_OUT:
                # With InitialR2T=Yes only the solicited command sends
                # Data-Out; anything else is handled after.
                out.data = self.conn.read_data(length)
                self._hold(out)
                continue
            if out.itt != pdu.itt:
                raise errors.ProtocolError(
                    'Data-Out for task 0x%08x while task 0x%08x is '
                    'solicited' % (out.itt, pdu.itt))
            if out.buffer_offset != got or out.data_sn != data_sn:
                raise errors.ProtocolError(
                    'Data-Out DataSN %d at offset %d, expected %d at %d' % (
                        out.data_sn, out.buffer_offset, data_sn, got))
            if length > end - got:
                raise errors.ProtocolError(
                    'Data-Out of %d bytes where %d were solicited'
                    % (length, end - got))
            self.conn.recv_into(view[got:got + length])
            self.conn.skip_padding(length)
            got += length
            data_sn += 1
        return got

    def _data_in(self, pdu, data, edtl):
        total = len(data)
        data = data[:edtl]
        segment = self.negotiated.max_send_segment
        burst = self.negotiated.max_burst
        offset, data_sn = 0, 0
        while True:
            piece = data[offset:offset + segment]
            end = offset + len(piece)
            last = end >= len(data)
            # F ends a sequence (at most MaxBurstLength); S carries status.
            flags = (pdus.FINAL | pdus.STATUS if last else
                     pdus.FINAL if end % burst == 0 else 0)
            residual = 0
            if last and total > edtl:
                flags |= pdus.OVERFLOW
                residual = total - edtl
            elif last and total < edtl:
                flags |= pdus.UNDERFLOW
                residual = edtl - total
            self.send(pdus.data_in(pdu.lun, pdu.itt,
                                   self._sequence(advance=last), data_sn,
                                   offset, flags, residual=residual,
                                   data=piece))
            offset, data_sn = end, data_sn + 1
            if last:
                return

    def _response(self, pdu, status, sense_data, overflow=0, underflow=0):
        data = b''
        if sense_data:
            data = len(sense_data).to_bytes(2, 'big') + sense_data
        self.send(pdus.scsi_response(pdu.itt, self._sequence(), status,
                                     overflow, underflow, data))
