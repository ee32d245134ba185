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

"""PDU header fields by name, and the PDUs the target builds."""

import testtools

from reference_array.target.iscsi import pdu as pdus

Op = pdus.Opcode

# (field, byte offset, size in bytes) as RFC 7143 section 11 lays them out.
NUMBER_FIELDS = [
    ('flags', 1, 1), ('response', 2, 1), ('reason', 2, 1), ('status', 3, 1),
    ('ahs_length', 4, 1), ('tsih', 14, 2), ('itt', 16, 4), ('ttt', 20, 4),
    ('expected_length', 20, 4), ('cmd_sn', 24, 4), ('stat_sn', 24, 4),
    ('exp_stat_sn', 28, 4), ('exp_cmd_sn', 28, 4), ('max_cmd_sn', 32, 4),
    ('status_class', 36, 1), ('status_detail', 37, 1), ('data_sn', 36, 4),
    ('r2t_sn', 36, 4), ('exp_data_sn', 36, 4), ('buffer_offset', 40, 4),
    ('residual', 44, 4), ('desired_length', 44, 4),
]
RAW_FIELDS = [('lun', 8, 8), ('isid', 8, 6), ('cdb', 32, 16)]
SEQUENCE = (7, 100, 131)


class FieldTestCase(testtools.TestCase):

    def test_numbers_sit_where_the_rfc_puts_them(self):
        for name, offset, size in NUMBER_FIELDS:
            pdu = pdus.PDU()
            value = int.from_bytes(bytes(range(0x11, 0x11 + size)), 'big')
            setattr(pdu, name, value)
            self.assertEqual(value, getattr(pdu, name), name)
            self.assertEqual(value.to_bytes(size, 'big'),
                             bytes(pdu.bhs[offset:offset + size]), name)
            others = pdu.bhs[:offset] + pdu.bhs[offset + size:]
            self.assertEqual(bytes(pdus.BHS_LENGTH - size), bytes(others),
                             name)

    def test_raw_fields_round_trip(self):
        for name, offset, size in RAW_FIELDS:
            pdu = pdus.PDU()
            value = bytes(range(1, size + 1))
            setattr(pdu, name, value)
            self.assertEqual(value, bytes(getattr(pdu, name)), name)
            self.assertEqual(value, bytes(pdu.bhs[offset:offset + size]))
            self.assertRaises(ValueError, setattr, pdu, name,
                              bytes(size + 1))

    def test_bits_share_their_byte(self):
        pdu = pdus.PDU()
        pdu.opcode = Op.LOGIN
        pdu.immediate = 1
        pdu.transit, pdu.csg, pdu.nsg = 1, 1, 3
        self.assertEqual((0x43, 0x87), (pdu.bhs[0], pdu.bhs[1]))
        self.assertEqual((Op.LOGIN, 1), (pdu.opcode, pdu.immediate))
        self.assertEqual((1, 1, 3), (pdu.transit, pdu.csg, pdu.nsg))
        pdu.csg = 0
        self.assertEqual((1, 0, 3), (pdu.transit, pdu.csg, pdu.nsg))
        pdu.immediate = 0
        self.assertEqual((0x03, Op.LOGIN), (pdu.bhs[0], pdu.opcode))

    def test_data_length_is_three_bytes(self):
        pdu = pdus.PDU()
        pdu.ahs_length = 0xff
        pdu.data_length = 0x123456
        self.assertEqual(0x123456, pdu.data_length)
        self.assertEqual(b'\xff\x12\x34\x56', bytes(pdu.bhs[4:8]))
        self.assertEqual(0x123456, pdus.data_length(pdu.bhs))
        self.assertEqual(0xff * 4, pdus.ahs_bytes(pdu.bhs))

    def test_wire_round_trip_pads_the_data(self):
        pdu = pdus.PDU(data=b'abcde')
        pdu.opcode, pdu.itt, pdu.data_length = Op.NOP_OUT, 9, 5
        wire = pdu.to_bytes()
        self.assertEqual(48 + 8, len(wire))
        back = pdus.PDU.parse(wire)
        self.assertEqual((Op.NOP_OUT, 9, b'abcde'),
                         (back.opcode, back.itt, back.data))

    def test_text_round_trip(self):
        pairs = [('InitiatorName', 'iqn.x:y'), ('MaxBurstLength', '512'),
                 ('X', 'a=b')]
        self.assertEqual(pairs, pdus.parse_text(pdus.build_text(pairs)))
        self.assertEqual(3, pdus.pad(1))
        self.assertEqual(0, pdus.pad(8))


