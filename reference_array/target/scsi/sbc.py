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

"""SBC-3 block commands over a device, with the SPC commands.

The device (``exports`` resolves it) gives size, identity and I/O:
``blocks``, ``chunk_blocks``, ``serial``, ``naa``, ``read_only``,
``read``, ``write``, ``unmap``, ``flush`` and ``allocated_run``.
"""

import struct

from reference_array.target.scsi import commands
from reference_array.target.scsi import sense
from reference_array.target.scsi import spc

SCSIError = sense.SCSIError

BLOCK = 512
MAX_TRANSFER_BLOCKS = 8192          # 4 MiB per command
MAX_UNMAP_BLOCKS = 1 << 20
MAX_UNMAP_DESCRIPTORS = 256
MAX_WRITE_SAME_BLOCKS = MAX_TRANSFER_BLOCKS

READ_OPS = (0x08, 0x28, 0xa8, 0x88)
WRITE_OPS = (0x0a, 0x2a, 0xaa, 0x8a, 0x2e, 0xae, 0x8e)
WRITE_SAME_16 = 0x93
SERVICE_ACTION_IN_16 = 0x9e


def rw_range(cdb):
    """(LBA, blocks) of a READ, WRITE or WRITE AND VERIFY."""
    op = cdb[0]
    if op in (0x08, 0x0a):
        lba = struct.unpack_from('>I', cdb, 0)[0] & 0x1fffff
        blocks = cdb[4] or 256
    elif op in (0x28, 0x2a, 0x2e):
        lba, blocks = struct.unpack_from('>IxH', cdb, 2)
    elif op in (0xa8, 0xaa, 0xae):
        lba, blocks = struct.unpack_from('>II', cdb, 2)
    else:
        lba, blocks = struct.unpack_from('>QI', cdb, 2)
    return lba, blocks


def _check_range(lun, lba, blocks):
    if lba + blocks > lun.blocks:
        raise SCSIError(*sense.LBA_OUT_OF_RANGE)
    if blocks > MAX_TRANSFER_BLOCKS:
        raise SCSIError(*sense.INVALID_FIELD)


# -- data out lengths --------------------------------------------------------
def _write_length(cdb):
    return rw_range(cdb)[1] * BLOCK


def _unmap_length(cdb):
    return struct.unpack_from('>H', cdb, 7)[0]


def _write_same_length(cdb):
    return 0 if cdb[1] & 0x01 else BLOCK                   # NDOB


# -- handlers ----------------------------------------------------------------
def read(cmd):
    lun, cdb = cmd.lun, cmd.cdb
    lba, blocks = rw_range(cdb)
    _check_range(lun, lba, blocks)
    if cdb[0] != 0x08 and cdb[1] & 0xe0:
        raise SCSIError(*sense.INVALID_FIELD)   # no protection information
    return lun.read(lba * BLOCK, blocks * BLOCK)


def check_write(lun, cdb):
    """Before any data: in range, not too long, writable."""
    lba, blocks = rw_range(cdb)
    _check_range(lun, lba, blocks)
    if cdb[0] != 0x0a and cdb[1] & 0xe0:
        raise SCSIError(*sense.INVALID_FIELD)   # no protection information
    if lun.read_only:
        raise SCSIError(*sense.WRITE_PROTECTED)


def write(cmd):
    lun, cdb, data_out = cmd.lun, cmd.cdb, cmd.data_out
    lba, blocks = rw_range(cdb)
    if len(data_out) != blocks * BLOCK and not (
            cmd.partial and len(data_out) < blocks * BLOCK):
        raise SCSIError(*sense.INVALID_FIELD)
    lun.write(lba * BLOCK, data_out)
    if cdb[0] != 0x0a and cdb[1] & 0x08:                    # FUA
        lun.flush()
    return b''


def read_capacity10(cmd):
    last = min(cmd.lun.blocks - 1, 0xffffffff)
    return struct.pack('>II', last, BLOCK)


def read_capacity16(cmd):
    length = spc.allocation_length(cmd.cdb, 10, 4)
    data = bytearray(32)
    struct.pack_into('>QI', data, 0, cmd.lun.blocks - 1, BLOCK)
    data[14] = 0xc0                                         # LBPME, LBPRZ
    return bytes(data)[:length]


