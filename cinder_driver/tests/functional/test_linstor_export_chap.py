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

"""The reference array's LINSTOR devices: only a node's CHAP opens them.

A real DRBD device is open to root on its node only; the array serves it
as an iSCSI LUN, which qemu's libiscsi initiator here must not read or
write without the node's CHAP secret.
"""

import os
import stat

from cinder_driver.tests.functional import linstor_driver_base as base


class LinstorExportChapTestCase(base.LinstorDriverTestCase):

    DIALECT_ONLY = True

    def setUp(self):
        super().setUp()
        from reference_array.linstor import exporter
        from reference_array.tests import iscsi_client
        self.exporter = exporter
        self.iscsi = iscsi_client
        self.data_dir = self.array.info['data_dir']
        self.vol = self.create()
        self.node = self.diskful(self.vol)[0]
        self.other = [n for n in self.target.nodes if n != self.node][0]
        self.chap = exporter.node_chap_from(self.data_dir, self.node)

    def io(self, chap, command):
        return self.iscsi.qemu_io(self.node_lun(self.vol, self.node, chap),
                                  command)

    def test_only_the_node_chap_reads_and_writes(self):
        good = self.io(self.chap, 'write -P 0x3c 0 64k')
        self.assertEqual(0, good.returncode, good.stderr)
        refused = {
            'no CHAP': None,
            'a wrong secret': (self.chap[0], 'not-the-node-secret'),
            "another node's credentials": self.exporter.node_chap_from(
                self.data_dir, self.other),
            "the node's user with another node's secret": (
                self.chap[0], self.exporter.node_chap_from(
                    self.data_dir, self.other)[1]),
        }
        for what, chap in refused.items():
            for command in ('read 0 4k', 'write -P 0xee 0 64k'):
                result = self.io(chap, command)
                self.assertNotEqual(0, result.returncode,
                                    '%s: %s succeeded' % (what, command))
                self.assertNotIn('bytes at offset', result.stdout)
        # Nothing the refused logins tried to write landed.
        self.assertTrue(self.pattern_at(self.vol, self.node, 0, 65536,
                                        0x3c))

    def test_each_node_has_its_own_secret_kept_private(self):
        other = self.exporter.node_chap_from(self.data_dir, self.other)
        self.assertNotEqual(self.chap[1], other[1])
        self.assertGreaterEqual(len(self.chap[1]), 16)
        self.assertEqual(self.exporter.node_initiator(self.node),
                         self.chap[0])
        config = os.path.join(self.data_dir, self.exporter.CONFIG)
        self.assertEqual(0o600, stat.S_IMODE(os.stat(config).st_mode))
        # A failed and a good login; then the secret is in no reply and in
        # no file but the configuration (logs, request logs).
        self.io((self.chap[0], 'not-the-node-secret'), 'read 0 4k')
        self.assertEqual(0, self.io(self.chap, 'read 0 4k').returncode)
        for path in ('/v1/nodes', '/v1/view/resources',
                     '/v1/resource-definitions/volume-%s/volume-definitions'
                     % self.vol.name_id):
            _s, body = self.linstor('GET', path)
            self.assertNotIn(self.chap[1], str(body))
        for top, _dirs, files in os.walk(self.data_dir):
            for name in files:
                path = os.path.join(top, name)
                if path == config or name.startswith('array.db'):
                    continue
                with open(path, 'rb') as f:
                    self.assertNotIn(self.chap[1].encode(), f.read(),
                                     path)
