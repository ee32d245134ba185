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

from cinder.tests.unit import test
import ddt

from cinder_driver.common import exception
from cinder_driver.k2 import rest
from cinder_driver.tests.unit import fake_http

Reply = fake_http.Reply


@ddt.ddt
class K2RestTestCase(test.TestCase):

    def setUp(self):
        super().setUp()
        self.client = rest.K2Rest('10.0.0.5', 'admin', 'pw', port=8443,
                                  retries=2, sleep=lambda s: None)

    def _script(self, *replies):
        return fake_http.mount(self.client.http, replies)

    def test_base_url_and_search_filters(self):
        adapter = self._script(Reply(200, {'hits': [{'id': 1}],
                                           'total': 1}))
        hits = self.client.search('volumes', name='cv-1')
        self.assertEqual([{'id': 1}], hits)
        self.assertIn('https://10.0.0.5:8443/api/v2/volumes?',
                      adapter.calls[0]['url'])
        self.assertIn('name=cv-1', adapter.calls[0]['url'])

    def test_ipv6_address_is_bracketed(self):
        c = rest.K2Rest('fd00::5', 'admin', 'pw', port=443)
        self.assertEqual('[fd00::5]:443', c.address)

    def test_search_follows_pages(self):
        adapter = self._script(
            Reply(200, {'hits': [{'id': 1}, {'id': 2}], 'total': 3}),
            Reply(200, {'hits': [{'id': 3}], 'total': 3}))
        self.assertEqual([1, 2, 3],
                         [h['id'] for h in self.client.search('hosts')])
        self.assertIn('__offset=2', adapter.calls[1]['url'])

    @ddt.data({'hits': 'x', 'total': 1}, {'total': 1}, [], {'hits': []})
    def test_malformed_search_reply(self, payload):
        self._script(Reply(200, payload))
        err = self.assertRaises(exception.ArrayBadReply,
                                self.client.search, 'volumes')
        self.assertIn('/volumes', err.msg)

    @ddt.data(None, {}, {'id': '7'}, {'name': 'x'})
    def test_create_reply_must_carry_integer_id(self, payload):
        self._script(Reply(201, payload))
        self.assertRaises(exception.ArrayBadReply, self.client.create,
                          'volumes', {'name': 'v'})

    def test_delete_missing_object_is_not_an_error(self):
        self._script(Reply(404, {'error_msg': 'no such volume'}))
        self.assertFalse(self.client.delete('volumes', 9))

    def test_delete_other_errors_raise(self):
        self._script(Reply(400, {'error_msg': 'volume is mapped'}))
        err = self.assertRaises(exception.ArrayAPIError,
                                self.client.delete, 'volumes', 9)
        self.assertIn('volume is mapped', err.msg)

    def test_refused_delete_is_busy_but_transient_busy_is_not(self):
        self._script(Reply(400, {'error_msg': 'volume is mapped'}))
        err = self.assertRaises(exception.ObjectBusy,
                                self.client.delete, 'volumes', 9)
        self.assertEqual(400, err.status)
        self._script(*[Reply(400, {'error_msg': 'MC_ERR_BUSY'})] * 3)
        err = self.assertRaises(exception.ArrayAPIError,
                                self.client.delete, 'volumes', 9)
        self.assertNotIsInstance(err, exception.ObjectBusy)

    def test_missing_object_is_not_found(self):
        self._script(Reply(404, {'error_msg': 'no such volume'}),
                     Reply(404, {'error_msg': 'no such volume'}))
        self.assertRaises(exception.ObjectNotFound, self.client.get,
                          'volumes', 9)
        self.assertRaises(exception.ObjectNotFound, self.client.update,
                          'volumes', 9, {'size': 1})

    @ddt.data('MC_ERR_BUSY', 'MC_ERR_BUSY_SPECIFIC', 'MC_ERR_INPROGRESS',
              'MC_ERR_START_TIMEOUT')
    def test_busy_codes_are_retried(self, code):
        adapter = self._script(Reply(400, {'error_msg': code}),
                               Reply(200, {'id': 3, 'size': 10}))
        self.assertEqual(3, self.client.update('volumes', 3,
                                               {'size': 10})['id'])
        self.assertEqual(2, len(adapter.calls))

    def test_iscsi_addresses_skip_replication_ports(self):
        self._script(Reply(200, {'hits': [
            {'ip_address': '192.0.2.21', 'wan_port': None},
            {'ip_address': '192.0.2.99',
             'wan_port': {'ref': '/system/wan_ports/1'}},
            {'ip_address': None}], 'total': 3}))
        self.assertEqual(['192.0.2.21'], self.client.iscsi_addresses())

    def test_discover_requires_resources_map(self):
        self._script(Reply(200, {'nothing': True}))
        self.assertRaises(exception.ArrayBadReply, self.client.discover)

    def test_refs(self):
        self.assertEqual({'ref': '/volume_groups/4'},
                         rest.ref('volume_groups', 4))
        self.assertEqual(4, rest.ref_id({'ref': '/volume_groups/4'}))
        self.assertRaises(ValueError, rest.ref_id, {'ref': '/x/y'})
        self.assertRaises(ValueError, rest.ref_id, None)

    def test_missing_address_is_config_error(self):
        err = self.assertRaises(exception.InvalidBackendConfig,
                                rest.K2Rest, '', 'admin', 'pw')
        self.assertIn('san_ip', err.msg)

    def test_count_asks_for_one_object(self):
        adapter = self._script(Reply(200, {'hits': [{'id': 1}],
                                           'total': 41}))
        self.assertEqual(41, self.client.count('volumes', name__neq='CTRL'))
        self.assertIn('__limit=1', adapter.calls[0]['url'])
        self.assertIn('name__neq=CTRL', adapter.calls[0]['url'])

    @ddt.data({'hits': [], 'total': -1}, {'hits': [], 'total': True},
              {'hits': [], 'total': '4'})
    def test_malformed_count_reply(self, payload):
        self._script(Reply(200, payload))
        self.assertRaises(exception.ArrayBadReply, self.client.count,
                          'volumes')


