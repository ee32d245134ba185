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

"""Bytes through a volume the K2 driver attached, with a real initiator."""

import os

import fixtures

from cinder_driver.tests.functional import k2_driver_base
from reference_array.tests import iscsi_client

MIB = 1024 * 1024
HOST_IQN = 'iqn.2026-01.io.test:host-a'


class DriverDataPathTestCase(k2_driver_base.K2DriverTestCase):
    """Attach through the driver and move bytes with a real initiator."""

    CONNECTOR = dict(k2_driver_base.CONNECTOR, initiator=HOST_IQN)

    def make_driver(self, **overrides):
        overrides.setdefault('k2_iscsi_portals',
                             [self.array.info['iscsi_portal']])
        return super().make_driver(**overrides)

    def test_clone_carries_the_data_without_the_host(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        src_file = os.path.join(tmp, 'src.raw')
        with open(src_file, 'wb') as f:
            f.write(os.urandom(8 * MIB))
        vol = self.create(size=1)
        info = self.driver.initialize_connection(vol, self.CONNECTOR)
        target = iscsi_client.from_connection_info(info, HOST_IQN)
        result = iscsi_client.write_file(src_file, target)
        self.assertEqual(0, result.returncode, result.stderr)
        self.driver.terminate_connection(vol, self.CONNECTOR)
        clone = self.volume(size=2)
        clone.update(self.driver.create_cloned_volume(clone, vol))
        snap = self.snapshot(vol)
        # Overwrite the source: the clone and the snapshot keep the old data.
        info = self.driver.initialize_connection(vol, self.CONNECTOR)
        iscsi_client.qemu_io(iscsi_client.from_connection_info(
            info, HOST_IQN), 'write -P 0x11 0 8M')
        from_snap = self.volume(size=1)
        from_snap.update(self.driver.create_volume_from_snapshot(from_snap,
                                                                 snap))
        for copy in (clone, from_snap):
            info = self.driver.initialize_connection(copy, self.CONNECTOR)
            back = os.path.join(tmp, 'back-%s.raw' % copy.id)
            result = iscsi_client.read_file(
                iscsi_client.from_connection_info(info, HOST_IQN), back)
            self.assertEqual(0, result.returncode, result.stderr)
            with open(back, 'rb') as f, open(src_file, 'rb') as g:
                self.assertEqual(g.read(), f.read(8 * MIB))
