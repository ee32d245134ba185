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

"""The array on a filesystem that fills up (a 64 MiB tmpfs; root only).

Unique data is written over iSCSI until the disk is full: the write that
finds no room fails with a SCSI error (SPACE ALLOCATION FAILED WRITE
PROTECT), the connection and REST keep working, what was acknowledged
reads back, capacity is bounded by the filesystem, and the array stops
and starts again.
"""

import os
import re
import subprocess
import tempfile

import fixtures
import testtools

from cinder_driver.k2 import client
from reference_array.tests import array_fixture
from reference_array.tests import iscsi_client

MIB = 1024 * 1024
INITIATOR = 'iqn.2026-01.io.test:full'


class DiskFullTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest('mounting a tmpfs needs root')
        mnt = tempfile.mkdtemp(prefix='array-full-')
        self.addCleanup(os.rmdir, mnt)
        subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64m', 'tmpfs',
                        mnt], check=True)
        self.addCleanup(subprocess.run, ['umount', '-l', mnt])
        self.mnt = mnt
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def _start(self):
        array = array_fixture.ReferenceArray(
            data_dir=os.path.join(self.mnt, 'array'))
        self.useFixture(array)
        return array

    def test_filling_the_disk(self):
        array = self._start()
        k2 = array.k2_client()
        vg = k2.create('volume_groups', {'name': 'full', 'quota': 0})
        vol = k2.create('volumes', {
            'name': 'full', 'size': 1024 * 1024,
            'volume_group': client.ref('volume_groups', vg['id'])})
        host = k2.create('hosts', {'name': 'full'})
        k2.create('host_iqns', {'iqn': INITIATOR,
                                'host': client.ref('hosts', host['id'])})
        lun = k2.create('mappings', {
            'volume': client.ref('volumes', vol['id']),
            'host': client.ref('hosts', host['id'])})['lun']
        target = iscsi_client.url(array.info['iscsi_portal'],
                                  array.info['iqn'], lun, INITIATOR)
        source = os.path.join(self.tmp, 'unique')
        with open(source, 'wb') as f:
            f.write(os.urandom(128 * MIB))
        result = iscsi_client.run('qemu-img', 'convert', '-n', '-f', 'raw',
                                  '-O', 'raw', source, target, timeout=120)
        # A SCSI error of the write, not a dropped connection.
        self.assertNotEqual(0, result.returncode)
        self.assertIn('0x2707', result.stderr)
        failed_at = int(re.search(r'error while writing at byte (\d+)',
                                  result.stderr).group(1))
        self.assertGreater(failed_at, 16 * MIB)
        # REST answers; capacity is what the filesystem can hold.
        self.assertEqual(1, len(k2.search('volumes', name='full')))
        capacity = k2.find('system/capacity')
        self.assertLessEqual(capacity['total'], 64 * 1024)
        self.assertLess(capacity['free'], 16 * 1024)
        # What was acknowledged reads back, before and after a restart.
        for restart in (False, True):
            if restart:
                self.assertEqual(0, array.stop())
                array.start()
                target = iscsi_client.url(array.info['iscsi_portal'],
                                          array.info['iqn'], lun, INITIATOR)
            back = os.path.join(self.tmp, 'back')
            result = iscsi_client.run(
                'qemu-img', 'dd', '-f', 'raw', '-O', 'raw', 'if=' + target,
                'of=' + back, 'bs=%d' % MIB, 'count=%d' % (failed_at // MIB))
            self.assertEqual(0, result.returncode, result.stderr)
            with open(source, 'rb') as want, open(back, 'rb') as got:
                self.assertEqual(want.read(failed_at // MIB * MIB),
                                 got.read())
        # UNMAP frees the space: writes are accepted again.
        result = iscsi_client.qemu_io(target, 'discard 0 128M')
        self.assertEqual(0, result.returncode, result.stderr)
        with open(source, 'rb') as f, open(back, 'wb') as again:
            again.write(f.read(32 * MIB))
        result = iscsi_client.write_file(back, target)
        self.assertEqual(0, result.returncode, result.stderr)
