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

"""The operational key table: each key's reconcile rule and its rejects."""

import testtools

from reference_array.target.iscsi import errors
from reference_array.target.iscsi import params

# key -> [(offer, answer, {Negotiated attribute: value})]
RULES = {
    'HeaderDigest': [('None', 'None', {}), ('CRC32C,None', 'None', {}),
                     ('CRC32C', 'Reject', {})],
    'DataDigest': [('None', 'None', {}), ('CRC32C,None', 'None', {}),
                   ('CRC32C', 'Reject', {})],
    'MaxConnections': [('1', '1', {}), ('4', '1', {})],
    'InitialR2T': [('No', 'Yes', {}), ('Yes', 'Yes', {})],
    'ImmediateData': [('Yes', 'Yes', {'immediate_data': True}),
                      ('No', 'No', {'immediate_data': False})],
    # A declaration: the target keeps the initiator's, answers its own.
    'MaxRecvDataSegmentLength': [
        ('8192', '262144', {'max_send_segment': 8192}),
        ('1048576', '262144', {'max_send_segment': 1048576}),
        ('0x200', '262144', {'max_send_segment': 512})],
    'MaxBurstLength': [('16384', '16384', {'max_burst': 16384}),
                       ('1048576', '262144', {'max_burst': 262144}),
                       ('0x4000', '16384', {'max_burst': 16384})],
    'FirstBurstLength': [('8192', '8192', {'first_burst': 8192}),
                         ('262144', '65536', {'first_burst': 65536})],
    'DefaultTime2Wait': [('0', '2', {}), ('5', '5', {})],
    'DefaultTime2Retain': [('20', '0', {}), ('0', '0', {})],
    'MaxOutstandingR2T': [('8', '1', {}), ('1', '1', {})],
    'DataPDUInOrder': [('No', 'Yes', {}), ('Yes', 'Yes', {})],
    'DataSequenceInOrder': [('No', 'Yes', {}), ('Yes', 'Yes', {})],
    'ErrorRecoveryLevel': [('2', '0', {}), ('0', '0', {})],
    'IFMarker': [('Yes', 'No', {}), ('No', 'No', {})],
    'OFMarker': [('Yes', 'No', {}), ('No', 'No', {})],
}

NOT_NUMBERS = ['', 'abc', '-1', '+5', ' 5', '5 ', '1_000', '1e3', '0x',
               '0xg1', '\u0663', 'Reject', 'Irrelevant', '12' * 5000]
NOT_BOOLEANS = ['', 'yes', 'YES', 'True', '1', 'Yes,No', 'Irrelevant']
NOT_LISTS = ['', 'None,', ',None', 'None,,CRC32C']


class RuleTestCase(testtools.TestCase):

    def test_every_key_has_its_rule_tested(self):
        self.assertEqual(set(params.KEYS), set(RULES))

    def test_each_key_reconciles_by_its_rule(self):
        for key, cases in RULES.items():
            for offer, answer, recorded in cases:
                negotiated = params.Negotiated()
                reply = params.negotiate([(key, offer)], negotiated)
                self.assertEqual([(key, answer)], reply, (key, offer))
                for attribute, value in recorded.items():
                    self.assertEqual(value, getattr(negotiated, attribute),
                                     (key, offer))

    def test_defaults_until_negotiated(self):
        negotiated = params.Negotiated()
        self.assertEqual((8192, params.MAX_BURST, params.FIRST_BURST, True),
                         (negotiated.max_send_segment, negotiated.max_burst,
                          negotiated.first_burst,
                          negotiated.immediate_data))

    def test_login_keys_are_left_to_the_login(self):
        offered = [('InitiatorName', 'iqn.x:y'), ('TargetName', 'iqn.t'),
                   ('SessionType', 'Normal'), ('InitiatorAlias', 'a'),
                   ('AuthMethod', 'None'), ('CHAP_A', '5'),
                   ('X-com.example.Key', '1'), ('MaxBurstLength', '512')]
        self.assertEqual([('X-com.example.Key', 'NotUnderstood'),
                          ('MaxBurstLength', '512')],
                         params.negotiate(offered, params.Negotiated()))

    def test_answers_keep_the_offer_order(self):
        offered = [('MaxBurstLength', '4096'), ('HeaderDigest', 'None'),
                   ('FirstBurstLength', '4096')]
        self.assertEqual(['MaxBurstLength', 'HeaderDigest',
                          'FirstBurstLength'],
                         [key for key, _value in params.negotiate(
                             offered, params.Negotiated())])


class RejectTestCase(testtools.TestCase):

    def _refused(self, key, value):
        negotiated = params.Negotiated()
        before = dict(vars(negotiated))
        e = self.assertRaises(errors.LoginFailed, params.negotiate,
                              [(key, value)], negotiated)
        self.assertEqual((errors.LoginFailed.INITIATOR_ERROR,
                          errors.LoginFailed.MISCELLANEOUS),
                         (e.status_class, e.detail), (key, value))
        self.assertIn(key, str(e))
        self.assertLess(len(str(e)), 200)
        self.assertEqual(before, vars(negotiated), (key, value))

    def _keys(self, kind):
        return [key for key, row in params.KEYS.items()
                if isinstance(row.kind, kind)]

    def test_numbers_that_are_not_numbers(self):
        for key in self._keys(params.Number):
            for value in NOT_NUMBERS:
                self._refused(key, value)

    def test_numbers_out_of_range(self):
        for key in self._keys(params.Number):
            kind = params.KEYS[key].kind
            for value in (kind.high + 1, 1 << 64):
                self._refused(key, str(value))
            if kind.low:
                self._refused(key, str(kind.low - 1))
            self._refused(key, hex(kind.high + 1))

    def test_ranges_are_the_rfc_ones(self):
        ranges = {key: (params.KEYS[key].kind.low, params.KEYS[key].kind.high)
                  for key in self._keys(params.Number)}
        length = (512, 16777215)
        self.assertEqual({
            'MaxConnections': (1, 65535), 'MaxOutstandingR2T': (1, 65535),
            'MaxRecvDataSegmentLength': length, 'MaxBurstLength': length,
            'FirstBurstLength': length, 'DefaultTime2Wait': (0, 3600),
            'DefaultTime2Retain': (0, 3600), 'ErrorRecoveryLevel': (0, 2),
        }, ranges)

    def test_booleans_that_are_not_yes_or_no(self):
        for key in self._keys(params.Boolean):
            for value in NOT_BOOLEANS:
                self._refused(key, value)

    def test_lists_with_an_empty_choice(self):
        for key in self._keys(params.Choices):
            for value in NOT_LISTS:
                self._refused(key, value)
