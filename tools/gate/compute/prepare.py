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


"""What the compute bed needs before it can come up, made once and kept.

``python3 tools/gate/compute/prepare.py [--smoke]`` makes the compute
services' virtualenv (``.gate-cvenv``) and the guest image side by side,
with the interpreter that runs it and nothing but the standard library, so
that CI can start it in the background while the unit tiers run and join
it before the compute bed comes up. ``--smoke``: the guest image without
FerretDB (the small version only writes and reads back a file), which
needs no Go toolchain.

Every step has a time limit; a failure names the step and exits non-zero.
"""

import argparse
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, ROOT)

from tools import ferretdb  # noqa: E402
from tools.gate.compute import image  # noqa: E402

CVENV = os.path.join(ROOT, '.gate-cvenv')
CVENV_PACKAGES = ('nova==34.0.0', 'neutron==29.0.0', 'glance==33.0.0',
                  'openstack-placement==16.0.0', 'os-brick==7.1.1',
                  'libvirt-python', 'gunicorn', 'PyMySQL')
# Downloads and one C build (libvirt-python) on a loaded 2-core machine:
# about 20 minutes at worst so far; twice that is a fault, not a slow day.
CVENV_TIMEOUT = 2700
IMAGE_TIMEOUT = 2700


class PrepareError(Exception):
    pass


def log(msg):
    print('[compute-prepare] %s' % msg, flush=True)


def cvenv_ready():
    return os.path.exists(os.path.join(CVENV, 'bin', 'nova-compute'))


def _step(what, cmd, deadline):
    try:
        result = subprocess.run(cmd, capture_output=True, text=True,
                                timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise PrepareError('%s: no end after its time limit' % what)
    if result.returncode != 0:
        raise PrepareError('%s failed (%d):\n%s' % (
            what, result.returncode,
            (result.stderr or result.stdout)[-3000:]))


def ensure_cvenv():
    """The compute services' virtualenv, made once and kept."""
    if cvenv_ready():
        return
    if not os.path.exists('/usr/include/libvirt/libvirt.h') or \
            subprocess.run(['sh', '-c', 'command -v pkg-config'],
                           capture_output=True).returncode != 0:
        raise PrepareError('libvirt-python builds against Debian\'s '
                           'libvirt-dev and pkg-config: install them')
    started = time.monotonic()
    deadline = started + CVENV_TIMEOUT
    log('installing Nova 34, Neutron 29, Glance 33 and Placement 16 into '
        '%s (once)' % CVENV)
    # A partial virtualenv from an interrupted run is made again.
    _step('python -m venv', [sys.executable, '-m', 'venv', '--clear',
                             CVENV], deadline)
    _step('pip install (compute services)', [
        os.path.join(CVENV, 'bin', 'pip'), 'install', '-q',
        '--disable-pip-version-check',
        '-c', os.path.join(HERE, 'constraints.txt')] + list(CVENV_PACKAGES),
        deadline)
    log('virtualenv made in %.0f s' % (time.monotonic() - started))


def ensure_image(server=True):
    started = time.monotonic()
    target = image.ensure(server=server, timeout=IMAGE_TIMEOUT)
    log('guest image %s ready in %.0f s' % (
        os.path.basename(target), time.monotonic() - started))
    return target


def prepare(server=True):
    """Both at once: one mostly downloads and unpacks, so does the other."""
    failures = []

    def attempt(fn, *args):
        try:
            fn(*args)
        except (PrepareError, image.ImageError, ferretdb.BuildError,
                OSError) as e:
            failures.append(str(e))

    other = threading.Thread(target=attempt, args=(ensure_image, server))
    other.start()
    attempt(ensure_cvenv)
    other.join()
    if failures:
        raise PrepareError('\n'.join(failures))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--smoke', action='store_true',
                        help='the guest image without FerretDB')
    args = parser.parse_args()
    started = time.monotonic()
    try:
        prepare(server=not args.smoke)
    except PrepareError as e:
        print('[compute-prepare] FAILED: %s' % e, file=sys.stderr,
              flush=True)
        return 1
    log('done in %.0f s' % (time.monotonic() - started))
    return 0


if __name__ == '__main__':
    sys.exit(main())
