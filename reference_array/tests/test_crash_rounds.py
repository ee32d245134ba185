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

"""Crash rounds of the reference array (``tox -e soak`` runs 20)."""

import os
import sys

import fixtures
import testtools

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
from tools import crash  # noqa: E402


class CrashRoundsTestCase(testtools.TestCase):

    def test_acknowledged_writes_survive_kill_9(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        acked, errors = crash.run_rounds(tmp, 3, seed=5)
        self.assertEqual([], errors)
        self.assertGreaterEqual(acked, 3 * crash.WRITES_PER_ROUND)

    def test_verification_sees_a_lost_write(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        array = crash.Array(tmp)
        array.start()
        self.addCleanup(array.stop)
        url = array.url(crash._setup(array))
        result = crash._qemu_io(url, 'write -P 5 0 %d' % crash.BLOCK,
                                'flush')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual([], crash.verify(url, [(0, 5)]))
        self.assertEqual(1, len(crash.verify(url, [(0, 6)])))
