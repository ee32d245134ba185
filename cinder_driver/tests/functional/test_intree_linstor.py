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

"""Cinder 29's in-tree LINSTOR driver, unmodified, against the reference
array's LINSTOR dialect (with python-linstor, the vendor's client).

Its stats and attach read a controller at the hard-coded
``linstor://localhost`` and the local host name; the create, snapshot,
clone, extend and delete lifecycle runs here.
"""

import socket

from cinder import context
from cinder.tests.unit import fake_snapshot
from cinder.tests.unit import fake_volume
from cinder.tests.unit import test
from cinder.volume import configuration
from cinder.volume import driver as volume_driver
from cinder.volume.drivers import linstordrv
from oslo_utils import uuidutils

from reference_array.tests import array_fixture

GROUP = 'intree-linstor'


class InTreeLinstorTestCase(test.TestCase):

    def setUp(self):
        super().setUp()
        # The in-tree driver's own node is this machine's host name.
        self.array = self.useFixture(array_fixture.ReferenceArray(
            args=['--capacity-gib', '16', '--linstor-local-node',
                  socket.gethostname()]))
        conf = configuration.Configuration(volume_driver.volume_opts,
                                           config_group=GROUP)
        conf.append_config_values(linstordrv.linstor_opts)
        for key, value in (
                ('linstor_default_uri', self.array.linstor_url.replace(
                    'http://', 'linstor://')),
                ('linstor_autoplace_count', 2),
                ('volume_backend_name', GROUP)):
            self.override_config(key, value, group=GROUP)
        self.driver = linstordrv.LinstorDrbdDriver(configuration=conf)
        self.ctx = context.get_admin_context()
        self.driver.do_setup(self.ctx)
        self.driver.check_for_setup_error()

    def _volume(self, size=1):
        return fake_volume.fake_volume_obj(
            self.ctx, id=uuidutils.generate_uuid(), size=size,
            provider_id=None)

    def _rd(self, vol):
        # The list GET: LINSTOR's single-definition GET carries no volume
        # definitions.
        status, body = self.array.linstor(
            'GET', '/v1/resource-definitions', params={
                'resource_definitions': 'CV_%s' % vol.id,
                'with_volume_definitions': 'true'})
        return body[0] if status == 200 and body else None

    def _nodes(self, vol):
        _s, rows = self.array.linstor(
            'GET', '/v1/view/resources',
            params={'resources': 'CV_%s' % vol.id})
        return {r['node_name']: r['flags'] for r in rows}

    def test_lifecycle(self):
        vol = self._volume()
        self.driver.create_volume(vol)
        nodes = self._nodes(vol)
        self.assertEqual(3, len(nodes))
        self.assertEqual(2, len([f for f in nodes.values() if not f]))
        self.assertIn('DRBD_DISKLESS', nodes[socket.gethostname()])
        # Its sizes are 4 MiB short of the volume (linstor_volume_
        # downsize_factor).
        self.assertEqual(1024 * 1024 - 4096, self._rd(vol)[
            'volume_definitions'][0]['size_kib'])

        self.driver.extend_volume(vol, 2)
        self.assertEqual(2 * 1024 * 1024 - 4096, self._rd(vol)[
            'volume_definitions'][0]['size_kib'])

        snap = fake_snapshot.fake_snapshot_obj(
            self.ctx, id=uuidutils.generate_uuid(), volume_id=vol.id,
            volume_size=2)
        snap.volume = vol
        self.driver.create_snapshot(snap)
        _s, snaps = self.array.linstor('GET', '/v1/view/snapshots')
        self.assertEqual(['SN_%s' % snap.id], [s['name'] for s in snaps])

        from_snap = self._volume(2)
        self.driver.create_volume_from_snapshot(from_snap, snap)
        self.assertIsNotNone(self._rd(from_snap))

        clone = self._volume(2)
        self.driver.create_cloned_volume(clone, vol)
        self.assertIsNotNone(self._rd(clone))

        self.driver.delete_snapshot(snap)
        for each in (clone, from_snap, vol):
            self.driver.delete_volume(each)
            self.assertIsNone(self._rd(each))
        # The driver's calls; the test's own not-found GETs aside.
        failures = [line for line in self._log() if int(line.split()[2])
                    >= 400 and not line.startswith('GET ')]
        self.assertEqual([], failures)

    def _log(self):
        import os
        with open(os.path.join(self.array.data_dir,
                               'linstor-requests.log')) as f:
            return [line.strip() for line in f]
