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

"""The reference array's K2 dialect, driven over real HTTPS."""

import json
import os
import socket
import ssl
import urllib.request

import fixtures
import testtools

from cinder_driver.common import exception
from reference_array.tests import array_fixture

KRST_RESOURCES = (
    'volume_groups', 'volumes', 'snapshots', 'volsnaps', 'hosts',
    'host_iqns', 'host_fc_ports', 'mappings', 'retention_policies',
    'system/state', 'system/capacity', 'system/net_ips', 'system/fc_ports',
    'replication/peer_k2arrays', 'replication/sessions',
    'replication/peer_volumes', 'system/wan_ports', 'stats/volumes')


class K2DialectTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.array = self.useFixture(array_fixture.ReferenceArray())
        self.client = self.array.k2_client()

    def test_ready_line_and_loopback_bind(self):
        info = self.array.info
        self.assertEqual('127.0.0.1', self.array.k2_host)
        self.assertTrue(info['k2'].startswith('https://'))
        self.assertTrue(os.path.isfile(info['ca_cert']))
        self.assertTrue(info['password'])

    def test_discovery_lists_what_krest_needs(self):
        resources = self.client.discover()
        for name in KRST_RESOURCES:
            self.assertEqual('/' + name, resources[name]['url'])

    def test_system_state(self):
        state = self.client.system_state()
        self.assertEqual('ONLINE', state['state'])
        self.assertGreaterEqual(state['rest_api_version'], '2.2.0')
        self.assertTrue(state['iscsi_qualified_target_name'].startswith(
            'iqn.'))

    def test_wrong_password_is_401(self):
        bad = self.array.k2_client(password='not-the-password')
        err = self.assertRaises(exception.ArrayAuthError, bad.discover)
        self.assertEqual(401, err.status)

    def test_unauthenticated_request_is_401_with_k2_error_shape(self):
        ctx = ssl.create_default_context(cafile=self.array.info['ca_cert'])
        req = urllib.request.Request(self.array.info['k2'] + '/api/v2')
        err = self.assertRaises(urllib.error.HTTPError,
                                urllib.request.urlopen, req, context=ctx)
        self.assertEqual(401, err.code)
        self.assertEqual('application/json', err.headers['Content-Type'])
        self.assertIn('error_msg', json.loads(err.read()))

    def test_untrusted_certificate_is_refused_by_default(self):
        strict = self.array.k2_client(verify=True)
        self.assertRaises(exception.ArrayTLSError, strict.discover)

    def test_search_filters(self):
        self.assertEqual(1, len(self.client.search(
            'system/net_ips', ip_address='127.0.0.1')))
        self.assertEqual([], self.client.search('system/net_ips',
                                                ip_address='10.1.1.1'))
        self.assertEqual(2, len(self.client.search('system/fc_ports')))
        one = self.client.http.request(
            'GET', '/system/fc_ports', params={'__limit': 1,
                                               '__sort': 'id',
                                               '__sort_order': 'desc'})[1]
        self.assertEqual((2, 1, 2), (one['total'], len(one['hits']),
                                     one['hits'][0]['id']))
        self.assertEqual(1, len(self.client.search(
            'system/fc_ports', id__in='1,7')))
        self.assertEqual(1, len(self.client.search(
            'system/net_ips', **{'net_port.ref': '/system/net_ports/1'})))

    def test_unknown_query_field_is_rejected(self):
        err = self.assertRaises(exception.ArrayAPIError, self.client.search,
                                'system/net_ips', colour='blue')
        self.assertEqual(400, err.status)
        self.assertIn('colour', err.msg)

    def test_unknown_resource_and_id(self):
        err = self.assertRaises(exception.ArrayAPIError, self.client.get,
                                'no_such_thing', 1)
        self.assertEqual(404, err.status)
        err = self.assertRaises(exception.ArrayAPIError, self.client.get,
                                'system/fc_ports', 99)
        self.assertEqual(404, err.status)

    def test_read_only_resources_refuse_writes(self):
        err = self.assertRaises(exception.ArrayAPIError, self.client.create,
                                'system/net_ips', {'ip_address': '1.2.3.4'})
        self.assertEqual(405, err.status)
        self.assertEqual(1, len(self.client.search('system/net_ips')))

    def test_malformed_json_body(self):
        resp = self.client.http.session.post(
            self.array.info['k2'] + '/api/v2/volumes', data='{"name": ',
            verify=self.array.info['ca_cert'], timeout=10)
        self.assertEqual(400, resp.status_code)
        self.assertIn('malformed JSON', resp.json()['error_msg'])


class SilentClientTestCase(testtools.TestCase):

    def test_silent_client_blocks_neither_service_nor_stop(self):
        array = array_fixture.ReferenceArray()
        array.setUp()
        self.addCleanup(array.cleanUp)
        # Connects and never starts TLS: must not stall other clients.
        silent = socket.create_connection((array.k2_host, array.k2_port))
        self.addCleanup(silent.close)
        client = array.k2_client()
        client.http.timeout = (5, 5)
        self.assertEqual('ONLINE', client.system_state()['state'])
        self.assertEqual(0, array.stop())


class LifecycleTestCase(testtools.TestCase):

    def test_restart_keeps_identity_and_sigterm_is_clean(self):
        data_dir = self.useFixture(__import__('fixtures').TempDir()).path
        first = array_fixture.ReferenceArray(data_dir=data_dir)
        first.setUp()
        info1 = dict(first.info)
        state1 = first.k2_client().system_state()
        port = first.k2_port
        self.assertEqual(0, first.stop())
        first.cleanUp()
        # The port is released: nothing is left listening.
        with socket.socket() as s:
            self.assertNotEqual(0, s.connect_ex(('127.0.0.1', port)))
        second = self.useFixture(array_fixture.ReferenceArray(
            data_dir=data_dir))
        state2 = second.k2_client().system_state()
        self.assertEqual(state1['system_id'], state2['system_id'])
        self.assertEqual(info1['password'], second.info['password'])
        self.assertEqual(info1['ca_cert'], second.info['ca_cert'])

    def test_configured_user(self):
        self.useFixture(fixtures.EnvironmentVariable(
            'REFERENCE_ARRAY_PASSWORD', 'pw-for-test'))
        arr = self.useFixture(array_fixture.ReferenceArray(
            args=['--user', 'cinder']))
        self.assertEqual('cinder', arr.info['user'])
        self.assertEqual('ONLINE', arr.k2_client().system_state()['state'])
