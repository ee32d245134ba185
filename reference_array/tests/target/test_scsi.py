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

"""SCSI command sets as opcode tables, over an in-memory device."""

import struct
from unittest import mock

import testtools

from reference_array.target import scsi
from reference_array.target.scsi import sbc
from reference_array.target.scsi import sense
from reference_array.target.scsi import spc


class MemoryDevice(object):

    blocks = 2048
    chunk_blocks = 128
    serial = 'REFA000000000001'
    naa = bytes([0x60]) + bytes(range(1, 16))

    def __init__(self, read_only=False):
        self.read_only = read_only
        self.data = bytearray(self.blocks * sbc.BLOCK)
        self.calls = []

    def read(self, offset, length):
        return bytes(self.data[offset:offset + length])

    def write(self, offset, data):
        self.calls.append(('write', offset, len(data)))
        self.data[offset:offset + len(data)] = data

    def unmap(self, offset, length):
        self.calls.append(('unmap', offset, length))
        self.data[offset:offset + length] = bytes(length)

    def flush(self):
        self.calls.append(('flush',))

    def allocated_run(self, offset, limit):
        return True, 65536


def cdb(*head):
    return bytes(head) + bytes(16 - len(head))


def write10(lba, blocks, flags=0):
    return cdb(0x2a, flags, *lba.to_bytes(4, 'big'), 0,
               *blocks.to_bytes(2, 'big'))


def read10(lba, blocks):
    return cdb(0x28, 0, *lba.to_bytes(4, 'big'), 0,
               *blocks.to_bytes(2, 'big'))


class TableTestCase(testtools.TestCase):

    def _sense(self, result):
        status, data, sense_data = result
        self.assertEqual((scsi.CHECK_CONDITION, b''), (status, data))
        return sense_data[2], sense_data[12], sense_data[13]

    def test_block_table_reuses_the_spc_handlers(self):
        for opcode, op in spc.OPS.items():
            self.assertIs(op, sbc.OPS[opcode])
        self.assertIs(sbc.BLOCK_DEVICE.ops, sbc.OPS)

    def test_unknown_opcode(self):
        self.assertEqual(sense.INVALID_OPCODE, self._sense(
            scsi.execute(MemoryDevice(), cdb(0x77))))
        # A service action the table does not know is an unknown opcode.
        self.assertEqual(sense.INVALID_OPCODE, self._sense(
            scsi.execute(MemoryDevice(), cdb(0x9e, 0x11))))

    def test_without_a_lun_only_inquiry_report_luns_and_sense(self):
        for opcode in (0x00, 0x25, 0x28, 0x2a, 0x77):
            self.assertEqual(sense.LUN_NOT_SUPPORTED, self._sense(
                scsi.execute(None, cdb(opcode))), hex(opcode))
        status, data, _sense = scsi.execute(None, cdb(0x12, 0, 0, 0, 96))
        self.assertEqual((scsi.GOOD, 0x7f), (status, data[0]))
        status, data, _sense = scsi.execute(
            None, cdb(0xa0, 0, 0, 0, 0, 0, 0, 0, 1, 0), report_luns=[0, 300])
        self.assertEqual(scsi.GOOD, status)
        self.assertEqual(struct.pack('>I', 16) + bytes(4) +
                         scsi.encode_lun(0) + scsi.encode_lun(300), data)
        self.assertEqual(300, scsi.decode_lun(scsi.encode_lun(300)))

    def test_vpd_pages_of_a_block_device(self):
        status, data, _sense = scsi.execute(MemoryDevice(),
                                            cdb(0x12, 1, 0x00, 0, 255))
        self.assertEqual(scsi.GOOD, status)
        self.assertEqual(bytes([0x00, 0x80, 0x83, 0xb0, 0xb1, 0xb2]),
                         data[4:])
        for page in data[4:]:
            status, body, _sense = scsi.execute(MemoryDevice(),
                                                cdb(0x12, 1, page, 0, 255))
            self.assertEqual((scsi.GOOD, page), (status, body[1]))
        self.assertEqual(sense.INVALID_FIELD, self._sense(scsi.execute(
            MemoryDevice(), cdb(0x12, 1, 0x55, 0, 255))))

    def test_mode_pages_of_a_block_device(self):
        status, data, _sense = scsi.execute(MemoryDevice(True),
                                            cdb(0x1a, 0, 0x3f, 0, 255))
        self.assertEqual(scsi.GOOD, status)
        self.assertEqual(0x90, data[2])                     # WP, DPOFUA
        self.assertEqual(sbc.CACHING_PAGE + spc.CONTROL_PAGE, data[4:])

    def test_data_out_length_comes_from_the_table(self):
        self.assertEqual(8 * sbc.BLOCK, scsi.data_out_length(write10(0, 8)))
        self.assertEqual(0, scsi.data_out_length(read10(0, 8)))
        self.assertEqual(24, scsi.data_out_length(
            cdb(0x42, 0, 0, 0, 0, 0, 0, 0, 24)))
        self.assertEqual(sbc.BLOCK, scsi.data_out_length(cdb(0x93)))
        self.assertEqual(0, scsi.data_out_length(cdb(0x93, 0x01)))
        self.assertEqual(0, scsi.data_out_length(cdb(0x77)))

    def test_write_read_and_fua(self):
        device = MemoryDevice()
        data = bytes(range(256)) * 4
        self.assertEqual((scsi.GOOD, b'', None), scsi.execute(
            device, write10(3, 2, flags=0x08), data))
        self.assertEqual([('write', 3 * 512, 1024), ('flush',)],
                         device.calls)
        self.assertEqual((scsi.GOOD, data, None),
                         scsi.execute(device, read10(3, 2)))
        self.assertEqual(sense.LBA_OUT_OF_RANGE, self._sense(
            scsi.execute(device, read10(2047, 2))))
        self.assertEqual(sense.WRITE_PROTECTED, self._sense(
            scsi.execute(MemoryDevice(True), write10(0, 2), data)))

    def test_unmap(self):
        device = MemoryDevice()
        params = struct.pack('>HH4x', 22, 16) + struct.pack('>QI4x', 8, 4)
        self.assertEqual((scsi.GOOD, b'', None), scsi.execute(
            device, cdb(0x42, 0, 0, 0, 0, 0, 0, 0, 24), params))
        self.assertEqual([('unmap', 8 * 512, 4 * 512)], device.calls)

    def test_a_failing_device_fails_the_command_not_the_session(self):
        device = MemoryDevice()
        device.write = mock.Mock(side_effect=RuntimeError('lost'))
        self.assertEqual(sense.INTERNAL_FAILURE, self._sense(
            scsi.execute(device, write10(0, 1), bytes(512))))
        device.write = mock.Mock(side_effect=scsi.SCSIError(
            *scsi.SPACE_ALLOCATION_FAILED))
        self.assertEqual((0x07, 0x27, 0x07), self._sense(
            scsi.execute(device, write10(0, 1), bytes(512))))

    def test_check_before_data(self):
        device = MemoryDevice()
        self.assertIsNone(scsi.check(device, write10(0, 8)))
        for lun, command, expected in (
                (None, write10(0, 8), sense.LUN_NOT_SUPPORTED),
                (device, write10(2047, 2), sense.LBA_OUT_OF_RANGE),
                (MemoryDevice(True), write10(0, 8), sense.WRITE_PROTECTED)):
            found = scsi.check(lun, command)
            self.assertEqual(expected, (found[2], found[12], found[13]))
        self.assertEqual([], device.calls)
