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

"""The cinder-flash wheel, built from this checkout as a release would be."""

import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def build(dest):
    """Path of the wheel built into ``dest``."""
    subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--quiet',
                    '--no-deps', '--no-build-isolation', '--wheel-dir',
                    dest, ROOT], check=True, capture_output=True,
                   timeout=600)
    found = glob.glob(os.path.join(dest, 'cinder_flash-*.whl'))
    if len(found) != 1:
        raise RuntimeError('expected one cinder-flash wheel in %s, found '
                           '%s' % (dest, found))
    return found[0]
