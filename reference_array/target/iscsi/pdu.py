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

"""iSCSI PDUs (RFC 7143 section 11): the Basic Header Segment by name.

A received PDU is read through named fields (``pdu.itt``,
``pdu.cmd_sn``, ``pdu.cdb``); the PDUs the target sends are built by one
function per kind (``data_in``, ``r2t``, ``scsi_response``, ...), each a
single pack of the whole header. Several fields share an offset: the
name to use is the one RFC 7143 gives the field in that PDU's layout.
"""

import struct

BHS_LENGTH = 48
NO_TAG = 0xffffffff
NO_LUN = bytes(8)


class Opcode(object):
    # Initiator to target.
    NOP_OUT = 0x00
    SCSI_COMMAND = 0x01
    TASK_MANAGEMENT = 0x02
    LOGIN = 0x03
    TEXT = 0x04
    DATA_OUT = 0x05
    LOGOUT = 0x06
    # Target to initiator.
    NOP_IN = 0x20
    SCSI_RESPONSE = 0x21
    TASK_MANAGEMENT_RESPONSE = 0x22
    LOGIN_RESPONSE = 0x23
    TEXT_RESPONSE = 0x24
    DATA_IN = 0x25
    LOGOUT_RESPONSE = 0x26
    R2T = 0x31
    REJECT = 0x3f


# Byte 1 (flags).
FINAL = 0x80                # F: last PDU of a sequence (T in a login)
READ = 0x40                 # SCSI Command: data from the target
WRITE = 0x20                # SCSI Command: data to the target
TRANSIT = 0x80              # Login: move to the next stage
CONTINUE = 0x40             # Login: text continues in the next PDU
OVERFLOW = 0x04             # SCSI Response, Data-In: residual overflow
UNDERFLOW = 0x02            # SCSI Response, Data-In: residual underflow
STATUS = 0x01               # Data-In: carries the command's status

# Reject reasons (RFC 7143 11.17.1).
PROTOCOL_ERROR = 0x04
COMMAND_NOT_SUPPORTED = 0x05

# Login stages (CSG, NSG).
SECURITY, OPERATIONAL, FULL_FEATURE = 0, 1, 3


def pad(length):
    """Bytes of padding after a data segment of ``length`` bytes."""
    return -length & 3


# Fields are properties whose getter is one C call (a Struct with the
# offset built in): the session reads several per command.
def _number(offset, fmt):
    """An unsigned big-endian field of the BHS, read and written by name."""
    unpack = struct.Struct('>%dx%s' % (offset, fmt)).unpack_from
    pack = struct.Struct('>' + fmt).pack_into

    def get(pdu):
        return unpack(pdu.bhs)[0]

    def put(pdu, value):
        pack(pdu.bhs, offset, value)
    return property(get, put)


def _bits(offset, mask):
    """Some bits of one byte of the BHS, as a number."""
    shift = (mask & -mask).bit_length() - 1

    def get(pdu):
        return (pdu.bhs[offset] & mask) >> shift

    def put(pdu, value):
        pdu.bhs[offset] = (pdu.bhs[offset] & ~mask |
                           (value << shift) & mask)
    return property(get, put)


def _raw(offset, length):
    """Bytes of the BHS as they are (the LUN, the CDB, the ISID)."""
    end = offset + length

    def get(pdu):
        return pdu.bhs[offset:end]

    def put(pdu, value):
        if len(value) != length:
            raise ValueError('%d bytes for a field of %d' % (len(value),
                                                             length))
        pdu.bhs[offset:end] = value
    return property(get, put)


def _data_length():
    """DataSegmentLength: three bytes."""
    def get(pdu):
        return int.from_bytes(pdu.bhs[5:8], 'big')

    def put(pdu, value):
        pdu.bhs[5:8] = value.to_bytes(3, 'big')
    return property(get, put)


class PDU(object):
    """One PDU: its 48-byte header and its data segment."""

    __slots__ = ('bhs', 'data')

    def __init__(self, bhs=None, data=b''):
        self.bhs = bytearray(BHS_LENGTH) if bhs is None else bhs
        self.data = data

    # Bytes 0-7, every PDU.
    opcode = _bits(0, 0x3f)
    immediate = _bits(0, 0x40)
    flags = _number(1, 'B')
    ahs_length = _number(4, 'B')            # in 4-byte words
    data_length = _data_length()
    # Byte 1 of a login: the stages.
    transit = _bits(1, TRANSIT)
    csg = _bits(1, 0x0c)
    nsg = _bits(1, 0x03)
    # Bytes 2-3.
    response = _number(2, 'B')              # SCSI/TMF/logout responses
    reason = _number(2, 'B')                # Reject
    status = _number(3, 'B')                # SCSI Response, Data-In
    # Bytes 8-15.
    lun = _raw(8, 8)
    isid = _raw(8, 6)                       # login
    tsih = _number(14, 'H')                 # login
    # Bytes 16-31.
    itt = _number(16, 'I')
    ttt = _number(20, 'I')
    expected_length = _number(20, 'I')      # SCSI Command: EDTL
    cmd_sn = _number(24, 'I')               # initiator to target
    stat_sn = _number(24, 'I')              # target to initiator
    exp_stat_sn = _number(28, 'I')          # initiator to target
    exp_cmd_sn = _number(28, 'I')           # target to initiator
    # Bytes 32-47.
    max_cmd_sn = _number(32, 'I')
    cdb = _raw(32, 16)                      # SCSI Command
    status_class = _number(36, 'B')         # Login Response
    status_detail = _number(37, 'B')        # Login Response
    data_sn = _number(36, 'I')              # Data-In, Data-Out
    r2t_sn = _number(36, 'I')               # R2T
    exp_data_sn = _number(36, 'I')          # SCSI Response
    buffer_offset = _number(40, 'I')        # Data-In, Data-Out, R2T
    residual = _number(44, 'I')             # SCSI Response, Data-In
    desired_length = _number(44, 'I')       # R2T

    @classmethod
    def parse(cls, raw):
        """A PDU from its bytes on the wire (no AHS)."""
        bhs = bytearray(raw[:BHS_LENGTH])
        length = int.from_bytes(bhs[5:8], 'big')
        return cls(bhs, bytes(raw[BHS_LENGTH:BHS_LENGTH + length]))

    def to_bytes(self):
        """The PDU on the wire: header, data and padding."""
        return (bytes(self.bhs) + bytes(self.data) +
                bytes(pad(len(self.data))))


