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

"""Cinder 29's in-tree K2 driver, unmodified, against the reference array.

It runs with krest 1.3.7, the last release it works with. Its clone and
volume-from-snapshot copy data through the cinder-volume host: os-brick
attaches the source (a view, for a snapshot) and the new volume with the
kernel's iSCSI initiator and ``dd`` copies between them. This machine
has no kernel initiator, so the host's part is played in user space:
each connection the driver hands os-brick is opened by qemu's libiscsi
initiator under the connector's initiator name, and qemu-img copies.
The driver's own calls, the array's mappings and the bytes are real.
"""

import hashlib
import os
from unittest import mock

from cinder import context
from cinder.tests.unit import fake_snapshot
from cinder.tests.unit import fake_volume
from cinder.tests.unit import test
from cinder.volume import configuration
from cinder.volume import driver as volume_driver
from cinder.volume.drivers.kaminario import kaminario_iscsi
from cinder.volume.drivers.san import san
from cinder.volume import volume_utils
import fixtures
from oslo_utils import uuidutils
import urllib3

from cinder_driver.k2 import client
from reference_array.tests import array_fixture
from reference_array.tests import iscsi_client

GROUP = 'intree-k2'
CONNECTOR = {'host': 'compute-1', 'ip': '127.0.0.1', 'multipath': False,
             'initiator': 'iqn.1993-08.org.debian:01:intree'}
MIB = 1024 * 1024
GIB = 1024 * MIB


