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

"""Crash rounds: ``kill -9`` the reference array under iSCSI writes.

Each round restarts the array on the same data directory, writes through
its iSCSI target with ``qemu-io`` (each write followed by a flush, so an
exit status of 0 means "acknowledged as durable"), kills the array with
SIGKILL at a random moment, restarts it and reads back every write
acknowledged so far, in this round and all earlier ones.
"""

import json
import os
import random
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from reference_array import launch  # noqa: E402

INITIATOR = 'iqn.2026-11.io.cinder-flash:crash'
BLOCK = 64 * 1024
VOLUME_GIB = 1
# Each round kills the array after this many acknowledged writes (and a
# random moment more), or after ROUND_TIMEOUT seconds if the writes stall.
WRITES_PER_ROUND = 12
ROUND_TIMEOUT = 120


class Array(launch.ArrayProcess):
    """The array under test, with the pieces a crash round needs."""

    def __init__(self, data_dir):
        super().__init__(data_dir, ['--iscsi-port', '0'])

    def client(self):
        from cinder_driver.k2 import rest
        host, port = self.info['k2'][len('https://'):].rsplit(':', 1)
        return rest.K2Rest(host, self.info['user'],
                           self.info['password'], port=int(port),
                           verify=self.info['ca_cert'])

    def url(self, lun):
        return 'json:' + json.dumps({
            'file.driver': 'iscsi', 'file.transport': 'tcp',
            'file.portal': self.info['iscsi_portal'],
            'file.target': self.info['iqn'], 'file.lun': lun,
            'file.initiator-name': INITIATOR})


def _setup(array):
    from cinder_driver.k2 import client
    k2 = array.client()
    vg = k2.create('volume_groups', {'name': 'cvg-crash', 'quota': 0})
    vol = k2.create('volumes', {
        'name': 'cv-crash', 'size': VOLUME_GIB * 1024 * 1024,
        'volume_group': client.ref('volume_groups', vg['id'])})
    host = k2.create('hosts', {'name': 'crash'})
    k2.create('host_iqns', {'iqn': INITIATOR,
                            'host': client.ref('hosts', host['id'])})
    return k2.create('mappings', {
        'volume': client.ref('volumes', vol['id']),
        'host': client.ref('hosts', host['id'])})['lun']


def _qemu_io(url, *commands, running=None):
    """Run qemu-io.

    ``running`` (a list) holds the process while it runs, so a round can
    stop a write the killed array will never answer (libiscsi would keep
    reconnecting to it).
    """
    args = ['qemu-io', '-f', 'raw']
    for command in commands:
        args += ['-c', command]
    proc = subprocess.Popen(args + [url], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if running is not None:
        running.append(proc)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    finally:
        if running is not None:
            running.remove(proc)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def verify(url, written):
    """Problems reading back [(offset, pattern)] (empty: all there)."""
    problems = []
    for start in range(0, len(written), 64):
        result = _qemu_io(url, *['read -P %d %d %d' % (
            pattern, offset, BLOCK)
            for offset, pattern in written[start:start + 64]])
        output = result.stdout + result.stderr
        if result.returncode != 0 or 'failed' in output.lower():
            problems.append(output[-300:])
    return problems


def run_rounds(data_dir, rounds, seed=1):
    """Returns (writes acknowledged, errors); no error: all read back."""
    rnd = random.Random(seed)
    array = Array(data_dir)
    array.start()
    acked, errors, used = [], [], set()
    try:
        lun = _setup(array)
        slots = VOLUME_GIB * 1024 * 1024 * 1024 // BLOCK
        for number in range(rounds):
            url = array.url(lun)
            stop = threading.Event()
            running = []

            def writer():
                while not stop.is_set():
                    # Never the same place twice: a write cut short by the
                    # kill may or may not have landed, and must not be
                    # able to hide or fake an earlier one.
                    slot = rnd.randrange(slots)
                    if slot in used:
                        continue
                    used.add(slot)
                    pattern = rnd.randrange(1, 256)
                    result = _qemu_io(url, 'write -P %d %d %d' % (
                        pattern, slot * BLOCK, BLOCK), 'flush',
                        running=running)
                    output = (result.stdout + result.stderr).lower()
                    if result.returncode != 0 or 'failed' in output or \
                            'error' in output:
                        return
                    acked.append((slot * BLOCK, pattern))
            thread = threading.Thread(target=writer)
            before = len(acked)
            thread.start()
            # The kill comes after a number of acknowledged writes, not
            # after a time: a loaded machine acknowledges fewer per second.
            deadline = time.monotonic() + ROUND_TIMEOUT
            while (len(acked) - before < WRITES_PER_ROUND and
                   thread.is_alive() and time.monotonic() < deadline):
                time.sleep(0.05)
            time.sleep(rnd.uniform(0.0, 0.5))
            array.kill()
            stop.set()
            # The write in flight was not acknowledged: no need to wait.
            for proc in list(running):
                proc.kill()
            thread.join(timeout=180)
            array.start()
            # Every write acknowledged so far, in any round, reads back.
            errors += ['round %d: %s' % (number, e)
                       for e in verify(array.url(lun), acked)]
        return len(acked), errors
    finally:
        array.stop()