class BuilderTestCase(testtools.TestCase):

    def _read(self, pair, opcode):
        header, data = pair
        self.assertEqual(pdus.BHS_LENGTH, len(header))
        pdu = pdus.PDU(bytearray(header), data)
        self.assertEqual(opcode, pdu.opcode)
        self.assertEqual(len(data), pdu.data_length)
        return pdu

    def _sequence(self, pdu):
        return pdu.stat_sn, pdu.exp_cmd_sn, pdu.max_cmd_sn

    def test_data_in(self):
        lun = bytes([0, 3]) + bytes(6)
        pdu = self._read(pdus.data_in(
            lun, 0x42, SEQUENCE, 5, 8192, pdus.FINAL | pdus.STATUS |
            pdus.UNDERFLOW, residual=100, data=b'x' * 10), Op.DATA_IN)
        self.assertEqual((lun, 0x42, pdus.NO_TAG, 5, 8192, 100),
                         (bytes(pdu.lun), pdu.itt, pdu.ttt, pdu.data_sn,
                          pdu.buffer_offset, pdu.residual))
        self.assertEqual(0x83, pdu.flags)
        self.assertEqual(SEQUENCE, self._sequence(pdu))

    def test_r2t(self):
        lun = bytes([0, 1]) + bytes(6)
        pdu = self._read(pdus.r2t(lun, 0x42, 2, SEQUENCE, 2, 65536, 262144),
                         Op.R2T)
        self.assertEqual((lun, 0x42, 2, 2, 65536, 262144, pdus.FINAL),
                         (bytes(pdu.lun), pdu.itt, pdu.ttt, pdu.r2t_sn,
                          pdu.buffer_offset, pdu.desired_length, pdu.flags))
        self.assertEqual(SEQUENCE, self._sequence(pdu))

    def test_scsi_response_residuals(self):
        for overflow, underflow, flags, residual in (
                (0, 0, pdus.FINAL, 0),
                (512, -512, pdus.FINAL | pdus.OVERFLOW, 512),
                (0, 4096, pdus.FINAL | pdus.UNDERFLOW, 4096)):
            pdu = self._read(pdus.scsi_response(
                0x42, SEQUENCE, 0x02, overflow, underflow, b'sense'),
                Op.SCSI_RESPONSE)
            self.assertEqual((flags, residual, 0x02, 0, 0x42, b'sense'),
                             (pdu.flags, pdu.residual, pdu.status,
                              pdu.response, pdu.itt, pdu.data))
            self.assertEqual(SEQUENCE, self._sequence(pdu))

    def test_login_response(self):
        isid = bytes([0x80, 0, 0, 1, 2, 3])
        pdu = self._read(pdus.login_response(
            isid, 7, 0x42, SEQUENCE, True, pdus.OPERATIONAL,
            pdus.FULL_FEATURE, data=b'k=v\0'), Op.LOGIN_RESPONSE)
        self.assertEqual((isid, 7, 0x42, 1, 1, 3, 0, 0),
                         (bytes(pdu.isid), pdu.tsih, pdu.itt, pdu.transit,
                          pdu.csg, pdu.nsg, pdu.status_class,
                          pdu.status_detail))
        refused = self._read(pdus.login_response(
            isid, 0, 0x42, SEQUENCE, False, pdus.SECURITY, 0, 2, 1),
            Op.LOGIN_RESPONSE)
        self.assertEqual((0, 0, 0, 2, 1),
                         (refused.transit, refused.csg, refused.nsg,
                          refused.status_class, refused.status_detail))

    def test_reject_returns_the_header(self):
        rejected = pdus.PDU()
        rejected.opcode, rejected.itt = Op.DATA_OUT, 0x42
        pdu = self._read(pdus.reject(SEQUENCE, pdus.PROTOCOL_ERROR,
                                     rejected.bhs), Op.REJECT)
        self.assertEqual((pdus.PROTOCOL_ERROR, pdus.NO_TAG,
                          bytes(rejected.bhs)),
                         (pdu.reason, pdu.itt, pdu.data))

    def test_other_replies(self):
        for pair, opcode in (
                (pdus.nop_in(0x42, SEQUENCE, b'ping'), Op.NOP_IN),
                (pdus.text_response(0x42, SEQUENCE, b'a=b\0'),
                 Op.TEXT_RESPONSE),
                (pdus.task_management_response(0x42, SEQUENCE),
                 Op.TASK_MANAGEMENT_RESPONSE),
                (pdus.logout_response(0x42, SEQUENCE),
                 Op.LOGOUT_RESPONSE)):
            pdu = self._read(pair, opcode)
            self.assertEqual((0x42, pdus.FINAL, 0),
                             (pdu.itt, pdu.flags, pdu.response))
            self.assertEqual(SEQUENCE, self._sequence(pdu))
