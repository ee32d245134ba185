"""The array's iSCSI target (RFC 7143), one target, LUN masking per host.

The target serves a single IQN, as a K2 does. What an initiator sees is
decided per initiator by ``exports``: the LUNs mapped to its host, and
whether its host requires CHAP. Every connection runs in its own thread
and handles its commands in order.

Negotiated: no digests, one connection per session, ImmediateData,
InitialR2T=Yes, one outstanding R2T, data in order, ErrorRecoveryLevel 0.
"""

import collections
import hashlib
import logging
import os
import socket
import socketserver
import struct
import threading

from reference_array.target import scsi

LOG = logging.getLogger(__name__)

BHS = 48
NO_TAG = 0xffffffff
OUR_MAX_RECV = 262144
OUR_MAX_BURST = 262144
OUR_FIRST_BURST = 65536
CMD_WINDOW = 32
IDLE_TIMEOUT = 300.0
# One receive takes whatever has arrived, up to a full data segment.
READ_SIZE = OUR_MAX_RECV + BHS

OP_NOP_OUT, OP_SCSI_CMD, OP_TMF, OP_LOGIN, OP_TEXT, OP_DATA_OUT = (
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05)
OP_LOGOUT = 0x06
OP_NOP_IN, OP_SCSI_RSP, OP_TMF_RSP, OP_LOGIN_RSP, OP_TEXT_RSP = (
    0x20, 0x21, 0x22, 0x23, 0x24)
OP_DATA_IN, OP_LOGOUT_RSP, OP_R2T, OP_REJECT = 0x25, 0x26, 0x31, 0x3f


class ProtocolError(Exception):
    pass


class LoginFailed(Exception):

    def __init__(self, status_class, detail, why):
        super().__init__(why)
        self.status_class, self.detail = status_class, detail


def _pad(n):
    return (4 - n % 4) % 4


def parse_text(data):
    pairs = []
    for item in data.split(b'\0'):
        if item:
            key, _sep, value = item.decode('utf-8', 'replace').partition('=')
            pairs.append((key, value))
    return pairs


def build_text(pairs):
    return b''.join(('%s=%s' % kv).encode() + b'\0' for kv in pairs)


class PDU(object):

    def __init__(self, bhs, data=b''):
        self.bhs = bytearray(bhs)
        self.data = data

    @property
    def opcode(self):
        return self.bhs[0] & 0x3f

    @property
    def immediate(self):
        return bool(self.bhs[0] & 0x40)

    @property
    def flags(self):
        return self.bhs[1]

    def u32(self, offset):
        return struct.unpack_from('>I', self.bhs, offset)[0]

    @property
    def itt(self):
        return self.u32(16)


