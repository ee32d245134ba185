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

"""Assemble a charm's ``<name>.charm`` without charmcraft.

``charmcraft pack`` builds in an Ubuntu environment matching the charm's
base; this script writes the same layout anywhere: metadata.yaml and
config.yaml generated from charmcraft.yaml, manifest.yaml, an executable
``dispatch`` (and the install/start/upgrade-charm hooks), ``src/`` and the
charm's Python dependencies flat in ``venv/``.

Two charms live here: the classic ``cinder-flash`` (this directory) and
the Sunbeam ``cinder-volume-flash`` (``cinder-volume-flash/``). Both hold
the modules of ``src/`` they share (SHARED).

    python3 juju-charm/pack.py [CHARM_DIR] [--output DIR] [--wheels DIR]
"""

import argparse
import datetime
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
METADATA_KEYS = ('name', 'title', 'summary', 'description', 'links',
                 'assumes', 'subordinate', 'provides', 'requires',
                 'resources')
DISPATCH = ('#!/bin/sh\n'
            'JUJU_DISPATCH_PATH="${JUJU_DISPATCH_PATH:-$0}" '
            'PYTHONPATH=lib:venv:src exec ./src/charm.py\n')
HOOKS = ('install', 'start', 'upgrade-charm')
# The option checks and secret reading both charms use; one copy here.
SHARED = ('backend.py', 'juju_secrets.py')
EXECUTABLE = stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | \
    stat.S_IXOTH


def _write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)
    os.chmod(path, mode)


def load(charm_dir=HERE):
    """(project, metadata, config): charmcraft.yaml and what it generates."""
    with open(os.path.join(charm_dir, 'charmcraft.yaml')) as f:
        project = yaml.safe_load(f)
    metadata = {k: project[k] for k in METADATA_KEYS if k in project}
    return project, metadata, project['config']


def build_tree(root, charm_dir=HERE, wheels=None):
    project, metadata, config = load(charm_dir)
    _write(os.path.join(root, 'metadata.yaml'),
           yaml.safe_dump(metadata, sort_keys=False))
    _write(os.path.join(root, 'config.yaml'),
           yaml.safe_dump(config, sort_keys=False))
    base, channel = project['base'].split('@')
    _write(os.path.join(root, 'manifest.yaml'), yaml.safe_dump({
        'charmcraft-version': 'cinder-flash pack.py',
        'charmcraft-started-at': datetime.datetime.now(
            datetime.timezone.utc).isoformat(),
        'bases': [{'name': base, 'channel': channel,
                   'architectures': sorted(project['platforms'])}],
    }, sort_keys=False))
    _write(os.path.join(root, 'dispatch'), DISPATCH, EXECUTABLE)
    for hook in HOOKS:
        _write(os.path.join(root, 'hooks', hook), DISPATCH, EXECUTABLE)
    os.makedirs(os.path.join(root, 'src'))
    sources = [os.path.join(HERE, 'src', name) for name in SHARED]
    sources += [os.path.join(charm_dir, 'src', name)
                for name in sorted(os.listdir(os.path.join(charm_dir,
                                                           'src')))
                if name.endswith('.py')]
    for path in sources:
        shutil.copy(path, os.path.join(root, 'src'))
    os.chmod(os.path.join(root, 'src', 'charm.py'), EXECUTABLE)
    cmd = [sys.executable, '-m', 'pip', 'install', '--quiet',
           '--target', os.path.join(root, 'venv'), '-r',
           os.path.join(HERE, 'requirements.txt')]
    if wheels:
        cmd += ['--no-index', '--find-links', wheels]
    subprocess.run(cmd, check=True)


def zip_tree(root, path):
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as archive:
        for folder, _dirs, files in os.walk(root):
            for name in sorted(files):
                full = os.path.join(folder, name)
                if '__pycache__' in full:
                    continue
                info = zipfile.ZipInfo.from_file(
                    full, os.path.relpath(full, root))
                info.compress_type = zipfile.ZIP_DEFLATED
                # Juju runs dispatch and the hooks: keep the exec bits.
                with open(full, 'rb') as f:
                    archive.writestr(info, f.read())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('charm_dir', nargs='?', default=HERE,
                        help='the charm (a directory with charmcraft.yaml);'
                        ' default: the classic cinder-flash charm')
    parser.add_argument('--output', default=os.getcwd())
    parser.add_argument('--wheels', help='install the dependencies from '
                        'this directory of wheels only (offline)')
    args = parser.parse_args(argv)
    charm_dir = os.path.abspath(args.charm_dir)
    out = os.path.join(os.path.abspath(args.output),
                       load(charm_dir)[0]['name'] + '.charm')
    with tempfile.TemporaryDirectory() as root:
        build_tree(root, charm_dir, args.wheels)
        zip_tree(root, out)
    print(out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
