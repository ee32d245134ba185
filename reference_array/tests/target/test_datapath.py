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

"""Bytes through the reference array's iSCSI target, with real clients."""

import os

import fixtures
import testtools

from cinder_driver.k2 import client
from reference_array.tests import array_fixture
from reference_array.tests import iscsi_client

MIB = 1024 * 1024
HOST_IQN = 'iqn.2026-01.io.test:host-a'
OTHER_IQN = 'iqn.2026-01.io.test:host-b'


class ArrayLUNTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.array = self.useFixture(array_fixture.ReferenceArray())
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.k2 = self.array.k2_client()
        vg = self.k2.create('volume_groups', {'name': 'cvg-a', 'quota': 0})
        self.vol = self.k2.create('volumes', {
            'name': 'cv-a', 'size': 128 * 1024,
            'volume_group': client.ref('volume_groups', vg['id'])})
        host = self.k2.create('hosts', {'name': 'host-a'})
        self.k2.create('host_iqns', {'iqn': HOST_IQN, 'host':
                                     client.ref('hosts', host['id'])})
        self.lun = self.k2.create('mappings', {
            'volume': client.ref('volumes', self.vol['id']),
            'host': client.ref('hosts', host['id'])})['lun']

    def target(self, initiator=HOST_IQN, lun=None):
        return iscsi_client.url(self.array.info['iscsi_portal'],
                                self.array.info['iqn'], lun or self.lun,
                                initiator)

    def source(self, size=32 * MIB):
        path = os.path.join(self.tmp, 'src.raw')
        with open(path, 'wb') as f:
            f.write(os.urandom(size // 2))
            f.write(b'{"state": "ready", "pad": "xxxxxxxx"}\n' *
                    (size // 2 // 38))
            f.truncate(size)
        return path

    def test_per_volume_stats(self):
        vg = self.k2.find('volume_groups', name='cvg-a')
        idle = self.k2.create('volumes', {
            'name': 'cv-idle', 'size': 1024 * 1024,
            'volume_group': client.ref('volume_groups', vg['id'])})
        self.k2.search('stats/volumes')     # starts a sampling period
        result = iscsi_client.write_file(self.source(4 * MIB), self.target())
        self.assertEqual(0, result.returncode, result.stderr)
        points = {p['volume']['ref']: p for p in
                  self.k2.search('stats/volumes')}
        busy = points['/volumes/%d' % self.vol['id']]
        self.assertGreater(busy['write_iops_avg'], 0)
        self.assertGreater(busy['write_throughput_avg'], 0)
        self.assertGreater(busy['write_latency_avg'], 0)
        self.assertEqual(0, points['/volumes/%d' % idle['id']]['iops_avg'])
        one = self.k2.get('stats/volumes', idle['id'])
        self.assertEqual({'ref': '/volumes/%d' % idle['id']}, one['volume'])

    def test_pipelined_large_writes(self):
        # Several 1 MiB writes in flight at once: each needs solicited
        # data (R2T) while the initiator already sends the next commands.
        url = self.target()
        result = iscsi_client.run(
            'qemu-img', 'bench', '-f', 'raw', '-t', 'none', '-c', '48',
            '-d', '8', '-s', str(MIB), '-S', str(MIB), '-w', '--pattern',
            '77', url, timeout=120)
        self.assertEqual(0, result.returncode, result.stderr)
        result = iscsi_client.qemu_io(url, 'read -P 77 0 48M')
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertNotIn('Pattern verification failed', result.stdout)

    def test_round_trip_is_identical_and_thin(self):
        src = self.source()
        result = iscsi_client.write_file(src, self.target())
        self.assertEqual(0, result.returncode, result.stderr)
        back = os.path.join(self.tmp, 'back.raw')
        result = iscsi_client.read_file(self.target(), back)
        self.assertEqual(0, result.returncode, result.stderr)
        with open(back, 'rb') as f:
            self.assertEqual(open(src, 'rb').read(), f.read(32 * MIB))
            self.assertEqual(bytes(1024), f.read(1024))
        cap = self.k2.find('system/capacity')
        # Stored after compression: well under what was written.
        self.assertLess(cap['physical'], 24 * 1024)
        self.assertGreaterEqual(cap['logical'], 31 * 1024)

    def test_libiscsi_sees_size_and_identity(self):
        portal = 'iscsi://%s' % self.array.info['iscsi_portal']
        result = iscsi_client.run('iscsi-ls', '-i', HOST_IQN, '-s', portal)
        self.assertIn(self.array.info['iqn'], result.stdout)
        self.assertIn('Lun:%d' % self.lun, result.stdout)
        result = iscsi_client.run(
            'iscsi-readcapacity16', '-i', HOST_IQN, '%s/%s/%d' % (
                portal, self.array.info['iqn'], self.lun))
        self.assertIn('RETURNED LOGICAL BLOCK ADDRESS:%d' % (
            128 * MIB // 512 - 1), result.stdout)
        result = iscsi_client.run('iscsi-inq', '-i', HOST_IQN, '-e', '1',
                                  '-c', '128', '%s/%s/%d' % (
                                      portal, self.array.info['iqn'],
                                      self.lun))
        self.assertIn(self.vol['scsi_sn'], result.stdout)

    def test_unmapped_initiator_cannot_read(self):
        src = self.source(4 * MIB)
        iscsi_client.write_file(src, self.target())
        stolen = os.path.join(self.tmp, 'stolen.raw')
        result = iscsi_client.read_file(self.target(OTHER_IQN), stolen)
        self.assertNotEqual(0, result.returncode)
        self.assertIn('LOGICAL_UNIT_NOT_SUPPORTED', result.stderr)
        self.assertFalse(os.path.exists(stolen))
        listing = iscsi_client.run(
            'iscsi-ls', '-i', OTHER_IQN, '-s',
            'iscsi://%s' % self.array.info['iscsi_portal'])
        self.assertNotIn('Lun:', listing.stdout)

    def test_discard_frees_space(self):
        src = self.source(16 * MIB)
        iscsi_client.write_file(src, self.target())
        before = self.k2.find('system/capacity')['physical']
        result = iscsi_client.qemu_io(self.target(), 'discard 0 16M')
        self.assertEqual(0, result.returncode, result.stderr)
        after = self.k2.find('system/capacity')['physical']
        self.assertEqual(0, after)
        self.assertGreater(before, 0)
        back = os.path.join(self.tmp, 'back.raw')
        iscsi_client.read_file(self.target(), back)
        with open(back, 'rb') as f:
            self.assertEqual(bytes(16 * MIB), f.read(16 * MIB))

    def test_snapshot_is_read_only_over_iscsi(self):
        iscsi_client.write_file(self.source(4 * MIB), self.target())
        vg = self.k2.find('volume_groups', name='cvg-a')
        snap = self.k2.create('snapshots', {
            'short_name': 's1', 'source': client.ref('volume_groups',
                                                     vg['id'])})
        volsnap = self.k2.find('volsnaps', **{
            'snapshot.ref': '/snapshots/%d' % snap['id']})
        host = self.k2.find('hosts', name='host-a')
        lun = self.k2.create('mappings', {
            'volume': client.ref('volsnaps', volsnap['id']),
            'host': client.ref('hosts', host['id'])})['lun']
        result = iscsi_client.qemu_io(self.target(lun=lun),
                                      'write -P 0x55 0 4k')
        self.assertNotEqual(0, result.returncode)
        self.assertIn('protect', (result.stdout + result.stderr).lower())
