#!/usr/bin/env python3
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

"""Install the cinder-flash wheel into a copy of the snap's Python tree.

The snap stages Ubuntu's python3-cinder and its Python dependencies
(``usr/lib/python3/dist-packages``) and installs the cinder-flash wheel
without dependencies into ``lib/python3.14/site-packages``, as the
recipe's cinder-flash part does. This script does the same into a tree
unpacked from the Ubuntu archive and checks that every requirement the
wheel declares is met by the versions Ubuntu ships:

    # the python3-* packages python3-cinder depends on, for the snap's
    # Ubuntu release (apt-get download with a sources list for it), then:
    for deb in *.deb; do dpkg-deb -x "$deb" TREE; done
    python3 snap/check_tree.py TREE dist/cinder_flash-*.whl

It exits non-zero and names every requirement that is missing or out of
range. It imports nothing from the tree: the snap's interpreter is not
this one.
"""

import argparse
from importlib import metadata
import os
import subprocess
import sys

from packaging import requirements

SITE = os.path.join('lib', 'python3.14', 'site-packages')
DIST = os.path.join('usr', 'lib', 'python3', 'dist-packages')


def installed(tree):
    """{normalised name: version} of every distribution in the tree."""
    found = {}
    for dist in metadata.distributions(path=[os.path.join(tree, SITE),
                                             os.path.join(tree, DIST)]):
        name = dist.metadata['Name']
        if name:
            found.setdefault(_norm(name), dist.version)
    return found


def _norm(name):
    return name.lower().replace('_', '-').replace('.', '-')


def check(tree, wheel):
    subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet',
                    '--no-deps', '--no-compile', '--target',
                    os.path.join(tree, SITE), wheel], check=True)
    found = installed(tree)
    version = found.get('cinder-flash')
    if version is None:
        return ['cinder-flash is not in %s after the install' % SITE]
    dist = next(metadata.distributions(
        name='cinder-flash', path=[os.path.join(tree, SITE)]))
    problems = []
    for line in dist.requires or []:
        req = requirements.Requirement(line)
        if req.marker is not None and not req.marker.evaluate(
                {'extra': ''}):
            continue
        have = found.get(_norm(req.name))
        if have is None:
            problems.append('%s: not in the tree' % req)
        elif not req.specifier.contains(have, prereleases=True):
            problems.append('%s: the tree has %s' % (req, have))
        else:
            print('ok  %-40s %s' % (req, have))
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('tree', help='the unpacked snap tree (its root)')
    parser.add_argument('wheel', help='the cinder-flash wheel')
    args = parser.parse_args(argv)
    problems = check(args.tree, args.wheel)
    for problem in problems:
        print('FAIL %s' % problem)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
