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

"""K2 driver on an array without volume copies: the volume host copies."""

import os

import fixtures

from cinder_driver.common import exception as flash_exception
from cinder_driver.tests.functional import k2_driver_base
from reference_array.tests import array_fixture
from reference_array.tests import iscsi_client

CONNECTOR = k2_driver_base.CONNECTOR
MIB = 1024 * 1024


class K2HostCopyTestCase(k2_driver_base.K2DriverTestCase):

    def setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'reference_array.tests.array_fixture.ReferenceArray.'
            '__init__', _no_source_init))
        super().setUp()

    def make_driver(self, driver_kwargs=None, **overrides):
        # Test arrays listen on a random iSCSI port.
        overrides.setdefault('k2_iscsi_portals',
                             [self.array.info['iscsi_portal']])
        return super().make_driver(driver_kwargs, **overrides)

    def lun(self, vol):
        info = self.driver.initialize_connection(vol, CONNECTOR)
        return iscsi_client.from_connection_info(info,
                                                 CONNECTOR['initiator'])

    def fill(self, vol, size=6 * MIB):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'src')
        with open(path, 'wb') as f:
            f.write(os.urandom(size // 2))
            f.seek(size - MIB)
            f.write(os.urandom(MIB))
        result = iscsi_client.write_file(path, self.lun(vol))
        self.assertEqual(0, result.returncode, result.stderr)
        self.driver.terminate_connection(vol, CONNECTOR)
        return path

    def assert_holds(self, vol, path):
        back = path + '.back'
        result = iscsi_client.read_file(self.lun(vol), back)
        self.assertEqual(0, result.returncode, result.stderr)
        self.driver.terminate_connection(vol, CONNECTOR)
        with open(path, 'rb') as want, open(back, 'rb') as got:
            data = want.read()
            self.assertEqual(data, got.read(len(data)))
            self.assertEqual(bytes(MIB), got.read(MIB))

    def test_array_offers_no_copy(self):
        self.assertFalse(self.driver.adapter.capabilities.get(
            'volume_source'))

    def test_clone_is_a_thin_independent_copy(self):
        src = self.create(1)
        data = self.fill(src)
        clone = self.volume(2)
        clone.update(self.driver.create_cloned_volume(clone, src))
        self.assert_holds(clone, data)
        # Thin: the unwritten middle of the source was not written.
        copied = self.array_volume(clone)['logical_capacity']
        self.assertLessEqual(copied, 5 * 1024)
        self.driver.delete_volume(src)
        self.assert_holds(clone, data)
        k2 = self.array.k2_client()
        self.assertEqual([], k2.search('snapshots'))
        self.assertEqual([], k2.search('mappings'))

    def test_volume_from_snapshot(self):
        src = self.create(1)
        data = self.fill(src)
        snap = self.snapshot(src)
        self.fill(src)      # the snapshot keeps the first data
        vol = self.volume(1)
        vol.update(self.driver.create_volume_from_snapshot(vol, snap))
        self.assert_holds(vol, data)

    def test_failed_copy_leaves_nothing(self):
        src = self.create(1)
        self.fill(src)
        self.array.inject({'path': '^/api/v2/mappings$', 'methods': ['POST'],
                           'kind': 'status', 'status': 500, 'count': 1})
        clone = self.volume(1)
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.driver.create_cloned_volume,
                          clone, src)
        self.array.clear_faults()
        k2 = self.array.k2_client()
        self.assertIsNone(self.array_volume(clone))
        self.assertEqual([], k2.search('snapshots'))
        self.assertEqual(1, len(k2.search('volume_groups')))


_original_init = array_fixture.ReferenceArray.__init__


def _no_source_init(self, data_dir=None, args=(), **kwargs):
    _original_init(self, data_dir, list(args) + ['--no-volume-source'],
                   **kwargs)
