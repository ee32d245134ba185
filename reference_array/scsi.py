"""SCSI block commands (SBC-3/SPC-4 subset) over the storage engine.

``execute(lun, cdb, data_out)`` returns ``(status, data_in, sense)``.
The LUN object gives size, identity and I/O; this module knows nothing of
iSCSI or of the K2 model.
"""

import struct

GOOD = 0x00
CHECK_CONDITION = 0x02
BLOCK = 512
MAX_TRANSFER_BLOCKS = 8192          # 4 MiB per command
MAX_UNMAP_BLOCKS = 1 << 20
MAX_UNMAP_DESCRIPTORS = 256
MAX_WRITE_SAME_BLOCKS = MAX_TRANSFER_BLOCKS

ILLEGAL_REQUEST = 0x05
DATA_PROTECT = 0x07
HARDWARE_ERROR = 0x04
UNIT_ATTENTION = 0x06

VENDOR = b'CFLASH  '
PRODUCT = b'K2-REFERENCE    '
REVISION = b'1.0 '


class SCSIError(Exception):

    def __init__(self, key, asc, ascq=0):
        super().__init__(key, asc, ascq)
        self.key, self.asc, self.ascq = key, asc, ascq


def sense(key, asc, ascq=0):
    """Fixed-format sense data."""
    data = bytearray(18)
    data[0] = 0x70
    data[2] = key
    data[7] = 10
    data[12] = asc
    data[13] = ascq
    return bytes(data)


INVALID_OPCODE = (ILLEGAL_REQUEST, 0x20, 0x00)
INVALID_FIELD = (ILLEGAL_REQUEST, 0x24, 0x00)
LBA_OUT_OF_RANGE = (ILLEGAL_REQUEST, 0x21, 0x00)
LUN_NOT_SUPPORTED = (ILLEGAL_REQUEST, 0x25, 0x00)
WRITE_PROTECTED = (DATA_PROTECT, 0x27, 0x00)
PARAMETER_LIST_ERROR = (ILLEGAL_REQUEST, 0x1a, 0x00)
INTERNAL_FAILURE = (HARDWARE_ERROR, 0x44, 0x00)
INVALID_FIELD_IN_IU = (ILLEGAL_REQUEST, 0x0e, 0x03)

READS = (0x08, 0x28, 0xa8, 0x88)
WRITES = (0x0a, 0x2a, 0xaa, 0x8a, 0x2e, 0xae, 0x8e)


def data_out_length(cdb):
    """Bytes of data the CDB says the initiator sends (SPDTL)."""
    op = cdb[0]
    if op in WRITES:
        return _rw_range(cdb)[1] * BLOCK
    if op == 0x42:                                          # UNMAP
        return struct.unpack_from('>H', cdb, 7)[0]
    if op == 0x93:                                          # WRITE SAME 16
        return 0 if cdb[1] & 0x01 else BLOCK
    return 0


def _inquiry_standard(lun):
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


def _vpd(lun, page):
    if page == 0x00:
        body = bytes([0x00, 0x80, 0x83, 0xb0, 0xb1, 0xb2])
    elif page == 0x80:
        body = lun.serial.encode()
    elif page == 0x83:
        naa = lun.naa
        body = (bytes([0x01, 0x03, 0x00, len(naa)]) + naa +
                bytes([0x02, 0x01, 0x00, 8 + len(lun.serial)]) + VENDOR +
                lun.serial.encode())
    elif page == 0xb0:
        body = bytearray(0x3c)
        body[0] = 0x01          # WSNZ: WRITE SAME needs a block count
        struct.pack_into('>I', body, 4, MAX_TRANSFER_BLOCKS)
        struct.pack_into('>I', body, 8, lun.chunk_blocks)
        struct.pack_into('>I', body, 16, MAX_UNMAP_BLOCKS)
        struct.pack_into('>I', body, 20, MAX_UNMAP_DESCRIPTORS)
        struct.pack_into('>I', body, 24, lun.chunk_blocks)
        struct.pack_into('>Q', body, 32, MAX_WRITE_SAME_BLOCKS)
        body = bytes(body)
    elif page == 0xb1:
        body = bytearray(0x3c)
        struct.pack_into('>H', body, 0, 1)                  # non-rotating
        body = bytes(body)
    elif page == 0xb2:
        # UNMAP and WRITE SAME(16) unmap; unmapped blocks read as zeros;
        # thin provisioned.
        body = bytes([0x00, 0xc4, 0x02, 0x00])
    else:
        raise SCSIError(*INVALID_FIELD)
    return bytes([0x00, page]) + struct.pack('>H', len(body)) + body