def get_lba_status(cmd):
    lun, cdb = cmd.lun, cmd.cdb
    lba = struct.unpack_from('>Q', cdb, 2)[0]
    length = spc.allocation_length(cdb, 10, 4)
    if lba >= lun.blocks:
        raise SCSIError(*sense.LBA_OUT_OF_RANGE)
    limit = min(lun.blocks - lba, MAX_UNMAP_BLOCKS) * BLOCK
    allocated, run = lun.allocated_run(lba * BLOCK, limit)
    # Runs are in whole chunks; report from the asked LBA on.
    blocks = max(1, run // BLOCK)
    descriptor = struct.pack('>QIB3x', lba, blocks, 0 if allocated else 1)
    return (struct.pack('>I', len(descriptor) + 4) + bytes(4) +
            descriptor)[:length]


SERVICE_ACTIONS_IN_16 = {
    0x10: read_capacity16,
    0x12: get_lba_status,
}


def service_action_in16(cmd):
    handler = SERVICE_ACTIONS_IN_16.get(cmd.cdb[1] & 0x1f)
    if handler is None:
        raise SCSIError(*sense.INVALID_OPCODE)
    return handler(cmd)


def synchronize_cache(cmd):
    cmd.lun.flush()
    return b''


def unmap(cmd):
    lun, params = cmd.lun, cmd.data_out
    if lun.read_only:
        raise SCSIError(*sense.WRITE_PROTECTED)
    if len(params) < 8:
        return b''
    length = struct.unpack_from('>H', params, 2)[0]
    descriptors = params[8:8 + length]
    if len(descriptors) % 16 or len(descriptors) // 16 > \
            MAX_UNMAP_DESCRIPTORS:
        raise SCSIError(*sense.PARAMETER_LIST_ERROR)
    ranges = []
    for off in range(0, len(descriptors), 16):
        lba, blocks = struct.unpack_from('>QI', descriptors, off)
        if lba + blocks > lun.blocks:
            raise SCSIError(*sense.LBA_OUT_OF_RANGE)
        ranges.append((lba, blocks))
    for lba, blocks in ranges:
        if blocks:
            lun.unmap(lba * BLOCK, blocks * BLOCK)
    return b''


def write_same16(cmd):
    lun, cdb, data_out = cmd.lun, cmd.cdb, cmd.data_out
    lba, blocks = struct.unpack_from('>QI', cdb, 2)
    if cdb[1] & 0xf0 or not blocks or blocks > MAX_WRITE_SAME_BLOCKS:
        # No protection information, no ANCHOR; WSNZ and the length
        # limit are announced in VPD B0.
        raise SCSIError(*sense.INVALID_FIELD)
    if lba + blocks > lun.blocks:
        raise SCSIError(*sense.LBA_OUT_OF_RANGE)
    if lun.read_only:
        raise SCSIError(*sense.WRITE_PROTECTED)
    if cdb[1] & 0x08 or data_out == bytes(len(data_out)):
        lun.unmap(lba * BLOCK, blocks * BLOCK)
    else:
        if len(data_out) != BLOCK or blocks > MAX_TRANSFER_BLOCKS:
            raise SCSIError(*sense.INVALID_FIELD)
        lun.write(lba * BLOCK, data_out * blocks)
    return b''


# -- VPD and mode pages of a block device ----------------------------------
def block_limits(cmd):
    lun = cmd.lun
    body = bytearray(0x3c)
    body[0] = 0x01              # WSNZ: WRITE SAME needs a block count
    struct.pack_into('>I', body, 4, MAX_TRANSFER_BLOCKS)
    struct.pack_into('>I', body, 8, lun.chunk_blocks)
    struct.pack_into('>I', body, 16, MAX_UNMAP_BLOCKS)
    struct.pack_into('>I', body, 20, MAX_UNMAP_DESCRIPTORS)
    struct.pack_into('>I', body, 24, lun.chunk_blocks)
    struct.pack_into('>Q', body, 32, MAX_WRITE_SAME_BLOCKS)
    return bytes(body)


def block_device_characteristics(cmd):
    body = bytearray(0x3c)
    struct.pack_into('>H', body, 0, 1)                      # non-rotating
    return bytes(body)


def logical_block_provisioning(cmd):
    # UNMAP and WRITE SAME(16) unmap; unmapped blocks read as zeros;
    # thin provisioned.
    return bytes([0x00, 0xc4, 0x02, 0x00])


CACHING_PAGE = bytes([0x08, 0x12, 0x04] + [0] * 17)          # WCE

Op = commands.Op

OPS = dict(spc.OPS)
OPS.update({op: Op(read) for op in READ_OPS})
OPS.update({op: Op(write, data_out=_write_length, check=check_write)
            for op in WRITE_OPS})
OPS.update({
    0x1b: Op(spc.no_data),                              # START STOP UNIT
    0x25: Op(read_capacity10),
    0x35: Op(synchronize_cache),
    0x42: Op(unmap, data_out=_unmap_length),
    0x91: Op(synchronize_cache),
    WRITE_SAME_16: Op(write_same16, data_out=_write_same_length),
    SERVICE_ACTION_IN_16: Op(service_action_in16),
})

BLOCK_DEVICE = commands.CommandSet(
    OPS,
    vpd_pages={
        **spc.VPD_PAGES,
        0xb0: block_limits,
        0xb1: block_device_characteristics,
        0xb2: logical_block_provisioning,
    },
    mode_pages={0x08: CACHING_PAGE, 0x0a: spc.CONTROL_PAGE})
