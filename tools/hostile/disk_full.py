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

"""A full disk under the array: SCSI errors, REST answers, a restart."""

import os
import subprocess
import tempfile

from reference_array import launch
from tools.hostile import array
from tools.hostile import k2_rest
from tools.hostile import qemu

MiB = array.MiB


def probe_disk_full(res):
    """A 64 MiB tmpfs under the array, filled over iSCSI."""
    if os.geteuid() != 0:
        res.add('disk-full', 'needs root to mount a tmpfs', False, True,
                False)
        return
    mnt = tempfile.mkdtemp(prefix='hostile-full-')
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', mnt],
                   check=True)
    try:
        _disk_full(res, os.path.join(mnt, 'array'), mnt)
    finally:
        subprocess.run(['umount', '-l', mnt])
        os.rmdir(mnt)


def _disk_full(res, data_dir, mnt):
    arr = array.Array(data_dir=data_dir)
    with arr:
        k2 = k2_rest.K2(arr)
        ini = array.INITIATOR % 'full'
        host = k2.host('full', ini)
        group, vol = k2.volume('full', 1)
        lun = k2.map(host, '/volumes/%d' % vol['id'])
        target = qemu.iscsi_url(arr, lun, ini)
        with tempfile.NamedTemporaryFile(dir='/var/tmp') as f:
            f.write(os.urandom(256 * MiB))
            f.flush()
            try:
                w = subprocess.run(
                    ['qemu-img', 'convert', '-n', '-f', 'raw', '-O', 'raw',
                     f.name, target], capture_output=True, text=True,
                    timeout=120)
            except subprocess.TimeoutExpired as e:
                w = subprocess.CompletedProcess(
                    e.cmd, -1, '', 'no answer in 120 s (the initiator '
                    'kept reconnecting)')
        dropped = w.returncode == -1 or any(s in w.stderr.lower() for s in (
            'connection', 'reconnect', 'broken pipe', 'timed out'))
        res.add('disk-full', 'write of 256 MiB unique data onto 64 MiB',
                'failed' if w.returncode else 'succeeded', 'failed',
                w.returncode != 0, w.stderr.strip()[-200:])
        res.add('disk-full', 'failure is a SCSI error, not a dropped '
                'connection', not dropped, True, not dropped)
        st1, vols = arr.k2('GET', '/volumes')
        st2, cap = arr.k2('GET', '/system/capacity')
        res.add('disk-full', 'REST answers (volumes, capacity)',
                (st1, st2), (200, 200), st1 == 200 and st2 == 200)
        total = None
        if st2 == 200 and cap.get('hits'):
            total = cap['hits'][0].get('total')
        fs = os.statvfs(mnt)
        res.add('disk-full', 'capacity total (KiB) vs filesystem',
                total, '<= %d' % (fs.f_blocks * fs.f_frsize // 1024),
                total is not None and
                total <= fs.f_blocks * fs.f_frsize // 1024)
        r = qemu.qemu_io(target, 'read 0 1M')
        res.add('disk-full', 'reads still served', r.returncode == 0, True,
                r.returncode == 0, r.stderr.strip()[-200:])
        code = arr.stop()
    res.add('disk-full', 'clean stop exit code', code, 0, code == 0)
    again = array.Array(data_dir=data_dir)
    try:
        with again:
            status, _ = again.k2('GET', '/system/state')
            res.add('disk-full', 'starts again on the full disk', status,
                    200, status == 200)
    except launch.ArrayProcessError as e:
        res.add('disk-full', 'starts again on the full disk', 'no', 200,
                False, str(e)[-300:])
