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

"""Real iSCSI clients (qemu-img, qemu-io, libiscsi tools) for tests."""

import json
import subprocess


def url(portal, iqn, lun, initiator):
    host, port = portal.rsplit(':', 1)
    return 'json:' + json.dumps({
        'file.driver': 'iscsi', 'file.transport': 'tcp',
        'file.portal': '%s:%s' % (host, port), 'file.target': iqn,
        'file.lun': lun, 'file.initiator-name': initiator})


def from_connection_info(info, initiator):
    data = info['data']
    return url(data['target_portal'], data['target_iqn'],
               data['target_lun'], initiator)


def run(*cmd, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout)


def write_file(path, target):
    return run('qemu-img', 'convert', '-n', '-f', 'raw', '-O', 'raw',
               path, target)


def read_file(target, path):
    return run('qemu-img', 'convert', '-f', 'raw', '-O', 'raw', target,
               path)


def qemu_io(target, command):
    return run('qemu-io', '-f', 'raw', '-c', command, target)


def read_back(target, path):
    """Read as many bytes as ``path`` holds from ``target``.

    Returns (qemu-img result, expected bytes, bytes read).
    """
    back = path + '.back'
    result = read_file(target, back)
    with open(path, 'rb') as want:
        expected = want.read()
    got = b''
    if result.returncode == 0:
        with open(back, 'rb') as f:
            got = f.read(len(expected))
    return result, expected, got