def _alloc(cdb, offset, size):
    fmt = {1: '>B', 2: '>H', 4: '>I'}[size]
    return struct.unpack_from(fmt, cdb, offset)[0]


def _mode_pages(page):
    caching = bytes([0x08, 0x12, 0x04] + [0] * 17)          # WCE
    control = bytes([0x0a, 0x0a, 0x02] + [0] * 9)
    if page == 0x3f:
        return caching + control
    if page == 0x08:
        return caching
    if page == 0x0a:
        return control
    raise SCSIError(*INVALID_FIELD)


def execute(lun, cdb, data_out=b'', report_luns=(), partial=False):
    """Run one command; never raises for SCSI-level errors.

    ``partial``: the initiator sent less data than the CDB names (its
    expected length was shorter); a write stores just what was sent.
    """
    try:
        data = _dispatch(lun, cdb, data_out, report_luns, partial)
        return GOOD, data, None
    except SCSIError as e:
        return CHECK_CONDITION, b'', sense(e.key, e.asc, e.ascq)


def _range(lun, lba, blocks):
    if lba + blocks > lun.blocks:
        raise SCSIError(*LBA_OUT_OF_RANGE)
    if blocks > MAX_TRANSFER_BLOCKS:
        raise SCSIError(*INVALID_FIELD)


def _dispatch(lun, cdb, data_out, report_luns, partial=False):
    op = cdb[0]
    if op == 0x12:                                          # INQUIRY
        length = _alloc(cdb, 3, 2)
        if cdb[1] & 0x01:
            if lun is None:
                raise SCSIError(*LUN_NOT_SUPPORTED)
            return _vpd(lun, cdb[2])[:length]
        if cdb[2]:
            raise SCSIError(*INVALID_FIELD)
        return _inquiry_standard(lun)[:length]
    if op == 0xa0:                                          # REPORT LUNS
        length = _alloc(cdb, 6, 4)
        body = b''.join(encode_lun(n) for n in sorted(report_luns))
        return (struct.pack('>I', len(body)) + bytes(4) + body)[:length]
    if op == 0x03:                                          # REQUEST SENSE
        return sense(0, 0, 0)[:cdb[4]]
    if lun is None:
        raise SCSIError(*LUN_NOT_SUPPORTED)
    if op in (0x00, 0x1b, 0x1e):        # TUR, START STOP, PREVENT ALLOW
        return b''
    if op == 0x25:                                          # READ CAPACITY10
        last = min(lun.blocks - 1, 0xffffffff)
        return struct.pack('>II', last, BLOCK)
    if op == 0x9e and cdb[1] & 0x1f == 0x10:              # READ CAPACITY16
        length = _alloc(cdb, 10, 4)
        data = bytearray(32)
        struct.pack_into('>QI', data, 0, lun.blocks - 1, BLOCK)
        data[14] = 0xc0                                     # LBPME, LBPRZ
        return bytes(data)[:length]
    if op == 0x9e and cdb[1] & 0x1f == 0x12:                # GET LBA STATUS
        return _lba_status(lun, cdb)
    if op in READS:
        lba, blocks = _rw_range(cdb)
        _range(lun, lba, blocks)
        if op != 0x08 and cdb[1] & 0xe0:
            raise SCSIError(*INVALID_FIELD)     # no protection information
        return lun.read(lba * BLOCK, blocks * BLOCK)
    if op in WRITES:
        lba, blocks = _rw_range(cdb)
        _range(lun, lba, blocks)
        if op != 0x0a and cdb[1] & 0xe0:
            raise SCSIError(*INVALID_FIELD)     # no protection information
        if lun.read_only:
            raise SCSIError(*WRITE_PROTECTED)
        if len(data_out) != blocks * BLOCK and not (
                partial and len(data_out) < blocks * BLOCK):
            raise SCSIError(*INVALID_FIELD)
        lun.write(lba * BLOCK, data_out)
        if op != 0x0a and cdb[1] & 0x08:                    # FUA
            lun.flush()
        return b''
    if op in (0x35, 0x91):                                  # SYNC CACHE
        lun.flush()
        return b''
    if op == 0x42:                                          # UNMAP
        return _unmap(lun, data_out)
    if op == 0x93:                                          # WRITE SAME(16)
        lba, blocks = struct.unpack_from('>QI', cdb, 2)
        if (cdb[1] & 0xf0 or not blocks or
                blocks > MAX_WRITE_SAME_BLOCKS):
            # No protection information, no ANCHOR; WSNZ and the length
            # limit are announced in VPD B0.
            raise SCSIError(*INVALID_FIELD)
        if lba + blocks > lun.blocks:
            raise SCSIError(*LBA_OUT_OF_RANGE)
        if lun.read_only:
            raise SCSIError(*WRITE_PROTECTED)
        if cdb[1] & 0x08 or data_out == bytes(len(data_out)):
            lun.unmap(lba * BLOCK, blocks * BLOCK)
        else:
            if len(data_out) != BLOCK or blocks > MAX_TRANSFER_BLOCKS:
                raise SCSIError(*INVALID_FIELD)
            lun.write(lba * BLOCK, data_out * blocks)
        return b''
    if op in (0x1a, 0x5a):                                  # MODE SENSE
        pages = _mode_pages(cdb[2] & 0x3f)
        if op == 0x1a:
            # Device-specific parameter: WP, and DPOFUA (supported).
            data = bytes([len(pages) + 3, 0x00,
                          (0x80 if lun.read_only else 0) | 0x10,
                          0x00]) + pages
            return data[:cdb[4]]
        data = struct.pack('>HBBHH', len(pages) + 6, 0,
                           (0x80 if lun.read_only else 0) | 0x10, 0,
                           0) + pages
        return data[:_alloc(cdb, 7, 2)]
    raise SCSIError(*INVALID_OPCODE)


