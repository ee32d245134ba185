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

"""The typed K2 client: each operation's wire form and reply checks."""

import json
from urllib import parse

from cinder.tests.unit import test
import ddt
import requests

from cinder_driver.common import exception
from cinder_driver.k2 import client
from cinder_driver.tests.unit import fake_http

Reply = fake_http.Reply
BASE = 'https://10.0.0.5:8443/api/v2'


def hits(*objects):
    return Reply(200, {'hits': list(objects), 'total': len(objects)})


@ddt.ddt
class K2ClientTestCase(test.TestCase):

    def setUp(self):
        super().setUp()
        self.sleeps = []
        self.client = client.K2Client('10.0.0.5', 'admin', 'pw', port=8443,
                                      retries=0, read_timeout=3,
                                      sleep=self.sleeps.append)

    def _script(self, *replies):
        self.http = fake_http.mount(self.client.http, replies)
        return self.http

    def sent(self):
        """(method, path, query, body) of every request made."""
        out = []
        for call in self.http.calls:
            url = parse.urlsplit(call['url'])
            query = dict(parse.parse_qsl(url.query))
            query.pop('__limit', None)
            body = json.loads(call['body']) if call['body'] else None
            out.append((call['method'], url.path[len('/api/v2'):], query,
                        body))
        return out

    def test_create_volume_group(self):
        self._script(Reply(201, {'id': 5, 'name': 'cvg-1'}))
        self.assertEqual(5, self.client.create_volume_group('cvg-1', False))
        self.assertEqual([('POST', '/volume_groups', {}, {
            'name': 'cvg-1', 'quota': 0, 'is_dedup': False})], self.sent())

    def test_create_volume_from_volsnap(self):
        self._script(Reply(201, {'id': 6}))
        self.assertEqual(6, self.client.create_volume(
            'cv-1', 1024, 5, description='cinder:1', from_volsnap=4))
        self.assertEqual([('POST', '/volumes', {}, {
            'name': 'cv-1', 'size': 1024, 'description': 'cinder:1',
            'volume_group': {'ref': '/volume_groups/5'},
            'source': {'ref': '/volsnaps/4'}})], self.sent())

    def test_every_create_recovers_a_lost_answer(self):
        self._script(Reply(raises=requests.exceptions.ReadTimeout('slow')),
                     hits({'id': 30}))
        self.assertEqual(30, self.client.create_snapshot(
            'cgs-1', 20, 1, description='x'))
        post, lookup = self.sent()
        self.assertEqual(('POST', '/snapshots'), post[:2])
        self.assertEqual(('GET', '/snapshots', {
            'short_name': 'cgs-1', 'volume_group.ref': '/volume_groups/20'}),
            lookup[:3])

    def test_refused_create_is_object_exists(self):
        self._script(Reply(400, {'error_msg': 'host h1 already exists'}))
        err = self.assertRaises(exception.ObjectExists,
                                self.client.create_host, 'h1')
        self.assertIn('already exists', err.msg)
        self.assertEqual(1, len(self.sent()))

    def test_map_volume_returns_the_lun(self):
        self._script(Reply(201, {'id': 8, 'lun': 4, 'host': {
            'ref': '/hosts/3'}, 'volume': {'ref': '/volumes/9'}}))
        self.assertEqual(4, self.client.map_volume(3, 9))
        self.assertEqual([('POST', '/mappings', {}, {
            'volume': {'ref': '/volumes/9'}, 'host': {'ref': '/hosts/3'}})],
            self.sent())

    def test_map_volume_already_mapped(self):
        self._script(Reply(400, {'error_msg': 'already mapped'}),
                     hits({'id': 8, 'lun': 6, 'host': {'ref': '/hosts/3'},
                           'volume': {'ref': '/volumes/9'}}))
        self.assertEqual(6, self.client.map_volume(3, 9))
        self.assertEqual(('GET', '/mappings', {
            'volume.ref': '/volumes/9', 'host.ref': '/hosts/3'}),
            self.sent()[1][:3])

    def test_map_to_a_host_that_is_gone(self):
        self._script(Reply(400, {'error_msg': 'host /hosts/3 does not '
                                              'exist'}),
                     hits(), Reply(404, {'error_msg': 'no host 3'}))
        self.assertRaises(exception.ObjectNotFound, self.client.map_volume,
                          3, 9)

    def test_mappings_of_volume_and_host(self):
        self._script(hits({'id': 8, 'lun': 1, 'host': {'ref': '/hosts/3'},
                           'volume': {'ref': '/volumes/9'}}))
        found = self.client.mappings_of(volume_id=9, host_id=3)
        self.assertEqual([(8, 1, 3)], [(m.id, m.lun, m.host_id)
                                       for m in found])
        self.assertEqual({'volume.ref': '/volumes/9', 'host.ref': '/hosts/3'},
                         self.sent()[0][2])

    def test_host_of_fc_initiators(self):
        self._script(hits({'id': 1, 'pwwn': 'x', 'host': {'ref':
                                                          '/hosts/3'}}))
        self.assertEqual(3, self.client.host_of_initiators(
            'fc', ['10:00:00:90:fa:00:00:01', '10:00:00:90:fa:00:00:02']))
        self.assertEqual(('GET', '/host_fc_ports', {
            'pwwn__in': '10:00:00:90:fa:00:00:01,10:00:00:90:fa:00:00:02'}),
            self.sent()[0][:3])

    def test_add_iscsi_initiator(self):
        self._script(Reply(201, {'id': 2}))
        self.client.add_initiator('iscsi', 3, 'iqn.2026-01.io.x:h')
        self.assertEqual([('POST', '/host_iqns', {}, {
            'iqn': 'iqn.2026-01.io.x:h', 'host': {'ref': '/hosts/3'}})],
            self.sent())

    def test_existing_auth_profile_gets_the_credentials(self):
        self._script(Reply(400, {'error_msg': 'name taken'}),
                     hits({'id': 5, 'name': 'h1'}), Reply(200, {'id': 5}))
        self.assertEqual(5, self.client.ensure_auth_profile('h1', 'u', 's'))
        self.assertEqual(('PATCH', '/host_auth_profiles/5', {},
                          {'username': 'u', 'secret': 's'}), self.sent()[2])

    def test_volsnap_of_a_volume(self):
        self._script(hits({'id': 41}))
        self.assertEqual(41, self.client.volsnap_of(30, volume_id=9))
        self.assertEqual({'snapshot.ref': '/snapshots/30',
                          'source.ref': '/volumes/9'}, self.sent()[0][2])

    def test_volsnaps_of_a_snapshot(self):
        self._script(hits({'id': 41, 'source': {'ref': '/volumes/9'}},
                          {'id': 42, 'source': {'ref': '/volumes/10'}}))
        self.assertEqual({9: 41, 10: 42}, self.client.volsnaps_of(30))

    def test_restore(self):
        self._script(Reply(200, {'id': 7}))
        self.client.restore_volume_group(7, 3)
        self.assertEqual([('PATCH', '/volume_groups/7', {}, {
            'last_restored_from': {'ref': '/snapshots/3'}})], self.sent())

    def test_delete_refused_is_busy(self):
        self._script(Reply(400, {'error_msg': 'volume is mapped'}))
        self.assertRaises(exception.ObjectBusy, self.client.delete_volume, 9)

    def test_volumes_by_names_in_one_call(self):
        self._script(hits({'id': 1, 'name': 'cv-a', 'size': 1,
                           'volume_group': {'ref': '/volume_groups/2'}}))
        found = self.client.volumes_by_names({'cv-b', 'cv-a'})
        self.assertEqual({'cv-a'}, set(found))
        self.assertEqual(2, found['cv-a'].group_id)
        self.assertEqual({'name__in': 'cv-a,cv-b'}, self.sent()[0][2])
        self.assertEqual({}, self.client.volumes_by_names(set()))

    @ddt.data(('volume_by_name', ('cv-1',),
               {'id': 1, 'name': 'cv-1', 'volume_group': {'ref': '/x/y'},
                'size': 1}),
              ('volume_by_name', ('cv-1',), {'id': 1, 'name': 'cv-1'}),
              ('mappings_of', (), {'id': 1, 'lun': 'A', 'host': {
                  'ref': '/hosts/1'}, 'volume': {'ref': '/volumes/1'}}),
              ('volume_group_by_name', ('g',), {'id': 1, 'name': 'g',
                                                'is_dedup': 'yes'}),
              ('session_by_name', ('s',), {'id': 1, 'name': 's',
                                           'state': 7}),
              ('host_of_initiators', ('iscsi', ['i']), {'id': 1,
                                                        'host': None}))
    @ddt.unpack
    def test_malformed_objects_name_the_operation(self, operation, args,
                                                  obj):
        self._script(hits(obj))
        err = self.assertRaises(exception.ArrayBadReply,
                                getattr(self.client, operation), *args)
        self.assertIn(operation, err.msg)

    def test_capacity_must_be_integers(self):
        self._script(hits({'total': 'lots'}))
        err = self.assertRaises(exception.ArrayBadReply,
                                self.client.capacity)
        self.assertIn('capacity', err.msg)

    def test_system_state(self):
        self._script(hits({'id': 1, 'system_id': 77, 'state': 'ONLINE',
                           'rest_api_version': '2.2',
                           'iscsi_qualified_target_name': 'iqn.x'}))
        state = self.client.system_state()
        self.assertEqual((77, 'iqn.x', '2.2'), (
            state.system_id, state.iscsi_target, state.api_version))

    def test_iscsi_addresses_skip_replication_ports(self):
        self._script(hits({'ip_address': '192.0.2.21', 'wan_port': None},
                          {'ip_address': '192.0.2.99',
                           'wan_port': {'ref': '/system/wan_ports/1'}},
                          {'ip_address': None}))
        self.assertEqual(['192.0.2.21'], self.client.iscsi_addresses())

    def test_fc_target_wwns(self):
        self._script(hits({'pwwn': '50:02:4F:40:00:00:01:00'}, {'pwwn': 5}))
        self.assertEqual(['50024f4000000100'], self.client.fc_target_wwns())
