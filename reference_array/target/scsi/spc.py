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

"""SPC-4 commands every device type answers, and SAM LUN addressing."""

import struct

from reference_array.target.scsi import commands
from reference_array.target.scsi import sense

SCSIError = sense.SCSIError

VENDOR = b'CFLASH  '
PRODUCT = b'K2-REFERENCE    '
REVISION = b'1.0 '


def allocation_length(cdb, offset, size):
    fmt = {1: '>B', 2: '>H', 4: '>I'}[size]
    return struct.unpack_from(fmt, cdb, offset)[0]


def encode_lun(number):
    if number < 256:
        return bytes([0, number]) + bytes(6)
    return bytes([0x40 | (number >> 8), number & 0xff]) + bytes(6)


def decode_lun(raw):
    if raw[0] & 0xc0 == 0x40:
        return ((raw[0] & 0x3f) << 8) | raw[1]
    return raw[1]


# -- INQUIRY -----------------------------------------------------------------
def _standard_inquiry(lun):
    data = bytearray(96)
    data[0] = 0x00 if lun is not None else 0x7f
    data[2] = 0x06                      # SPC-4
    data[3] = 0x12                      # HiSup, response format 2
    data[4] = len(data) - 5
    data[7] = 0x02                      # CmdQue
    data[8:16] = VENDOR
    data[16:32] = PRODUCT
    data[32:36] = REVISION
    # Version descriptors: SAM-5, iSCSI, SPC-4, SBC-3.
    struct.pack_into('>HHHH', data, 58, 0x00a0, 0x0960, 0x0460, 0x04c0)
    return bytes(data)


def supported_pages(cmd):
    return bytes(sorted(cmd.command_set.vpd_pages))


def unit_serial_number(cmd):
    return cmd.lun.serial.encode()


def device_identification(cmd):
    lun = cmd.lun
    naa = lun.naa
    return (bytes([0x01, 0x03, 0x00, len(naa)]) + naa +
            bytes([0x02, 0x01, 0x00, 8 + len(lun.serial)]) + VENDOR +
            lun.serial.encode())


VPD_PAGES = {
    0x00: supported_pages,
    0x80: unit_serial_number,
    0x83: device_identification,
}


def inquiry(cmd):
    cdb = cmd.cdb
    length = allocation_length(cdb, 3, 2)
    if cdb[1] & 0x01:                                       # EVPD
        if cmd.lun is None:
            raise SCSIError(*sense.LUN_NOT_SUPPORTED)
        page = cmd.command_set.vpd_pages.get(cdb[2])
        if page is None:
            raise SCSIError(*sense.INVALID_FIELD)
        body = page(cmd)
        return (bytes([0x00, cdb[2]]) + struct.pack('>H', len(body)) +
                body)[:length]
    if cdb[2]:
        raise SCSIError(*sense.INVALID_FIELD)
    return _standard_inquiry(cmd.lun)[:length]


# -- other commands ----------------------------------------------------------
def report_luns(cmd):
    length = allocation_length(cmd.cdb, 6, 4)
    body = b''.join(encode_lun(n) for n in sorted(cmd.report_luns))
    return (struct.pack('>I', len(body)) + bytes(4) + body)[:length]


def request_sense(cmd):
    return sense.sense(0, 0, 0)[:cmd.cdb[4]]


def no_data(cmd):
    """Accepted, nothing to do (TEST UNIT READY, PREVENT ALLOW ...)."""
    return b''


CONTROL_PAGE = bytes([0x0a, 0x0a, 0x02] + [0] * 9)


def _mode_pages(cmd):
    pages = cmd.command_set.mode_pages
    code = cmd.cdb[2] & 0x3f
    if code == 0x3f:
        return b''.join(pages[n] for n in sorted(pages))
    if code not in pages:
        raise SCSIError(*sense.INVALID_FIELD)
    return pages[code]


def _device_specific(lun):
    # WP, and DPOFUA (supported).
    return (0x80 if lun.read_only else 0) | 0x10


def mode_sense6(cmd):
    pages = _mode_pages(cmd)
    data = bytes([len(pages) + 3, 0x00, _device_specific(cmd.lun),
                  0x00]) + pages
    return data[:cmd.cdb[4]]


def mode_sense10(cmd):
    pages = _mode_pages(cmd)
    data = struct.pack('>HBBHH', len(pages) + 6, 0,
                       _device_specific(cmd.lun), 0, 0) + pages
    return data[:allocation_length(cmd.cdb, 7, 2)]


Op = commands.Op

OPS = {
    0x00: Op(no_data),                                  # TEST UNIT READY
    0x03: Op(request_sense, needs_lun=False),
    0x12: Op(inquiry, needs_lun=False),
    0x1a: Op(mode_sense6),
    0x1e: Op(no_data),                                  # PREVENT ALLOW
    0x5a: Op(mode_sense10),
    0xa0: Op(report_luns, needs_lun=False),
}
