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

"""FerretDB, a MongoDB wire-protocol server, built from its Go module.

No package registry ships ``mongod``; FerretDB v1 (SQLite storage) stands
in for it in ``tox -e mongo-local`` and in the compute bed's guest image.
Built once into the user's cache and reused.
"""

import os
import shutil
import subprocess
import tempfile

VERSION = 'v1.24.0'
CACHE = os.path.expanduser('~/.cache/cinder-flash')
BINARY = os.path.join(CACHE, 'ferretdb-%s' % VERSION)
MODULE = 'github.com/FerretDB/FerretDB'


class BuildError(Exception):
    pass


def _go(*args, cwd, env):
    result = subprocess.run(('go',) + args, cwd=cwd, env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError('go %s failed: %s' % (
            ' '.join(args), result.stderr[-800:]))
    return result.stdout


def ensure(log=print):
    """The path of the FerretDB binary, built first if need be.

    The Go proxy serves a pinned module version but not ``go install
    ...@version``; the module zip lacks the version file the binary reads
    at start, so it is written before the build.
    """
    if os.path.exists(BINARY):
        return BINARY
    if shutil.which('go') is None:
        raise BuildError('FerretDB is built from its Go module: install Go '
                         '(https://go.dev/dl) or put a FerretDB %s binary '
                         'at %s' % (VERSION, BINARY))
    os.makedirs(CACHE, exist_ok=True)
    work = tempfile.mkdtemp(prefix='ferretdb-build-')
    env = dict(os.environ, GOFLAGS='-mod=mod', CGO_ENABLED='0')
    log('building FerretDB %s (a few minutes, once)' % VERSION)
    try:
        _go('mod', 'init', 'fb', cwd=work, env=env)
        _go('get', '%s@%s' % (MODULE, VERSION), cwd=work, env=env)
        source = _go('list', '-m', '-f', '{{.Dir}}', MODULE, cwd=work,
                     env=env).strip()
        src = os.path.join(work, 'src')
        shutil.copytree(source, src)
        subprocess.run(['chmod', '-R', 'u+w', src], check=True)
        with open(os.path.join(src, 'build', 'version', 'version.txt'),
                  'w') as f:
            f.write(VERSION + '\n')
        partial = BINARY + '.partial'
        _go('build', '-o', partial, './cmd/ferretdb', cwd=src, env=env)
        os.rename(partial, BINARY)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return BINARY
