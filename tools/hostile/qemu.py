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

"""The data path through qemu's libiscsi initiator."""

import hashlib
import subprocess
import tempfile

from reference_array.tests import iscsi_client


def iscsi_url(arr, lun, initiator, chap=None):
    """``chap``: (user, secret) to log in with; the secret goes to qemu
    through a 0600 file, never on its command line.
    """
    return iscsi_client.url(arr.info['iscsi_portal'], arr.info['iqn'], lun,
                            initiator, chap)


def qemu_io(target, *commands, timeout=60):
    """qemu-io through libiscsi; a hang is a failure, not a wait."""
    cmd = ['qemu-io'] + target.options() + ['-f', 'raw']
    for c in commands:
        cmd += ['-c', c]
    try:
        return subprocess.run(cmd + [target], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(
            cmd, -1, '', 'no answer in %d s' % timeout)


def read_digest(target, offset, length):
    with tempfile.NamedTemporaryFile() as f:
        r = subprocess.run(
            ['qemu-img', 'dd', '-f', 'raw', '-O', 'raw', 'if=' + target,
             'of=' + f.name, 'bs=%d' % length, 'skip=%d' % (offset // length),
             'count=1'], capture_output=True, text=True, timeout=300)
        if r.returncode:
            return 'error: ' + r.stderr.strip()[-200:]
        return hashlib.sha256(f.read()).hexdigest()[:16]


def write_file(target, path):
    return subprocess.run(['qemu-img', 'convert', '-n', '-f', 'raw', '-O',
                           'raw', path, target], capture_output=True,
                          text=True, timeout=600)
