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
import os
import subprocess
import tempfile
import weakref

SECRET_ID = 'chap'


class Target(str):
    """A qemu block spec; with CHAP, the 0600 file its secret is read from
    (qemu's ``secret`` object: the secret never on a command line).
    """

    secret_file = None

    def options(self):
        if not self.secret_file:
            return []
        return ['--object', 'secret,id=%s,file=%s' % (SECRET_ID,
                                                      self.secret_file)]


def _secret_file(secret):
    fd, path = tempfile.mkstemp(prefix='chap-')
    with os.fdopen(fd, 'w') as f:
        f.write(secret)
    return path


def _remove(path):
    # The test's temporary directory may have gone first.
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def url(portal, iqn, lun, initiator, chap=None):
    """``chap``: (user, secret) the initiator logs in with, or None."""
    host, port = portal.rsplit(':', 1)
    spec = {'file.driver': 'iscsi', 'file.transport': 'tcp',
            'file.portal': '%s:%s' % (host, port), 'file.target': iqn,
            'file.lun': lun, 'file.initiator-name': initiator}
    if chap:
        spec.update({'file.user': chap[0],
                     'file.password-secret': SECRET_ID})
    target = Target('json:' + json.dumps(spec))
    if chap:
        target.secret_file = _secret_file(chap[1])
        weakref.finalize(target, _remove, target.secret_file)
    return target


def _options(target):
    return target.options() if isinstance(target, Target) else []


def from_connection_info(info, initiator):
    data = info['data']
    return url(data['target_portal'], data['target_iqn'],
               data['target_lun'], initiator)


def run(*cmd, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout)


def write_file(path, target):
    return run('qemu-img', 'convert', *_options(target), '-n', '-f', 'raw',
               '-O', 'raw', path, target)


def read_file(target, path):
    return run('qemu-img', 'convert', *_options(target), '-f', 'raw', '-O',
               'raw', target, path)


def qemu_io(target, command):
    return run('qemu-io', *_options(target), '-f', 'raw', '-c', command,
               target)


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
