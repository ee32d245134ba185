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

"""snap/snapcraft.yaml, as far as it can be checked without snapcraft.

craft-parts (the library snapcraft builds parts with) validates every
part and its plugin's properties and orders the parts. The cinder-flash
part's build script then runs here, and craft-parts' own fileset rules
give the files it would stage into the snap.
"""

import os
import pathlib
import stat
import subprocess
import sys

import craft_parts
from craft_parts.executor import filesets
from craft_parts import parts as craft_parts_parts
import fixtures
import pydantic
import testtools
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
RECIPE = os.path.join(ROOT, 'snap', 'snapcraft.yaml')
SITE = 'lib/python3.14/site-packages'


def _recipe():
    with open(RECIPE) as f:
        return yaml.safe_load(f)


class RecipeTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.recipe = _recipe()
        self.parts = self.recipe['parts']

    def test_parts_are_valid_and_ordered(self):
        for name, data in self.parts.items():
            craft_parts.validate_part(data)
        order = [p.name for p in craft_parts_parts.sort_parts(
            [craft_parts_parts.Part(name, data)
             for name, data in self.parts.items()])]
        self.assertLess(order.index('openstack'),
                        order.index('cinder-volume-flash'))
        self.assertLess(order.index('cinder-volume-flash'),
                        order.index('cinder-flash'))

    def test_a_misspelt_property_is_refused(self):
        # The validation above is not vacuous.
        data = dict(self.parts['cinder-flash'], stages=['x'])
        self.assertRaises(pydantic.ValidationError,
                          craft_parts.validate_part, data)

    def test_it_is_the_base_snap_plus_the_drivers(self):
        self.assertEqual(('cinder-volume-flash', 'core26', 'strict'), (
            self.recipe['name'], self.recipe['base'],
            self.recipe['confinement']))
        apps = self.recipe['apps']
        self.assertEqual('simple', apps['cinder-volume']['daemon'])
        self.assertEqual('usr/bin/cinder-flash',
                         apps['cinder-flash']['command'])
        self.assertIn('python3-cinder',
                      self.parts['openstack']['stage-packages'])
        self.assertEqual(['install', 'configure'],
                         list(self.recipe['hooks']))
        with open(os.path.join(ROOT, 'snap', 'local',
                               'pyproject.toml')) as f:
            project = f.read()
        for hook in ('install', 'configure'):
            self.assertIn('%s = "cinder_flash_snap.service:FlashCinderVolume'
                          '.%s_hook"' % (hook, hook), project)


class StagedFilesTestCase(testtools.TestCase):
    """The cinder-flash part, built here, and what it stages."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = fixtures.TempDir()
        cls.tmp.setUp()
        part = _recipe()['parts']['cinder-flash']
        build = os.path.join(cls.tmp.path, 'build')
        install = os.path.join(cls.tmp.path, 'install')
        os.makedirs(build)
        os.makedirs(install)
        env = dict(os.environ, CRAFT_PART_SRC=ROOT,
                   CRAFT_PART_BUILD=build, CRAFT_PART_INSTALL=install,
                   PATH=os.path.dirname(sys.executable) + os.pathsep +
                   os.environ['PATH'])
        subprocess.run(['bash', '-e', '-c', part['override-build']],
                       env=env, check=True, capture_output=True, timeout=900)
        files, _dirs = filesets.migratable_filesets(
            filesets.Fileset(part['stage'], name='stage'),
            pathlib.Path(install), 'default')
        cls.install = install
        cls.files = {str(path) for path in files}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanUp()
        super().tearDownClass()

    def test_the_drivers_and_the_check_command(self):
        for name in ('cinder_driver/k2/driver.py',
                     'cinder_driver/linstor/driver.py',
                     'cinder_driver/cmd/cli.py'):
            self.assertIn('%s/%s' % (SITE, name), self.files)
        self.assertIn('usr/bin/cinder-flash', self.files)
        mode = os.stat(os.path.join(self.install, 'usr', 'bin',
                                    'cinder-flash')).st_mode
        self.assertTrue(mode & stat.S_IXOTH)
        self.assertTrue([f for f in self.files
                         if f.startswith(SITE + '/cinder_flash-') and
                         f.endswith('.dist-info/METADATA')])

    def test_nothing_of_the_array_or_tempest(self):
        unwanted = [f for f in self.files if f.startswith(tuple(
            '%s/%s' % (SITE, name) for name in (
                'reference_array', 'tempest_plugin', 'zstandard', 'blake3',
                'cryptography', 'cinder/', 'bin/')))]
        self.assertEqual([], unwanted)
        outside = [f for f in self.files
                   if not f.startswith((SITE + '/', 'usr/bin/'))]
        self.assertEqual([], outside)
