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

"""Every source file carries the Apache-2.0 header, as Cinder's files do."""

import os
import re

import testtools

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))
TREES = ('cinder_driver', 'reference_array', 'tempest_plugin', 'tools',
         'juju-charm', 'devstack', 'snap', '.ci')
SKIP_DIRS = {'__pycache__', 'build', '.tox', 'node_modules'}
NOTICE = ('Licensed under the Apache License, Version 2.0 (the "License"); '
          'you may not use this file except in compliance with the License.')


def _is_source(path):
    if path.endswith(('.py', '.sh', '.c', '.h')):
        return True
    if os.path.splitext(path)[1]:
        return False
    with open(path, 'rb') as f:
        first = f.readline()
    return first.startswith(b'#!') and b'sh' in first


def _sources():
    for tree in TREES:
        for top, dirs, files in os.walk(os.path.join(ROOT, tree)):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            for name in files:
                path = os.path.join(top, name)
                if os.path.islink(path) or not _is_source(path):
                    continue
                with open(path, encoding='utf-8', errors='replace') as f:
                    text = f.read(4096)
                if text.strip():
                    yield os.path.relpath(path, ROOT), text


class LicenceHeaderTestCase(testtools.TestCase):

    def test_every_source_file_has_the_apache_header(self):
        sources = list(_sources())
        # The walk found the tree (not an empty or moved checkout).
        self.assertGreater(len(sources), 100)
        missing = [path for path, text in sources
                   if NOTICE not in re.sub(r'[\s#*/]+', ' ', text)]
        self.assertEqual([], missing)
