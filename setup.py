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

import setuptools

# The reference array's data path in C: built with the package, against
# Debian's libzstd-dev and libsqlite3-dev (tools/run installs them).
# Optional: where no compiler or headers are found (a cinder-volume host
# installing the drivers from source), the build goes on without it and
# the array, if installed, runs its pure-Python data path.
NATIVE = setuptools.Extension(
    'reference_array.native._native',
    sources=['reference_array/native/%s.c' % name for name in
             ('module', 'store_type', 'store_methods', 'store', 'settle',
              'prepare',
              'store_patches', 'runs', 'tables', 'blake3', 'lock', 'path',
              'path_read', 'path_write', 'pdu')],
    depends=['reference_array/native/%s.h' % name for name in
             ('native', 'store', 'tables', 'path')],
    libraries=['zstd', 'sqlite3'],
    extra_compile_args=['-O3', '-std=gnu11', '-Wall',
                        '-Wno-missing-field-initializers'],
    optional=True)

setuptools.setup(
    setup_requires=['pbr>=6.0.0'],
    pbr=True,
    ext_modules=[NATIVE])
