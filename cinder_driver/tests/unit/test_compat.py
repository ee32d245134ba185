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

"""The series table against the Cinder installed in this environment.

The unit tier runs on Cinder 24, 28 and 29: each run checks the table's
claims about its own series against Cinder itself.
"""

import subprocess
import sys

import testtools

from cinder_driver.common import compat

# Cinder's policy defaults as cinder-api sees them, in a clean process.
POLICY = '''
from oslo_config import cfg
from cinder.common import config
from cinder import policy
group = cfg.CONF.oslo_policy
print('enforce_scope' not in group or group.enforce_scope)
'''


class CompatTestCase(testtools.TestCase):

    def test_installed_cinder_is_a_supported_series(self):
        major = compat.cinder_major()
        self.assertIn(major, range(compat.OLDEST, compat.NEWEST + 1))
        self.assertTrue(compat.series(major))

    def test_scope_default_matches_cinder(self):
        proc = subprocess.run([sys.executable, '-c', POLICY],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        enforced = proc.stdout.strip().splitlines()[-1] == 'True'
        self.assertEqual(
            compat.scope_enforced_by_default(compat.cinder_major()),
            enforced)

    def test_series_names(self):
        self.assertEqual(('2024.1', '2026.1', '2026.2'), (
            compat.series(24), compat.series(28), compat.series(29)))
        self.assertEqual((False, False, True), tuple(
            compat.scope_enforced_by_default(m) for m in (24, 28, 29)))
        self.assertEqual(28, compat.cinder_major('28.0.0'))

    def test_outside_the_supported_series(self):
        for major in (23, 30):
            e = self.assertRaises(compat.UnsupportedCinder, compat.series,
                                  major)
            self.assertIn('Cinder %d is not supported' % major, str(e))
            self.assertIn('Cinder 24 (2024.1) to 29 (2026.2)', str(e))
        self.assertRaises(compat.UnsupportedCinder, compat.cinder_major,
                          'master')

    def test_master_is_the_newest_series(self):
        # pbr's versions of Cinder's master branch after 29.0.0rc1.
        for version in ('29.0.0.0rc2.dev14', '29.1.0.dev3',
                        '30.0.0.0b1.dev2'):
            self.assertTrue(compat.is_master(version), version)
            self.assertEqual(29, compat.cinder_major(version))
        for version in ('29.0.0', '28.0.0', '24.5.0'):
            self.assertFalse(compat.is_master(version), version)
        e = self.assertRaises(compat.UnsupportedCinder, compat.series,
                              compat.cinder_major('31.0.0.dev1'))
        self.assertIn('Cinder 31 is not supported', str(e))

    def test_command_prints_what_devstack_reads(self):
        proc = subprocess.run([sys.executable, '-m',
                               'cinder_driver.common.compat'],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        major, name, scoped = proc.stdout.split()
        self.assertEqual((compat.series(int(major)),
                          str(compat.scope_enforced_by_default(
                              int(major)))), (name, scoped))
