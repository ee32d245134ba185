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

"""pack.py builds the Sunbeam charm into a zip Juju can deploy."""

import os
import stat
import subprocess
import sys
import tempfile
import unittest
import zipfile

import yaml

CHARM = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PACK = os.path.join(os.path.dirname(CHARM), 'pack.py')


class PackTestCase(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.mkdtemp()
        subprocess.run([sys.executable, PACK, CHARM, '--output', cls.out],
                       check=True, capture_output=True)
        cls.zip = zipfile.ZipFile(os.path.join(cls.out,
                                               'cinder-volume-flash.charm'))
        cls.names = set(cls.zip.namelist())

    def read_yaml(self, name):
        return yaml.safe_load(self.zip.read(name))

    def test_metadata_is_a_cinder_volume_subordinate(self):
        meta = self.read_yaml('metadata.yaml')
        self.assertEqual('cinder-volume-flash', meta['name'])
        self.assertIs(True, meta['subordinate'])
        self.assertEqual({'interface': 'cinder-volume', 'scope': 'container',
                          'limit': 1}, meta['requires']['cinder-volume'])
        self.assertNotIn('provides', meta)

    def test_credentials_are_secrets(self):
        options = self.read_yaml('config.yaml')['options']
        for name in ('credentials', 'replication-credentials',
                     'chap-credentials'):
            self.assertEqual('secret', options[name]['type'], name)
        self.assertFalse([name for name, option in options.items()
                          if 'password' in name])

    def test_code_shared_modules_and_dependencies(self):
        for name in ('src/charm.py', 'src/snapd.py', 'src/backend.py',
                     'src/juju_secrets.py', 'venv/ops/__init__.py'):
            self.assertIn(name, self.names)
        mode = self.zip.getinfo('dispatch').external_attr >> 16
        self.assertTrue(mode & stat.S_IXUSR)
        mode = self.zip.getinfo('src/charm.py').external_attr >> 16
        self.assertTrue(mode & stat.S_IXUSR)
        self.assertFalse([n for n in self.names if '__pycache__' in n])
        self.assertFalse([n for n in self.names if n.startswith('tests/')])
