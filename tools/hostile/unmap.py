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

"""The largest UNMAP the array advertises, and other I/O meanwhile."""

import os
import tempfile
import threading
import time

from tools.hostile import array
from tools.hostile import initiator
from tools.hostile import k2_rest
from tools.hostile import qemu

MiB = array.MiB


def _unmap_timed(arr, ini, lun, extents, other):
    """(seconds, SCSI status, worst 4k read on ``other`` meanwhile)."""
    lat, stop = [], threading.Event()

    def other_io():
        while not stop.is_set():
            t = time.monotonic()
            qemu.qemu_io(other, 'read 0 4k', timeout=30)
            lat.append(time.monotonic() - t)
    t = threading.Thread(target=other_io)
    t.start()
    time.sleep(0.5)
    started = time.monotonic()
    ini.unmap(extents, lun)
    reply = ini.recv()
    took = time.monotonic() - started
    stop.set()
    t.join()
    return took, reply[0][3] if reply else None, max(lat) if lat else None


def probe_unmap(res):
    """The largest UNMAP the array advertises: on a nearly empty volume,
    then over 128 MiB of unique data; and the latency of another LUN's
    reads meanwhile.
    """
    with array.Array() as arr:
        k2 = k2_rest.K2(arr)
        ini_name = array.INITIATOR % 'unmap'
        host = k2.host('unmap', ini_name)
        _g, big = k2.volume('unmap-big', 1024)
        _g2, other = k2.volume('unmap-other', 1)
        big_lun = k2.map(host, '/volumes/%d' % big['id'])
        big_t = qemu.iscsi_url(arr, big_lun, ini_name)
        other_t = qemu.iscsi_url(
            arr, k2.map(host, '/volumes/%d' % other['id']), ini_name)
        qemu.qemu_io(big_t, 'write -P 0x11 0 1M')
        ini = initiator.RawInitiator(arr.portal, ini_name, timeout=300)
        status = ini.login(arr.info['iqn'], immediate=True)
        if status:
            res.add('unmap', 'login', status, 0, False)
            return
        # Block Limits VPD: 256 descriptors of 2^20 blocks (128 GiB).
        extents = [(n << 20, 1 << 20) for n in range(256)]
        try:
            took, scsi_status, worst = _unmap_timed(arr, ini, big_lun,
                                                    extents, other_t)
            res.add('unmap', 'UNMAP of 256 x 2^20 blocks, empty volume: '
                    'seconds', round(took, 2), '< 2',
                    scsi_status == 0 and took < 2,
                    'SCSI status %s' % scsi_status)
            res.add('unmap', 'worst 4k read on another LUN meanwhile (s)',
                    round(worst, 2) if worst else None, '< 1',
                    worst is not None and worst < 1)
            with tempfile.NamedTemporaryFile(dir='/var/tmp') as f:
                f.write(os.urandom(128 * MiB))
                f.flush()
                qemu.write_file(big_t, f.name)
            took, scsi_status, worst = _unmap_timed(arr, ini, big_lun,
                                                    extents, other_t)
            res.add('unmap', 'the same over 128 MiB of data: seconds',
                    round(took, 2), '< 30', scsi_status == 0 and took < 30,
                    'SCSI status %s' % scsi_status)
            res.add('unmap', 'worst 4k read on another LUN meanwhile (s)',
                    round(worst, 2) if worst else None, '< 1',
                    worst is not None and worst < 1)
            r = qemu.qemu_io(big_t, 'read -P 0 0 128M')
            res.add('unmap', 'unmapped range reads as zeros',
                    r.returncode == 0 and 'verification failed' not in
                    r.stdout, True, r.returncode == 0 and
                    'verification failed' not in r.stdout)
        finally:
            ini.close()
