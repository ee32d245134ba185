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

"""``pip install cinder-flash`` on a cinder-volume host adds only the drivers.

This test environment is such a host: Cinder and its dependencies,
nothing of the reference array's engine. The wheel is installed into a
fresh virtualenv that sees the host's packages, with no package index, as
pip would on a host where Cinder is already installed.
"""

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import zipfile

import fixtures
from packaging import requirements
import testtools

from tools.lean_wheel import wheel

ENGINE = ('zstandard', 'blake3', 'cryptography')
# What the reference array's engine alone needs: Cinder itself needs
# cryptography, so a Cinder host has it whatever we declare.
ENGINE_ONLY = ('zstandard', 'blake3')
# Cinder's objects first, as cinder-volume registers them at start.
LOAD = ('from cinder import objects; objects.register_all(); '
        'import cinder_driver.k2.driver, cinder_driver.linstor.driver; '
        'print(cinder_driver.__file__)')


class LeanInstallTestCase(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.dist = fixtures.TempDir()
        cls.dist.setUp()
        cls.wheel = wheel.build(cls.dist.path)

    @classmethod
    def tearDownClass(cls):
        cls.dist.cleanUp()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        present = [name for name in ENGINE_ONLY
                   if importlib.util.find_spec(name) is not None]
        self.assertEqual([], present, 'this environment must be a Cinder '
                         'host without the array engine')
        self.assertIsNotNone(importlib.util.find_spec('cinder'))

    def requires(self):
        with zipfile.ZipFile(self.wheel) as archive:
            name = [n for n in archive.namelist()
                    if n.endswith('.dist-info/METADATA')][0]
            text = archive.read(name).decode()
        return [requirements.Requirement(line.split(':', 1)[1].strip())
                for line in text.splitlines()
                if line.startswith('Requires-Dist:')]

    def test_engine_dependencies_only_in_the_array_extra(self):
        plain, array = set(), set()
        for req in self.requires():
            name = req.name.lower()
            if req.marker is None:
                plain.add(name)
            elif req.marker.evaluate({'extra': 'array'}) and \
                    not req.marker.evaluate({'extra': ''}):
                array.add(name)
        self.assertEqual(set(), plain & set(ENGINE))
        self.assertEqual(set(ENGINE), array)
        self.assertIn('cinder', plain)

    def test_the_wheel_carries_the_native_data_path(self):
        # Built where a compiler and the headers are (tools/run installs
        # them); elsewhere setup.py leaves it out and the array runs its
        # pure-Python data path.
        with zipfile.ZipFile(self.wheel) as archive:
            built = [n for n in archive.namelist()
                     if n.startswith('reference_array/native/_native.')]
        self.assertEqual(1, len(built), built)

    def venv(self):
        """A fresh virtualenv that sees this host's packages."""
        path = self.useFixture(fixtures.TempDir()).path
        subprocess.run([sys.executable, '-m', 'venv', path], check=True,
                       timeout=300)
        python = os.path.join(path, 'bin', 'python')
        site = subprocess.run(
            [python, '-c', 'import sysconfig; '
             'print(sysconfig.get_paths()["purelib"])'],
            check=True, capture_output=True, text=True).stdout.strip()
        with open(os.path.join(site, 'cinder-host.pth'), 'w') as f:
            f.write(sysconfig.get_paths()['purelib'] + '\n')
        return path, python, site

    def pip(self, python, *args):
        return subprocess.run([python, '-m', 'pip', '--disable-pip-version-'
                               'check', 'install', '--no-index'] +
                              list(args), capture_output=True, text=True,
                              timeout=600)

    def test_install_adds_only_the_drivers(self):
        path, python, site = self.venv()
        report = os.path.join(path, 'report.json')
        proc = self.pip(python, '--report', report, self.wheel)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
        with open(report) as f:
            installed = [item['metadata']['name'] for item in
                         json.load(f)['install']]
        self.assertEqual(['cinder-flash'], installed)
        self.assertEqual([], [name for name in os.listdir(site)
                              if name.lower().startswith(ENGINE_ONLY)])
        # The drivers load as cinder-volume loads them, from that install,
        # and the operator command runs.
        loaded = subprocess.run([python, '-c', LOAD], capture_output=True,
                                text=True, cwd=path, timeout=300)
        self.assertEqual(0, loaded.returncode, loaded.stderr)
        self.assertEqual(site, os.path.dirname(os.path.dirname(
            loaded.stdout.strip())))
        proc = subprocess.run([os.path.join(path, 'bin', 'cinder-flash'),
                               '--help'], capture_output=True, text=True,
                              cwd=path, timeout=300)
        self.assertEqual(0, proc.returncode, proc.stderr)
        # The reference array's command, without its extra, names it.
        proc = subprocess.run([os.path.join(path, 'bin',
                                            'cinder-flash-array'), 'serve',
                               '--data-dir', os.path.join(path, 'data')],
                              capture_output=True, text=True, cwd=path,
                              timeout=300)
        self.assertEqual(2, proc.returncode, proc.stderr)
        self.assertIn("pip install 'cinder-flash[array]'", proc.stderr)
        self.assertNotIn('Traceback', proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(path, 'data')))

    def test_the_array_extra_asks_for_the_engine(self):
        _path, python, _site = self.venv()
        proc = self.pip(python, '--dry-run', self.wheel + '[array]')
        self.assertNotEqual(0, proc.returncode)
        self.assertRegex(proc.stderr, r'No matching distribution found '
                         r'for (zstandard|blake3)')