class CreateUniqueTestCase(test.TestCase):

    def setUp(self):
        super().setUp()
        self.sleeps = []
        self.client = rest.K2Rest('10.0.0.5', 'admin', 'pw', retries=2,
                                  read_timeout=3,
                                  sleep=self.sleeps.append)

    def _script(self, *replies):
        return fake_http.mount(self.client.http, replies)

    def test_lost_answer_finds_the_created_object(self):
        import requests
        adapter = self._script(
            Reply(raises=requests.exceptions.ReadTimeout('slow')),
            Reply(200, {'hits': [{'id': 8, 'name': 'cv-1'}], 'total': 1}))
        self.assertEqual(8, self.client.create_unique(
            'volumes', {'name': 'cv-1'}, name='cv-1')['id'])
        self.assertEqual(['POST', 'GET'],
                         [c['method'] for c in adapter.calls])

    def test_array_still_working_is_found_on_second_look(self):
        adapter = self._script(
            Reply(500, {'error_msg': 'internal'}),
            Reply(200, {'hits': [], 'total': 0}),
            Reply(200, {'hits': [{'id': 9}], 'total': 1}))
        self.assertEqual(9, self.client.create_unique(
            'mappings', {}, **{'volume.ref': '/volumes/1'})['id'])
        self.assertEqual(3, len(adapter.calls))
        self.assertEqual([3], self.sleeps)

    def test_not_created_raises_the_original_error(self):
        self._script(Reply(502, {'error_msg': 'gateway'}),
                     Reply(200, {'hits': [], 'total': 0}),
                     Reply(200, {'hits': [], 'total': 0}))
        err = self.assertRaises(exception.ArrayAPIError,
                                self.client.create_unique, 'volumes', {},
                                name='x')
        self.assertEqual(502, err.status)

    def test_clear_refusal_is_not_looked_up(self):
        adapter = self._script(Reply(400, {'error_msg': 'name too long'}))
        err = self.assertRaises(exception.ObjectExists,
                                self.client.create_unique, 'volumes', {},
                                name='x')
        self.assertEqual(1, len(adapter.calls))
        self.assertIn('name too long', err.msg)

    def test_unanswered_lookup_gives_up_at_once(self):
        import requests
        adapter = self._script(
            Reply(raises=requests.exceptions.ReadTimeout('slow')),
            *[Reply(raises=requests.exceptions.ReadTimeout('slow'))] * 3)
        self.assertRaises(exception.ArrayTimeout, self.client.create_unique,
                          'volumes', {}, name='x')
        self.assertEqual('POST', adapter.calls[0]['method'])
        # One lookup (with its own retries), no second look, no sleep
        # but the lookup's back-offs.
        self.assertEqual(4, len(adapter.calls))
        self.assertNotIn(3, self.sleeps)
