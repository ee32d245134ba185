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

"""The compute bed's os-brick connector against a live array.

The K2 driver hands out a connection, the connector attaches it the way
nova-compute and cinder-volume do on the compute bed (qemu-storage-daemon,
FUSE, buffered loop device), and what is written through the device is
read back by another initiator (qemu-img's libiscsi) straight from the
array. Needs root (loop devices, FUSE) and qemu-storage-daemon.
"""

import concurrent.futures
import json
import mmap
import os
import random
import shutil
import subprocess
from unittest import mock

import fixtures
from os_brick import exception as brick_exception

from cinder_driver.tests.functional import k2_driver_base
from reference_array.tests import iscsi_client
from tools.gate.compute import brick
from tools import iscsi_loop

INITIATOR = 'iqn.2026-11.io.cinder-flash:functional-node'
GIB = 1 << 30
BLOCK = 4096


class UserspaceISCSITestCase(k2_driver_base.K2DriverTestCase):

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest('attaching needs root (loop devices, FUSE)')
        if shutil.which('qemu-storage-daemon') is None:
            self.skipTest('qemu-storage-daemon is not installed '
                          '(Debian: qemu-system-common)')
        self.state = self.useFixture(fixtures.TempDir()).path
        env = mock.patch.dict(os.environ, {brick.INITIATOR_ENV: INITIATOR,
                                           brick.STATE_ENV: self.state})
        env.start()
        self.addCleanup(env.stop)
        # Whatever a failing test leaves attached goes.
        self.addCleanup(iscsi_loop.detach_all, self.state)
        self.connector = brick.UserspaceISCSIConnector(root_helper=None)
        self.host = dict(self.connector.get_connector_properties(None),
                         host='compute-functional', multipath=False)

    def make_driver(self, driver_kwargs=None, **overrides):
        # Test arrays listen on a random iSCSI port.
        overrides.setdefault('k2_iscsi_portals',
                             [self.array.info['iscsi_portal']])
        return super().make_driver(driver_kwargs, **overrides)

    def attach(self, size=1):
        vol = self.create(size=size)
        info = self.driver.initialize_connection(vol, self.host)
        self.addCleanup(self.driver.terminate_connection, vol, self.host)
        device = self.connector.connect_volume(info['data'])
        return vol, info, device['path']

    def array_read(self, info, offset, length):
        """Bytes of the LUN read by qemu-img, not through the loop device."""
        out = os.path.join(self.useFixture(fixtures.TempDir()).path, 'lun')
        target = json.loads(iscsi_client.from_connection_info(
            info, INITIATOR)[len('json:'):])
        # A window of the LUN: the raw driver's offset and size.
        target.update(driver='raw', offset=offset, size=length)
        result = iscsi_client.run('qemu-img', 'convert', '-O', 'raw',
                                  'json:' + json.dumps(target), out)
        self.assertEqual(0, result.returncode, result.stderr)
        with open(out, 'rb') as f:
            return f.read()

    def loop_state(self, path):
        name = os.path.basename(path)
        with open('/sys/block/%s/loop/dio' % name) as f:
            return f.read().strip()

    def test_parallel_direct_writes_reach_the_array(self):
        # O_DIRECT writes from many threads at once, as a guest's disk
        # sends them, each read back from the array by another initiator.
        # The loop device is buffered: with direct I/O on a FUSE export it
        # has lost writes and corrupted a guest's file system.
        _vol, info, dev = self.attach()
        self.assertEqual('0', self.loop_state(dev))
        count = 400
        rnd = random.Random(7)
        offsets = rnd.sample(range(0, GIB // BLOCK), count)
        payloads = {o: os.urandom(BLOCK) for o in offsets}
        fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
        try:
            def write(offset):
                buf = mmap.mmap(-1, BLOCK)      # page-aligned for O_DIRECT
                buf.write(payloads[offset])
                return os.pwritev(fd, [buf], offset * BLOCK)

            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                self.assertEqual([BLOCK] * count,
                                 list(pool.map(write, offsets)))
            os.fsync(fd)
        finally:
            os.close(fd)
        wrong = [o for o in offsets
                 if self.array_read(info, o * BLOCK, BLOCK) != payloads[o]]
        self.assertEqual([], wrong, '%d of %d writes did not reach the '
                         'array as written' % (len(wrong), count))

    def test_extend_then_detach_leaves_nothing(self):
        vol, info, dev = self.attach()
        again = self.connector.connect_volume(info['data'])
        self.assertEqual(dev, again['path'])
        self.driver.extend_volume(vol, 2)
        self.assertEqual(2 * GIB, self.connector.extend_volume(info['data']))
        size = subprocess.run(['blockdev', '--getsize64', dev],
                              capture_output=True, text=True).stdout
        self.assertEqual(2 * GIB, int(size))
        # The grown part is writable and lands on the array.
        tail = os.urandom(64 * 1024)
        with open(dev, 'r+b') as f:
            f.seek(2 * GIB - len(tail))
            f.write(tail)
            f.flush()
            os.fsync(f.fileno())
        self.assertEqual(tail, self.array_read(info, 2 * GIB - len(tail),
                                               len(tail)))
        attachment = iscsi_loop.Attachment(self.state, iscsi_loop.Target(
            info['data']['target_portal'], info['data']['target_iqn'],
            info['data']['target_lun'], INITIATOR))
        pid, export = attachment.pid, attachment.export
        self.connector.disconnect_volume(info['data'], None)
        self.assertEqual([], self.connector.get_volume_paths(info['data']))
        self.assertFalse(attachment._bound_here(dev))
        self.assertFalse(iscsi_loop._alive(pid))
        self.assertFalse(iscsi_loop._mounted(export))
        self.assertEqual([], os.listdir(self.state))
        # Detaching again is not an error.
        self.connector.disconnect_volume(info['data'], None)

    def test_leftovers_of_a_crashed_service_are_removed(self):
        _vol, info, dev = self.attach()
        attachment = iscsi_loop.Attachment(self.state, iscsi_loop.Target(
            info['data']['target_portal'], info['data']['target_iqn'],
            info['data']['target_lun'], INITIATOR))
        pid = attachment.pid
        self.assertEqual([attachment.target.key],
                         iscsi_loop.detach_all(self.state))
        self.assertFalse(iscsi_loop._alive(pid))
        # Once free, the device may already serve another process's file.
        self.assertFalse(attachment._bound_here(dev))
        self.assertEqual([], os.listdir(self.state))

    def test_a_target_that_refuses_leaves_nothing(self):
        vol = self.create()
        info = self.driver.initialize_connection(vol, self.host)
        self.addCleanup(self.driver.terminate_connection, vol, self.host)
        # The LUN is mapped to this initiator, not to another one.
        with mock.patch.dict(os.environ, {
                brick.INITIATOR_ENV: 'iqn.2026-11.io.cinder-flash:stranger'}):
            self.assertRaises(brick_exception.VolumeDeviceNotFound,
                              self.connector.connect_volume, info['data'])
        self.assertEqual([], os.listdir(self.state))
