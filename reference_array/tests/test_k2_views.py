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

"""K2 views over iSCSI: an exposable snapshot is writable and mappable,
and its writes reach neither its source volume nor clones of it.
"""

import hashlib
import os

import fixtures
import testtools

from cinder_driver.k2 import client
from reference_array.tests import array_fixture
from reference_array.tests import iscsi_client

MIB = 1024 * 1024
INITIATOR = 'iqn.2026-01.io.test:views'


class ViewTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.array = self.useFixture(array_fixture.ReferenceArray())
        self.k2 = self.array.k2_client()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.host = self.k2.create('hosts', {'name': 'views'})
        self.k2.create('host_iqns', {'iqn': INITIATOR, 'host': self._ref(
            'hosts', self.host)})
        self.vg = self.k2.create('volume_groups', {'name': 'vg', 'quota': 0})

    @staticmethod
    def _ref(resource, obj):
        return client.ref(resource, obj['id'])

    def _map(self, ref):
        mapping = self.k2.create('mappings', {
            'volume': {'ref': ref}, 'host': self._ref('hosts', self.host)})
        return mapping, iscsi_client.url(
            self.array.info['iscsi_portal'], self.array.info['iqn'],
            mapping['lun'], INITIATOR)

    def _write(self, target, byte_seed):
        path = os.path.join(self.tmp, 'pattern')
        data = hashlib.sha256(byte_seed).digest() * (MIB // 32)
        with open(path, 'wb') as f:
            f.write(data)
        result = iscsi_client.write_file(path, target)
        self.assertEqual(0, result.returncode, result.stderr)
        return hashlib.sha256(data).hexdigest()

    def _digest(self, target):
        path = os.path.join(self.tmp, 'back')
        result = iscsi_client.run('qemu-img', 'dd', '-f', 'raw', '-O', 'raw',
                                  'if=' + target, 'of=' + path,
                                  'bs=%d' % MIB, 'count=1')
        self.assertEqual(0, result.returncode, result.stderr)
        with open(path, 'rb') as f:
            return hashlib.sha256(f.read()).hexdigest()

    def _view_isolation(self, exposable_at_create):
        vol = self.k2.create('volumes', {
            'name': 'src', 'size': 64 * 1024,
            'volume_group': self._ref('volume_groups', self.vg)})
        _m, vol_lun = self._map('/volumes/%d' % vol['id'])
        before = self._write(vol_lun, b'before')
        snap = self.k2.create('snapshots', {
            'short_name': 's', 'is_exposable': exposable_at_create,
            'source': self._ref('volume_groups', self.vg)})
        clone = self.k2.create('volumes', {
            'name': 'clone', 'size': 64 * 1024,
            'volume_group': self._ref('volume_groups', self.vg),
            'source': client.ref('volsnaps', self.k2.search(
                'volsnaps', **{'snapshot.ref': '/snapshots/%d' % snap[
                    'id']})[0]['id'])})
        if not exposable_at_create:
            self.k2.update('snapshots', snap['id'], {'is_exposable': True})
        # The view is mapped as K2's own clients do: by the snapshot.
        mapping, view_lun = self._map('/snapshots/%d' % snap['id'])
        volsnap = self.k2.search('volsnaps', **{
            'snapshot.ref': '/snapshots/%d' % snap['id']})[0]
        self.assertEqual('/volsnaps/%d' % volsnap['id'],
                         mapping['volume']['ref'])
        self.assertEqual(before, self._digest(view_lun))
        written = self._write(view_lun, b'into the view')
        self.assertEqual(written, self._digest(view_lun))
        _m, clone_lun = self._map('/volumes/%d' % clone['id'])
        self.assertEqual(before, self._digest(vol_lun))
        self.assertEqual(before, self._digest(clone_lun))
        # The filter by the view's ref finds its mapping, so it can go.
        found = self.k2.search('mappings', **{
            'volume.ref': '/snapshots/%d' % snap['id']})
        self.assertEqual([mapping['id']], [m['id'] for m in found])
        self.k2.delete('mappings', mapping['id'])
        self.k2.delete('snapshots', snap['id'])

    def test_a_view_made_exposable_at_creation_is_isolated(self):
        self._view_isolation(True)

    def test_a_snapshot_patched_exposable_is_isolated(self):
        self._view_isolation(False)

    def test_a_snapshot_that_is_not_a_view_cannot_be_mapped(self):
        snap = self.k2.create('snapshots', {
            'short_name': 's', 'source': self._ref('volume_groups',
                                                   self.vg)})
        status, _ = self._raw_map('/snapshots/%d' % snap['id'])
        self.assertEqual(400, status)

    def _raw_map(self, ref):
        import requests
        resp = requests.post(
            'https://%s:%s/api/v2/mappings' % (self.array.k2_host,
                                               self.array.k2_port),
            json={'volume': {'ref': ref},
                  'host': {'ref': '/hosts/%d' % self.host['id']}},
            auth=(self.array.info['user'], self.array.info['password']),
            verify=self.array.info['ca_cert'], timeout=10)
        return resp.status_code, resp.json()