class InTreeKaminarioTestCase(test.TestCase):

    def setUp(self):
        super().setUp()
        # The in-tree driver turns certificate checks off; krest then warns
        # on every call.
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        self.array = self.useFixture(array_fixture.ReferenceArray())
        conf = configuration.Configuration(volume_driver.volume_opts,
                                           config_group=GROUP)
        conf.append_config_values(san.san_opts)
        for key, value in (
                ('san_ip', '%s:%s' % (self.array.k2_host,
                                      self.array.k2_port)),
                ('san_login', self.array.info['user']),
                ('san_password', self.array.info['password']),
                ('volume_backend_name', GROUP)):
            self.override_config(key, value, group=GROUP)
        self.driver = kaminario_iscsi.KaminarioISCSIDriver(
            configuration=conf)
        self.ctx = context.get_admin_context()
        # As cinder-volume starts a driver.
        self.driver.do_setup(self.ctx)
        self.driver.check_for_setup_error()

    def _volume(self, **specs):
        vol = fake_volume.fake_volume_obj(
            self.ctx, id=uuidutils.generate_uuid(), size=1,
            provider_id=None)
        vol.volume_type = fake_volume.fake_volume_type_obj(
            self.ctx, id=uuidutils.generate_uuid(), extra_specs=specs)
        return vol

    def test_lifecycle(self):
        drv = self.driver
        vol = self._volume()
        drv.create_volume(vol)
        drv.extend_volume(vol, 2)
        k2 = self.array.k2_client()
        found = k2.find('volumes', name='cv-%s' % vol.id)
        self.assertEqual(2 * 1024 * 1024, found['size'])
        snap = fake_snapshot.fake_snapshot_obj(
            self.ctx, id=uuidutils.generate_uuid(), volume_id=vol.id)
        snap.volume = vol
        drv.create_snapshot(snap)
        info = drv.initialize_connection(vol, CONNECTOR)
        self.assertEqual(k2.system_state()['iscsi_qualified_target_name'],
                         info['data']['target_iqn'])
        self.assertEqual(1, len(k2.search('mappings')))
        drv.terminate_connection(vol, CONNECTOR)
        self.assertEqual([], k2.search('mappings'))
        stats = drv.get_volume_stats(True)
        self.assertEqual(1, stats['total_volumes'])
        self.assertEqual(2.0, stats['provisioned_capacity_gb'])
        nodedup = self._volume(**{'kaminario:thin_prov_type': 'nodedup'})
        drv.create_volume(nodedup)
        self.assertFalse(k2.find('volumes', name='cv-%s' % nodedup.id)[
            'is_dedup'])
        drv.delete_snapshot(snap)
        drv.delete_volume(vol)
        drv.delete_volume(nodedup)
        self.assertEqual(['CTRL'], [v['name'] for v in
                                    k2.search('volumes')])
        self.assertEqual([], self.array.k2_failures())

    def test_manage_and_retype(self):
        k2 = self.array.k2_client()
        group = k2.create('volume_groups', {'name': 'legacy-vg', 'quota': 0,
                                            'is_dedup': True})
        k2.create('volumes', {'name': 'legacy', 'size': 1024 * 1024,
                              'volume_group': client.ref('volume_groups',
                                                         group['id'])})
        vol = self._volume()
        ref = {'source-name': 'legacy'}
        self.assertEqual(1, self.driver.manage_existing_get_size(vol, ref))
        self.driver.manage_existing(vol, ref)
        self.assertIsNotNone(k2.find('volumes', name='cv-%s' % vol.id))
        self.assertIsNotNone(k2.find('volume_groups',
                                     name='cvg-%s' % vol.id))
        # Retype to nodedup: the in-tree driver declines (it cannot change
        # deduplication) and leaves the volume as it was.
        nodedup = {'extra_specs': {'kaminario:thin_prov_type': 'nodedup'}}
        self.assertFalse(self.driver.retype(
            self.ctx, vol, nodedup, {'extra_specs': {}}, {'host': 'x'}))
        self.assertTrue(k2.find('volumes', name='cv-%s' % vol.id)[
            'is_dedup'])
        self.assertEqual([], self.array.k2_failures())

    # -- the cinder-volume host's part of a copy, in user space --------------

    def _host_in_user_space(self):
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.attached = []
        # What os-brick and dd do on the cinder-volume host.
        for target, name, fake in (
                (volume_utils, 'brick_get_connector_properties',
                 lambda *a, **k: dict(CONNECTOR)),
                (volume_utils, 'copy_volume', self._copy),
                (self.driver, '_connect_device', self._connect)):
            patcher = mock.patch.object(target, name, side_effect=fake)
            patcher.start()
            self.addCleanup(patcher.stop)

    def _url(self, data):
        # The driver names K2's fixed iSCSI port; this array listens on
        # the port it was given.
        host = data['target_portal'].rsplit(':', 1)[0]
        port = self.array.info['iscsi_portal'].rsplit(':', 1)[1]
        return iscsi_client.url('%s:%s' % (host, port), data['target_iqn'],
                                data['target_lun'], CONNECTOR['initiator'])

    def _connect(self, conn):
        url = self._url(conn['data'])
        self.attached.append(url)
        # No os-brick connector: nothing for the driver to disconnect.
        return {'conn': conn, 'device': {'path': url}, 'connector': None}

    def _copy(self, src, dest, size_in_m, blocksize, sparse=False, **kw):
        result = iscsi_client.run(
            'qemu-img', 'convert', '-n', '-f', 'raw', '-O', 'raw', src, dest)
        self.assertEqual(0, result.returncode, result.stderr)

    def _pattern(self, name, size=4 * MIB):
        path = os.path.join(self.tmp, name)
        with open(path, 'wb') as f:
            f.write(os.urandom(size))
        return path

    def _write(self, vol, path, offset=0):
        info = self.driver.initialize_connection(vol, CONNECTOR)
        try:
            result = iscsi_client.run(
                'qemu-io', '-f', 'raw', '-c', 'write -s %s %d %d' % (
                    path, offset, os.path.getsize(path)),
                self._url(info['data']))
            self.assertEqual(0, result.returncode, result.stderr)
        finally:
            self.driver.terminate_connection(vol, CONNECTOR)

    def _read(self, vol, offset, length):
        info = self.driver.initialize_connection(vol, CONNECTOR)
        back = os.path.join(self.tmp, 'back')
        try:
            result = iscsi_client.run(
                'qemu-img', 'dd', '-f', 'raw', '-O', 'raw',
                'if=' + self._url(info['data']), 'of=' + back,
                # qemu-img dd counts the skipped blocks in ``count``.
                'bs=%d' % length, 'skip=%d' % (offset // length),
                'count=%d' % (offset // length + 1))
            self.assertEqual(0, result.returncode, result.stderr)
        finally:
            self.driver.terminate_connection(vol, CONNECTOR)
        with open(back, 'rb') as f:
            return f.read()

    def test_clone_and_volume_from_snapshot_copy_the_data(self):
        self._host_in_user_space()
        drv = self.driver
        k2 = self.array.k2_client()
        src = self._volume()
        drv.create_volume(src)
        first, second = self._pattern('first'), self._pattern('second')
        tail = self._pattern('tail', MIB)
        self._write(src, first)
        self._write(src, tail, GIB - MIB)
        snap = fake_snapshot.fake_snapshot_obj(
            self.ctx, id=uuidutils.generate_uuid(), volume_id=src.id)
        snap.volume = src
        drv.create_snapshot(snap)
        # After the snapshot the source changes: a volume made from the
        # snapshot has the first pattern, a clone the second.
        self._write(src, second)
        from_snap, clone = self._volume(), self._volume()
        drv.create_volume_from_snapshot(from_snap, snap)
        drv.create_cloned_volume(clone, src)
        self.assertEqual(4, len(self.attached))
        for name, vol, head in (('from snapshot', from_snap, first),
                                ('clone', clone, second),
                                ('source', src, second)):
            for path, offset, length in ((head, 0, 4 * MIB),
                                         (tail, GIB - MIB, MIB)):
                with open(path, 'rb') as f:
                    want = hashlib.sha256(f.read()).hexdigest()
                got = hashlib.sha256(self._read(vol, offset,
                                                length)).hexdigest()
                self.assertEqual(want, got, '%s at %d' % (name, offset))
        # The view the driver made for the copy is gone, and so are its
        # mappings and the host it created.
        self.assertEqual([], k2.search('mappings'))
        self.assertEqual([], [s['short_name'] for s in k2.search('snapshots')
                              if s['short_name'].startswith('cview-')])
        self.assertEqual([], self.array.k2_failures())
        drv.delete_volume(from_snap)
        drv.delete_volume(clone)
        drv.delete_snapshot(snap)
        drv.delete_volume(src)
        self.assertEqual(['CTRL'], [v['name'] for v in
                                    k2.search('volumes')])