def _lba_status(lun, cdb):
    lba = struct.unpack_from('>Q', cdb, 2)[0]
    length = _alloc(cdb, 10, 4)
    if lba >= lun.blocks:
        raise SCSIError(*LBA_OUT_OF_RANGE)
    limit = min(lun.blocks - lba, MAX_UNMAP_BLOCKS) * BLOCK
    allocated, run = lun.allocated_run(lba * BLOCK, limit)
    # Runs are in whole chunks; report from the asked LBA on.
    blocks = max(1, run // BLOCK)
    descriptor = struct.pack('>QIB3x', lba, blocks, 0 if allocated else 1)
    return (struct.pack('>I', len(descriptor) + 4) + bytes(4) +
            descriptor)[:length]


def _rw_range(cdb):
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


def _unmap(lun, params):
    if lun.read_only:
        raise SCSIError(*WRITE_PROTECTED)
    if len(params) < 8:
        return b''
    length = struct.unpack_from('>H', params, 2)[0]
    descriptors = params[8:8 + length]
    if len(descriptors) % 16 or len(descriptors) // 16 > \
            MAX_UNMAP_DESCRIPTORS:
        raise SCSIError(*PARAMETER_LIST_ERROR)
    ranges = []
    for off in range(0, len(descriptors), 16):
        lba, blocks = struct.unpack_from('>QI', descriptors, off)
        if lba + blocks > lun.blocks:
            raise SCSIError(*LBA_OUT_OF_RANGE)
        ranges.append((lba, blocks))
    for lba, blocks in ranges:
        if blocks:
            lun.unmap(lba * BLOCK, blocks * BLOCK)
    return b''


def encode_lun(number):
    if number < 256:
        return bytes([0, number]) + bytes(6)
    return bytes([0x40 | (number >> 8), number & 0xff]) + bytes(6)


def decode_lun(raw):
    if raw[0] & 0xc0 == 0x40:
        return ((raw[0] & 0x3f) << 8) | raw[1]
    return raw[1]
