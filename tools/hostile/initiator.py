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

"""Just enough of an iSCSI initiator to send PDUs nobody else would."""

import contextlib
import socket
import struct


OP_SCSI_CMD, OP_LOGIN, OP_DATA_OUT = 0x01, 0x03, 0x05
OP_SCSI_RSP, OP_LOGIN_RSP, OP_R2T, OP_REJECT = 0x21, 0x23, 0x31, 0x3f


def _text(pairs):
    return b''.join(('%s=%s' % kv).encode() + b'\0' for kv in pairs)


def _parse_text(data):
    return dict(item.decode('utf-8', 'replace').partition('=')[::2]
                for item in data.split(b'\0') if item)


class RawInitiator(object):
    """Just enough of an initiator to send PDUs nobody else would."""

    def __init__(self, portal, name, timeout=10):
        self.sock = socket.create_connection(portal, timeout=timeout)
        self.name = name
        self.cmd_sn = 1
        self.itt = 1

    def close(self):
        with contextlib.suppress(OSError):
            self.sock.close()

    def send(self, bhs, data=b''):
        bhs[5:8] = len(data).to_bytes(3, 'big')
        self.sock.sendall(bytes(bhs) + data + bytes((4 - len(data) % 4) % 4))

    def recv(self):
        """(BHS, data) of the next PDU; None when the target hung up."""
        bhs = self._exact(48)
        if bhs is None:
            return None
        length = int.from_bytes(bhs[5:8], 'big')
        data = self._exact(length + (4 - length % 4) % 4) if length else b''
        return bhs, (data or b'')[:length]

    def _exact(self, n):
        buf = b''
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except (socket.timeout, OSError):
                return None
            if not chunk:
                return None
            buf += chunk
        return buf

    def login_pdu(self, pairs, csg=1, nsg=3, transit=True):
        bhs = bytearray(48)
        bhs[0] = 0x40 | OP_LOGIN
        bhs[1] = (0x80 if transit else 0) | (csg << 2) | nsg
        bhs[8:14] = b'\x40\x00\x01\x37\x00\x00'        # ISID
        struct.pack_into('>IHHII', bhs, 16, self.itt, 0, 0, self.cmd_sn, 0)
        self.send(bhs, _text(pairs))
        return self.recv()

    def login(self, target, extra=(), immediate=False):
        """Security then operational stage; returns the status class."""
        base = [('InitiatorName', self.name), ('SessionType', 'Normal'),
                ('TargetName', target)]
        reply = self.login_pdu(base + [('AuthMethod', 'None')], 0, 1)
        if reply is None or reply[0][36]:
            return reply[0][36] if reply else -1
        reply = self.login_pdu(
            [('HeaderDigest', 'None'), ('DataDigest', 'None'),
             ('ImmediateData', 'Yes' if immediate else 'No'),
             ('InitialR2T', 'Yes')] + list(extra),
            1, 3)
        return reply[0][36] if reply else -1

    def command(self, cdb, edtl, lun=0, data=b''):
        bhs = bytearray(48)
        bhs[0] = OP_SCSI_CMD
        bhs[1] = 0x80 | 0x20                 # final, write
        struct.pack_into('>Q', bhs, 8, lun << 48)
        struct.pack_into('>IIII', bhs, 16, self.itt, edtl, self.cmd_sn, 0)
        bhs[32:32 + len(cdb)] = cdb
        self.itt += 1
        self.cmd_sn += 1
        self.send(bhs, data)

    def write16(self, lba, blocks, edtl, lun=0, data=b''):
        cdb = bytearray(16)
        cdb[0] = 0x8a
        struct.pack_into('>QI', cdb, 2, lba, blocks)
        self.command(cdb, edtl, lun, data)

    def unmap(self, extents, lun):
        """One UNMAP with a descriptor per (lba, blocks)."""
        params = bytearray(8 + 16 * len(extents))
        struct.pack_into('>HH', params, 0, len(params) - 2,
                         16 * len(extents))
        for n, (lba, blocks) in enumerate(extents):
            struct.pack_into('>QI', params, 8 + 16 * n, lba, blocks)
        cdb = bytearray(10)
        cdb[0] = 0x42
        struct.pack_into('>H', cdb, 7, len(params))
        self.command(cdb, len(params), lun, bytes(params))
