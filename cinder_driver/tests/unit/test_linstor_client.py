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

"""LINSTOR client: URIs, controller failover and ApiCallRc checks."""

from cinder.tests.unit import test
import requests

from cinder_driver.common import exception as flash_exception
from cinder_driver.linstor import client
from cinder_driver.tests.unit import fake_http
from cinder_driver.tests.unit import linstor_fakes as fakes

Reply = fake_http.Reply


def make(uris=('linstor://192.0.2.30',), replies=()):
    lc = client.LinstorClient(list(uris), retries=0, backoff=0,
                              connect_timeout=3, read_timeout=7)
    adapters = [fake_http.mount(s, replies) for s in lc.sessions]
    return lc, adapters


class LinstorClientTestCase(test.TestCase):

    def test_uri_forms(self):
        self.assertEqual('http://ctl:3370', client.base_url('linstor://ctl'))
        self.assertEqual('https://ctl:3371',
                         client.base_url('linstor+ssl://ctl'))
        self.assertEqual('http://[2001:db8::1]:4000',
                         client.base_url('http://[2001:db8::1]:4000'))
        for bad in ('ctl:3370', 'ftp://ctl', 'linstor://', 'http://c:x'):
            err = self.assertRaises(flash_exception.InvalidBackendConfig,
                                    client.base_url, bad)
            self.assertIn(repr(bad), str(err))

    def test_error_entry_in_a_2xx_reply_fails_the_call(self):
        lc, (fake,) = make(replies=[Reply(201, [
            fakes.rc(1, 'created one'),
            fakes.rc(996, 'Not enough available nodes', 'error')])])
        err = self.assertRaises(flash_exception.ArrayAPIError, lc.spawn,
                                'rg', 'vol', 1024)
        self.assertIn('Not enough available nodes', str(err))
        self.assertEqual(996, err.error_code)
        self.assertEqual((3, 7), fake.calls[0]['timeout'])

    def test_warnings_pass_and_missing_deletes_are_fine(self):
        lc, _f = make(replies=[
            Reply(200, [fakes.rc(3000, 'not found', 'warn')]),
            Reply(404, [fakes.rc(301, 'not found', 'error')])])
        self.assertEqual(1, len(lc.delete_resource_definition('gone')))
        self.assertEqual([], lc.delete_snapshot('gone', 'snap'))

    def test_http_errors_carry_the_linstor_message(self):
        lc, _f = make(replies=[Reply(500, [fakes.rc(
            213, "Invalid property DrbdOptions/Net/protocol='D'", 'error')])])
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                lc.modify_resource_definition, 'v', {})
        self.assertIn('DrbdOptions/Net/protocol', str(err))

    def test_malformed_replies(self):
        lc, _f = make(replies=[Reply(200, {'no': 'list'}),
                               Reply(201, ['not an object']),
                               Reply(201, [{'ret_code': 1}]),
                               Reply(201, {'messages': []}),
                               Reply(200, {'space_info': None})])
        self.assertRaises(flash_exception.ArrayBadReply, lc.storage_pools)
        self.assertRaises(flash_exception.ArrayBadReply, lc.nodes)
        lc.create_snapshot('v', 's')
        self.assertRaises(flash_exception.ArrayBadReply, lc.clone, 'v', 'c',
                          'rg')
        self.assertRaises(flash_exception.ArrayBadReply,
                          lc.query_size_info, 'rg')

    def test_next_controller_when_one_is_down(self):
        lc, (first, second) = make(
            uris=('linstor://192.0.2.30', 'linstor://192.0.2.31'),
            replies=[])
        first.replies = [Reply(raises=requests.exceptions.ConnectionError(
            'refused'))]
        second.replies = [Reply(200, {'rest_api_version': '1.28.0'}),
                          Reply(200, [])]
        self.assertEqual('1.28.0', lc.version()['rest_api_version'])
        self.assertEqual([], lc.nodes())
        self.assertEqual(1, lc.current)
        self.assertIn('192.0.2.31', second.calls[0]['url'])

    def test_all_controllers_down(self):
        lc, (first, second) = make(
            uris=('linstor://192.0.2.30', 'linstor://192.0.2.31'))
        for fake in (first, second):
            fake.replies = [Reply(raises=requests.exceptions.ConnectTimeout(
                'slow'))]
        self.assertRaises(flash_exception.ArrayTimeout, lc.version)

    def test_get_one_maps_404_to_none(self):
        lc, _f = make(replies=[Reply(404, [fakes.rc(317, 'no group',
                                                    'error')]),
                               Reply(200, {'name': 'rg'})])
        self.assertIsNone(lc.resource_group('rg'))
        self.assertEqual({'name': 'rg'}, lc.resource_group('rg'))

    def test_filters_are_repeated_parameters(self):
        lc, (fake,) = make(replies=[Reply(200, [])])
        lc.resources(['a', 'b'], ['n1'])
        self.assertIn('resources=a&resources=b&nodes=n1',
                      fake.calls[0]['url'])