class Session(object):
    """State of one connection (one connection per session)."""

    def __init__(self, target, sock, peer):
        self.target = target
        self.sock = sock
        self.peer = peer
        self.initiator = None
        self.discovery = False
        self.stat_sn = 0
        self.exp_cmd_sn = 0
        self.max_recv = 8192            # initiator's, until it says
        self.max_burst = OUR_MAX_BURST
        self.first_burst = OUR_FIRST_BURST
        self.immediate_data = True
        self.full_feature = False
        self.tsih = 0
        self._chap = None
        self._luns = None
        self._generation = None
        # Commands that arrived while a write's data was being solicited:
        # initiators pipeline up to the command window.
        self._pending = collections.deque()
        self._in = bytearray(READ_SIZE)
        self._start = self._end = 0
        self._out = []
        self._out_bytes = 0

    # -- wire ----------------------------------------------------------------
    # PDUs are cut from large reads, and replies wait in ``_out`` until no
    # complete PDU is left to handle: a queue of pipelined commands then
    # costs one receive and one send, not one of each per command.
    def _recv_exact(self, n):
        if self._end - self._start < n:
            self._fill(n)
        start = self._start
        self._start = start + n
        return self._in[start:start + n]

    def _fill(self, n):
        """Buffer at least ``n`` unread bytes.

        Replies go out first: the initiator may wait for them before it
        sends anything more.
        """
        self.flush()
        buf, start, end = self._in, self._start, self._end
        if start + n > len(buf):
            unread = buf[start:end]
            if n > len(buf):
                buf = self._in = bytearray(n + READ_SIZE)
            buf[:len(unread)] = unread
            start, end = 0, len(unread)
        with memoryview(buf) as view:
            while end - start < n:
                count = self.sock.recv_into(view[end:])
                if not count:
                    raise ConnectionError('peer closed the connection')
                end += count
        self._start, self._end = start, end

    def _recv_into(self, view):
        """Fill ``view``: what is buffered, then straight from the socket
        (a write's data is copied once, not once per layer of framing).
        """
        n = len(view)
        have = min(self._end - self._start, n)
        with memoryview(self._in) as buf:
            view[:have] = buf[self._start:self._start + have]
        self._start += have
        if have < n:
            self.flush()
        while have < n:
            count = self.sock.recv_into(view[have:])
            if not count:
                raise ConnectionError('peer closed the connection')
            have += count

    def _read_header(self):
        """(BHS, data segment length) of the next PDU."""
        bhs = self._recv_exact(BHS)
        ahs = bhs[4] * 4
        length = int.from_bytes(bhs[5:8], 'big')
        if length > max(OUR_MAX_RECV, 65536):
            raise ProtocolError('data segment of %d bytes' % length)
        if ahs:
            self._recv_exact(ahs)
        return bhs, length

    def _read_data(self, length):
        if not length:
            return b''
        data = self._recv_exact(length + _pad(length))
        if _pad(length):
            del data[length:]
        return data

    def read_pdu(self):
        bhs, length = self._read_header()
        return PDU(bhs, self._read_data(length))

    def send(self, bhs, data=b''):
        struct.pack_into('>I', bhs, 4, len(data))
        bhs[4] = 0
        self._out += (bytes(bhs), data, bytes(_pad(len(data))))
        self._out_bytes += BHS + len(data)
        if self._out_bytes >= OUR_MAX_BURST:
            self.flush()

    def flush(self):
        """Send every waiting reply."""
        if self._out:
            data = b''.join(self._out)
            self._out.clear()
            self._out_bytes = 0
            self.sock.sendall(data)

    def _status_fields(self, bhs, advance=True):
        struct.pack_into('>III', bhs, 24, self.stat_sn, self.exp_cmd_sn,
                         self.exp_cmd_sn + CMD_WINDOW - 1)
        if advance:
            self.stat_sn = (self.stat_sn + 1) & 0xffffffff

    # -- main loop --
    def run(self):
        try:
            while True:
                pdu = (self._pending.popleft() if self._pending
                       else self.read_pdu())
                if not self.full_feature:
                    if pdu.opcode != OP_LOGIN:
                        raise ProtocolError('opcode 0x%02x before login' %
                                            pdu.opcode)
                    self.login(pdu)
                    continue
                if not self.handle(pdu):
                    return
        except (ConnectionError, socket.timeout, OSError) as e:
            LOG.debug('iSCSI %s: connection ended: %s', self.peer, e)
        except ProtocolError as e:
            LOG.warning('iSCSI %s: protocol error: %s', self.peer, e)
        finally:
            # The last replies (a logout, a refused login) still go out.
            try:
                self.flush()
            except OSError:
                pass

    def _in_window(self, pdu):
        """Whether a non-immediate command's CmdSN is the one expected.

        Commands are handled in order, one at a time, so the only
        acceptable CmdSN is ExpCmdSN; others are dropped (RFC 7143 3.2.2.1).
        """
        return pdu.immediate or pdu.u32(24) == self.exp_cmd_sn

    def _track(self, pdu):
        if not pdu.immediate:
            self.exp_cmd_sn = (pdu.u32(24) + 1) & 0xffffffff

    def handle(self, pdu):
        op = pdu.opcode
        if op in (OP_SCSI_CMD, OP_TEXT, OP_TMF) and not self._in_window(pdu):
            LOG.debug('iSCSI %s: CmdSN %d outside the window (expected %d)',
                      self.peer, pdu.u32(24), self.exp_cmd_sn)
            return True
        if op == OP_SCSI_CMD:
            self._track(pdu)
            self.scsi_command(pdu)
        elif op == OP_NOP_OUT:
            if pdu.itt != NO_TAG:
                self._track(pdu)
                bhs = bytearray(BHS)
                bhs[0], bhs[1] = OP_NOP_IN, 0x80
                struct.pack_into('>II', bhs, 16, pdu.itt, NO_TAG)
                self._status_fields(bhs)
                self.send(bhs, pdu.data)
        elif op == OP_TEXT:
            self._track(pdu)
            self.text(pdu)
        elif op == OP_TMF:
            self._track(pdu)
            bhs = bytearray(BHS)
            bhs[0], bhs[1], bhs[2] = OP_TMF_RSP, 0x80, 0x00
            struct.pack_into('>I', bhs, 16, pdu.itt)
            self._status_fields(bhs)
            self.send(bhs)
        elif op == OP_LOGOUT:
            self._track(pdu)
            bhs = bytearray(BHS)
            bhs[0], bhs[1] = OP_LOGOUT_RSP, 0x80
            struct.pack_into('>I', bhs, 16, pdu.itt)
            self._status_fields(bhs)
            self.send(bhs)
            return False
        elif op == OP_DATA_OUT:
            # Unsolicited data: we negotiate InitialR2T=Yes.
            self.reject(pdu, 0x04)
        else:
            self.reject(pdu, 0x05)
        return True

    def reject(self, pdu, reason):
        bhs = bytearray(BHS)
        bhs[0], bhs[1], bhs[2] = OP_REJECT, 0x80, reason
        struct.pack_into('>I', bhs, 16, NO_TAG)
        self._status_fields(bhs)
        self.send(bhs, bytes(pdu.bhs))

    # -- login --
    def _login_response(self, pdu, transit, csg, nsg, pairs, status=(0, 0)):
        bhs = bytearray(BHS)
        bhs[0] = OP_LOGIN_RSP
        bhs[1] = ((0x80 if transit else 0) | (csg << 2) |
                  (nsg if transit else 0))
        bhs[8:14] = pdu.bhs[8:14]
        struct.pack_into('>H', bhs, 14, self.tsih if transit else 0)
        struct.pack_into('>I', bhs, 16, pdu.itt)
        self.exp_cmd_sn = pdu.u32(24)
        self._status_fields(bhs)
        bhs[36], bhs[37] = status
        self.send(bhs, build_text(pairs))

    def login(self, pdu):
        transit = bool(pdu.flags & 0x80)
        csg, nsg = (pdu.flags >> 2) & 0x3, pdu.flags & 0x3
        offered = parse_text(pdu.data)
        try:
            if pdu.flags & 0x40:
                raise LoginFailed(2, 0, 'continued login text unsupported')
            reply, transit = self._negotiate(csg, nsg, transit, offered)
        except LoginFailed as e:
            LOG.info('iSCSI login from %s (%s) refused: %s', self.peer,
                     self.initiator, e)
            self._login_response(pdu, False, csg, 0, [],
                                 (e.status_class, e.detail))
            raise ConnectionError('login refused')
        if transit and nsg == 3:
            self.tsih = self.target.next_tsih()
        self._login_response(pdu, transit, csg, nsg, reply)
        if transit and nsg == 3:
            self.full_feature = True
            LOG.info('iSCSI %s session from %s (%s)',
                     'discovery' if self.discovery else 'normal',
                     self.peer, self.initiator)

    def _negotiate(self, csg, nsg, transit, offered):
        keys = dict(offered)
        if self.initiator is None:
            self.initiator = keys.get('InitiatorName')
            if not self.initiator:
                raise LoginFailed(2, 7, 'no InitiatorName')
            self.discovery = keys.get('SessionType') == 'Discovery'
            if not self.discovery and keys.get('TargetName') != \
                    self.target.exports.iqn:
                raise LoginFailed(2, 3, 'unknown target %s' %
                                  keys.get('TargetName'))
            self._chap = (None if self.discovery else
                          self.target.exports.chap(self.initiator))
        reply = []
        if csg == 0:
            reply, done = self._security(keys)
            if not done:
                return reply, False
        elif self._chap is not None and not self._chap_done():
            raise LoginFailed(2, 1, 'CHAP required')
        if csg in (0, 1):
            reply += self._operational(offered)
        if nsg == 3 and self._chap is not None and not self._chap_done():
            raise LoginFailed(2, 1, 'CHAP required')
        if not self.discovery and transit and nsg == 3:
            reply.append(('TargetPortalGroupTag', '1'))
        return reply, transit

    def _chap_done(self):
        return getattr(self, '_chap_ok', False)

    def _security(self, keys):
        if 'AuthMethod' in keys:
            methods = keys['AuthMethod'].split(',')
            if self._chap is not None:
                if 'CHAP' not in methods:
                    raise LoginFailed(2, 1, 'CHAP required')
                return [('AuthMethod', 'CHAP')], False
            if 'None' not in methods:
                raise LoginFailed(2, 1, 'only AuthMethod=None offered here')
            return [('AuthMethod', 'None')], True
        if 'CHAP_A' in keys:
            if '5' not in keys['CHAP_A'].split(','):
                raise LoginFailed(2, 1, 'only CHAP with MD5 is supported')
            self._chap_id = os.urandom(1)[0]
            self._chap_challenge = os.urandom(16)
            return [('CHAP_A', '5'), ('CHAP_I', str(self._chap_id)),
                    ('CHAP_C', '0x' + self._chap_challenge.hex())], False
        if 'CHAP_N' in keys:
            user, secret = self._chap
            try:
                response = bytes.fromhex(keys.get('CHAP_R', '')[2:])
            except ValueError:
                response = b''
            expected = hashlib.md5(bytes([self._chap_id]) + secret.encode() +
                                   self._chap_challenge).digest()
            if keys['CHAP_N'] != user or response != expected:
                raise LoginFailed(2, 1, 'CHAP response rejected')
            if 'CHAP_I' in keys or 'CHAP_C' in keys:
                raise LoginFailed(2, 1, 'mutual CHAP is not supported')
            self._chap_ok = True
            return [], True
        return [], self._chap is None

    def _operational(self, offered):
        reply = []
        for key, value in offered:
            if key in ('InitiatorName', 'TargetName', 'SessionType',
                       'InitiatorAlias', 'AuthMethod') or \
                    key.startswith('CHAP_'):
                continue
            if key in ('HeaderDigest', 'DataDigest'):
                reply.append((key, 'None'))
            elif key == 'MaxRecvDataSegmentLength':
                self.max_recv = max(512, min(int(value), 16777215))
                reply.append((key, str(OUR_MAX_RECV)))
            elif key == 'MaxBurstLength':
                self.max_burst = min(int(value), OUR_MAX_BURST)
                reply.append((key, str(self.max_burst)))
            elif key == 'FirstBurstLength':
                self.first_burst = min(int(value), OUR_FIRST_BURST)
                reply.append((key, str(self.first_burst)))
            elif key == 'ImmediateData':
                self.immediate_data = value == 'Yes'
                reply.append((key, value))
            elif key == 'InitialR2T':
                reply.append((key, 'Yes'))
            elif key in ('MaxConnections', 'MaxOutstandingR2T'):
                reply.append((key, '1'))
            elif key in ('DataPDUInOrder', 'DataSequenceInOrder'):
                reply.append((key, 'Yes'))
            elif key == 'ErrorRecoveryLevel':
                reply.append((key, '0'))
            elif key == 'DefaultTime2Wait':
                reply.append((key, '2'))
            elif key == 'DefaultTime2Retain':
                reply.append((key, '0'))
            elif key in ('IFMarker', 'OFMarker'):
                reply.append((key, 'No'))
            else:
                reply.append((key, 'NotUnderstood'))
        return reply

    # -- text --
    def text(self, pdu):
        pairs = []
        for key, value in parse_text(pdu.data):
            if key == 'SendTargets':
                pairs.append(('TargetName', self.target.exports.iqn))
                pairs.append(('TargetAddress', '%s:%d,1' % (
                    self.target.host, self.target.port)))
            else:
                pairs.append((key, 'NotUnderstood'))
        bhs = bytearray(BHS)
        bhs[0], bhs[1] = OP_TEXT_RSP, 0x80
        struct.pack_into('>II', bhs, 16, pdu.itt, NO_TAG)
        self._status_fields(bhs)
        self.send(bhs, build_text(pairs))

    # -- SCSI --
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
            return self.reject(pdu, 0x05)
        lun = self.luns().get(scsi.decode_lun(pdu.bhs[8:16]))
        edtl = pdu.u32(20)
        cdb = bytes(pdu.bhs[32:48])
        needed = scsi.data_out_length(cdb)
        data_out = pdu.data
        short = needed and edtl < needed
        if pdu.flags & 0x20 and needed:
            # Never solicit more than the initiator expects to send.
            data_out = self._collect(pdu, data_out, min(needed, edtl))
        if len(data_out) != needed:
            data_out = data_out[:needed]
        status, data_in, sense_data = scsi.execute(
            lun, cdb, data_out, report_luns=self.luns().keys(),
            partial=bool(short))
        if needed:
            # The initiator expected to send less (overflow: only that
            # much was written) or more (underflow) than the CDB names.
            return self._response(pdu, status, sense_data,
                                  overflow=needed - edtl if short else 0,
                                  underflow=edtl - needed)
        if status != scsi.GOOD:
            return self._response(pdu, status, sense_data)
        if pdu.flags & 0x40 and edtl:
            return self._data_in(pdu, data_in, edtl)
        length = len(data_in)
        self._response(pdu, status, None,
                       overflow=max(length - edtl, 0),
                       underflow=max(edtl - length, 0) if pdu.flags & 0x40
                       else 0)

    def _collect(self, pdu, data, total):
        """Solicit (R2T) what is missing of ``total`` bytes of data."""
        got = min(len(data), total)
        collected = bytearray(total)
        collected[:got] = data[:got]
        ttt = 0
        with memoryview(collected) as view:
            while got < total:
                data_sn = 0
                want = min(self.max_burst, total - got)
                bhs = bytearray(BHS)
                bhs[0], bhs[1] = OP_R2T, 0x80
                bhs[8:16] = pdu.bhs[8:16]
                struct.pack_into('>II', bhs, 16, pdu.itt, ttt)
                self._status_fields(bhs, advance=False)
                struct.pack_into('>III', bhs, 36, ttt, got, want)
                self.send(bhs)
                end = got + want
                while got < end:
                    header, length = self._read_header()
                    out = PDU(header)
                    if out.opcode != OP_DATA_OUT:
                        # With InitialR2T=Yes only the solicited command
                        # sends Data-Out; anything else is handled after.
                        out.data = self._read_data(length)
                        self._pending.append(out)
                        continue
                    if out.itt != pdu.itt:
                        raise ProtocolError(
                            'Data-Out for task 0x%08x while task 0x%08x is '
                            'solicited' % (out.itt, pdu.itt))
                    if out.u32(40) != got or out.u32(36) != data_sn:
                        raise ProtocolError(
                            'Data-Out DataSN %d at offset %d, expected %d '
                            'at %d' % (out.u32(36), out.u32(40), data_sn,
                                       got))
                    if length > end - got:
                        raise ProtocolError(
                            'Data-Out of %d bytes where %d were solicited'
                            % (length, end - got))
                    self._recv_into(view[got:got + length])
                    if _pad(length):
                        self._recv_exact(_pad(length))
                    got += length
                    data_sn += 1
                ttt += 1
        return collected

    def _data_in(self, pdu, data, edtl):
        total = len(data)
        data = data[:edtl]
        offset, data_sn = 0, 0
        while True:
            piece = data[offset:offset + self.max_recv]
            end = offset + len(piece)
            last = end >= len(data)
            bhs = bytearray(BHS)
            bhs[0] = OP_DATA_IN
            # F ends a sequence (at most MaxBurstLength); S carries status.
            bhs[1] = (0x81 if last else
                      0x80 if end % self.max_burst == 0 else 0x00)
            bhs[8:16] = pdu.bhs[8:16]
            struct.pack_into('>II', bhs, 16, pdu.itt, NO_TAG)
            self._status_fields(bhs, advance=last)
            struct.pack_into('>II', bhs, 36, data_sn, offset)
            if last and total > edtl:
                bhs[1] |= 0x04
                struct.pack_into('>I', bhs, 44, total - edtl)
            elif last and total < edtl:
                bhs[1] |= 0x02
                struct.pack_into('>I', bhs, 44, edtl - total)
            self.send(bhs, piece)
            offset, data_sn = end, data_sn + 1
            if last:
                return

    def _response(self, pdu, status, sense_data, overflow=0, underflow=0):
        bhs = bytearray(BHS)
        bhs[0], bhs[1], bhs[2], bhs[3] = OP_SCSI_RSP, 0x80, 0x00, status
        struct.pack_into('>I', bhs, 16, pdu.itt)
        self._status_fields(bhs)
        if overflow > 0:
            bhs[1] |= 0x04
            struct.pack_into('>I', bhs, 44, overflow)
        elif underflow > 0:
            bhs[1] |= 0x02
            struct.pack_into('>I', bhs, 44, underflow)
        data = b''
        if sense_data:
            data = struct.pack('>H', len(sense_data)) + sense_data
        self.send(bhs, data)


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # Into the array's log, not stderr: a parent that does not read
        # stderr must never be able to stall a connection thread.
        LOG.exception('connection from %s failed', client_address[0])


class Target(object):
    """The listening portal; ``exports`` decides what each host sees."""

    def __init__(self, exports, host='127.0.0.1', port=3260):
        self.exports = exports
        self._tsih = 0
        self._lock = threading.Lock()
        target = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                self.request.settimeout(IDLE_TIMEOUT)
                self.request.setsockopt(socket.IPPROTO_TCP,
                                        socket.TCP_NODELAY, 1)
                Session(target, self.request,
                        '%s:%s' % self.client_address[:2]).run()

        self.server = _Server((host, port), Handler)
        self.host, self.port = self.server.server_address[:2]
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={'poll_interval': 0.2},
                                       daemon=True)

    def next_tsih(self):
        with self._lock:
            self._tsih = self._tsih % 0xfffe + 1
            return self._tsih

    def start(self):
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
