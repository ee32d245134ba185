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

"""A short fault soak (``tox -e soak`` runs the long one)."""

import os
import sys

from cinder.tests.unit import test

from reference_array.tests import array_fixture

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
from tools import soak  # noqa: E402


class ShortSoakTestCase(test.TestCase):

    def test_array_and_driver_agree_after_faults(self):
        array = self.useFixture(array_fixture.ReferenceArray(
            args=['--fault-seed', '11'], fault_injection=True))
        counts, problems, fired = soak.run_soak(array.info, 200, seed=11)
        self.assertEqual([], problems)
        self.assertGreater(sum(rule['hits'] for rule in fired), 10)
        succeeded = sum(n for k, n in counts.items() if k.endswith(' ok'))
        failed = sum(n for k, n in counts.items()
                     if k.endswith(' failed') and
                     not k.startswith('follow-up'))
        self.assertGreater(succeeded, 100)
        self.assertGreater(failed, 0)
        self.assertEqual(0, sum(n for k, n in counts.items()
                                if k.startswith('follow-up') and
                                k.endswith('failed')))

    def test_failover_and_failback_under_faults(self):
        from reference_array import pairing
        array = self.useFixture(array_fixture.ReferenceArray(
            args=['--fault-seed', '12'], fault_injection=True))
        replica = self.useFixture(array_fixture.ReferenceArray(
            args=['--fault-seed', '12'], fault_injection=True))
        pairing.pair(array.info, replica.info, 'secondary')
        pairing.pair(replica.info, array.info, 'primary')
        counts, problems, fired = soak.run_soak(array.info, 150, seed=12,
                                                replica=replica.info)
        self.assertEqual([], problems)
        self.assertGreater(counts['failover: volumes moved'], 0)
        self.assertGreater(sum(rule['hits'] for rule in fired), 5)
