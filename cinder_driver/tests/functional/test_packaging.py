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

"""Entry points as operators and Tempest see them after installation."""

import os
import re
import subprocess
import sys

import fixtures
import testtools

from cinder_driver.common import opts

BIN = os.path.dirname(sys.executable)


def _run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


class EntryPointsTestCase(testtools.TestCase):

    def test_oslo_config_generator_prints_every_option(self):
        proc = _run(os.path.join(BIN, 'oslo-config-generator'),
                    '--namespace', 'cinder_flash')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('[backend_defaults]', proc.stdout)
        for _group, options in opts.list_opts():
            for opt in options:
                self.assertRegex(proc.stdout,
                                 r'(?m)^#%s =' % re.escape(opt.name))

    def test_generator_config_file_writes_the_sample(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))))
        out = os.path.join(self.useFixture(fixtures.TempDir()).path,
                           'cinder-flash.conf.sample')
        proc = _run(os.path.join(BIN, 'oslo-config-generator'),
                    '--config-file', os.path.join(
                        root, 'tools', 'config-generator',
                        'cinder-flash.conf'), '--output-file', out)
        self.assertEqual(0, proc.returncode, proc.stderr)
        with open(out) as f:
            self.assertIn('#flash_rest_read_timeout = 60.0', f.read())

    def test_tempest_lists_the_plugin(self):
        proc = _run(os.path.join(BIN, 'tempest'), 'list-plugins')
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('cinder_flash', proc.stdout)
        self.assertIn('tempest_plugin.plugin:CinderFlashTempestPlugin',
                      proc.stdout)

    def test_console_scripts_installed(self):
        for script in ('cinder-flash', 'cinder-flash-array'):
            proc = _run(os.path.join(BIN, script), '--help')
            self.assertEqual(0, proc.returncode, proc.stderr)