def data_length(bhs):
    """DataSegmentLength of a raw header (framing, before a PDU exists)."""
    return int.from_bytes(bhs[5:8], 'big')


def ahs_bytes(bhs):
    """Length in bytes of the AHS that follows a raw header."""
    return bhs[4] * 4


# -- what the target sends ---------------------------------------------------
# Every target PDU has one shape up to byte 35 (opcode, flags, two bytes
# of its own, lengths, LUN or ISID/TSIH, ITT, a tag, StatSN, ExpCmdSN,
# MaxCmdSN) and three words of its own from byte 36: each builder below
# names what goes where, in header order, and packs it in one call.
# ``sequence`` is (StatSN, ExpCmdSN, MaxCmdSN) as the session numbers
# them. A builder returns (header, data segment); ``PDU(*pair)`` reads it
# back by field name.
_TARGET = struct.Struct('>BBBBI8sIIIIIIII')
_pack = _TARGET.pack


def nop_in(itt, sequence, data=b''):
    return _pack(Opcode.NOP_IN, FINAL, 0, 0, len(data), NO_LUN, itt,
                 NO_TAG, *sequence, 0, 0, 0), data


def scsi_response(itt, sequence, status, overflow=0, underflow=0,
                  data=b''):
    """A command's status; overflow/underflow: the residual count."""
    if overflow > 0:
        flags, residual = FINAL | OVERFLOW, overflow
    elif underflow > 0:
        flags, residual = FINAL | UNDERFLOW, underflow
    else:
        flags, residual = FINAL, 0
    # Byte 2 is the response (0: command completed at the target).
    return _pack(Opcode.SCSI_RESPONSE, flags, 0, status, len(data), NO_LUN,
                 itt, 0, *sequence, 0, 0, residual), data


def data_in(lun, itt, sequence, data_sn, buffer_offset, flags, status=0,
            residual=0, data=b''):
    return _pack(Opcode.DATA_IN, flags, 0, status, len(data), lun, itt,
                 NO_TAG, *sequence, data_sn, buffer_offset, residual), data


def r2t(lun, itt, ttt, sequence, r2t_sn, buffer_offset, desired_length):
    return _pack(Opcode.R2T, FINAL, 0, 0, 0, lun, itt, ttt, *sequence,
                 r2t_sn, buffer_offset, desired_length), b''


def task_management_response(itt, sequence, response=0):
    return _pack(Opcode.TASK_MANAGEMENT_RESPONSE, FINAL, response, 0, 0,
                 NO_LUN, itt, 0, *sequence, 0, 0, 0), b''


def logout_response(itt, sequence, response=0):
    return _pack(Opcode.LOGOUT_RESPONSE, FINAL, response, 0, 0, NO_LUN,
                 itt, 0, *sequence, 0, 0, 0), b''


def text_response(itt, sequence, data):
    return _pack(Opcode.TEXT_RESPONSE, FINAL, 0, 0, len(data), NO_LUN, itt,
                 NO_TAG, *sequence, 0, 0, 0), data


def login_response(isid, tsih, itt, sequence, transit, csg, nsg,
                   status_class=0, status_detail=0, data=b''):
    """Versions max and active (bytes 2 and 3) are 0, the only one."""
    flags = (TRANSIT | csg << 2 | nsg) if transit else csg << 2
    return _pack(Opcode.LOGIN_RESPONSE, flags, 0, 0, len(data),
                 bytes(isid) + tsih.to_bytes(2, 'big'), itt, 0, *sequence,
                 status_class << 24 | status_detail << 16, 0, 0), data


def reject(sequence, reason, rejected_header):
    """Reject a PDU; its header goes back as the data segment."""
    data = bytes(rejected_header)
    return _pack(Opcode.REJECT, FINAL, reason, 0, len(data), NO_LUN, NO_TAG,
                 0, *sequence, 0, 0, 0), data


# -- text data segments (login and Text PDUs) --------------------------------
def parse_text(data):
    """``key=value`` pairs, in order, of a text data segment."""
    pairs = []
    for item in bytes(data).split(b'\0'):
        if item:
            key, _sep, value = item.decode('utf-8', 'replace').partition('=')
            pairs.append((key, value))
    return pairs


def build_text(pairs):
    return b''.join(('%s=%s' % kv).encode() + b'\0' for kv in pairs)
