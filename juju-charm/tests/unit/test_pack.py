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

"""pack.py builds a charm zip Juju can deploy."""

import os
import stat
import subprocess
import sys
import tempfile
import unittest
import zipfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class PackTestCase(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.mkdtemp()
        subprocess.run([sys.executable, os.path.join(ROOT, 'pack.py'),
                        '--output', cls.out], check=True,
                       capture_output=True)
        cls.zip = zipfile.ZipFile(os.path.join(cls.out,
                                               'cinder-flash.charm'))
        cls.names = set(cls.zip.namelist())

    def read_yaml(self, name):
        return yaml.safe_load(self.zip.read(name))

    def test_metadata_is_a_cinder_backend_subordinate(self):
        meta = self.read_yaml('metadata.yaml')
        self.assertEqual('cinder-flash', meta['name'])
        self.assertIs(True, meta['subordinate'])
        self.assertEqual({'interface': 'cinder-backend',
                          'scope': 'container'},
                         meta['provides']['storage-backend'])
        self.assertEqual('container', meta['requires']['juju-info']['scope'])
        self.assertIn('cinder-flash-wheel', meta['resources'])

    def test_config_carries_the_secret_options(self):
        options = self.read_yaml('config.yaml')['options']
        self.assertEqual('secret', options['credentials']['type'])
        self.assertEqual('secret',
                         options['replication-credentials']['type'])
        self.assertEqual('k2', options['backend-type']['default'])

    def test_manifest_names_the_base(self):
        manifest = self.read_yaml('manifest.yaml')
        self.assertEqual([{'name': 'ubuntu', 'channel': '24.04',
                           'architectures': ['amd64']}], manifest['bases'])

    def test_dispatch_and_hooks_are_executable(self):
        for name in ('dispatch', 'hooks/install', 'hooks/start',
                     'hooks/upgrade-charm', 'src/charm.py'):
            mode = self.zip.getinfo(name).external_attr >> 16
            self.assertTrue(mode & stat.S_IXUSR, name)
        self.assertIn(b'exec ./src/charm.py', self.zip.read('dispatch'))
        self.assertTrue(self.zip.read('src/charm.py').startswith(
            b'#!/usr/bin/env python3'))

    def test_code_and_dependencies_are_bundled(self):
        self.assertIn('src/backend.py', self.names)
        self.assertIn('venv/ops/__init__.py', self.names)
        self.assertIn('venv/ops/charm.py', self.names)
        self.assertIn('venv/yaml/__init__.py', self.names)
        self.assertFalse([n for n in self.names if '__pycache__' in n])
