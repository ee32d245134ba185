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

import os
import ssl
from unittest import mock

from cinder.tests.unit import test
import requests
import urllib3

from cinder_driver.common import exception
from cinder_driver.common import http
from cinder_driver.tests.unit import fake_http

Reply = fake_http.Reply


class RestSessionTestCase(test.TestCase):

    def setUp(self):
        super().setUp()
        self.sleeps = []
        self.session = http.RestSession(
            'https://array.example:443/api', username='admin',
            password='s3cr3t-pw', verify='/etc/ca.pem', connect_timeout=3,
            read_timeout=7, retries=3, backoff=0.5,
            busy=lambda status, p: isinstance(p, dict) and p.get(
                'code') == 'BUSY',
            error_text=lambda p: p.get('msg'), sleep=self.sleeps.append)

    def test_timeouts_and_tls_reach_every_request(self):
        adapter = fake_http.mount(self.session, [Reply(200, {'a': 1})])
        with mock.patch.dict(os.environ,
                             {'REQUESTS_CA_BUNDLE': '/other/bundle.pem'}):
            status, payload = self.session.request('GET', '/x')
        self.assertEqual((200, {'a': 1}), (status, payload))
        call = adapter.calls[0]
        self.assertEqual((3, 7), call['timeout'])
        # The environment bundle must not replace the configured CA.
        self.assertEqual('/etc/ca.pem', call['verify'])
        self.assertTrue(call['headers']['Authorization'].startswith(
            'Basic '))

    def test_503_is_retried_with_growing_backoff(self):
        adapter = fake_http.mount(self.session, [
            Reply(503, {'msg': 'busy'}), Reply(503, {'msg': 'busy'}),
            Reply(201, {'id': 4})])
        status, payload = self.session.request('POST', '/v', body={'n': 1})
        self.assertEqual(201, status)
        self.assertEqual(3, len(adapter.calls))
        self.assertEqual([0.5, 1.0], self.sleeps)

    def test_array_busy_code_is_retried(self):
        fake_http.mount(self.session, [Reply(400, {'code': 'BUSY'}),
                                       Reply(200, {'ok': True})])
        self.assertEqual(200, self.session.request('PATCH', '/v/1')[0])

    def test_retries_are_bounded(self):
        adapter = fake_http.mount(self.session, [Reply(503)] * 4)
        err = self.assertRaises(exception.ArrayAPIError,
                                self.session.request, 'GET', '/v')
        self.assertEqual(503, err.status)
        self.assertEqual(4, len(adapter.calls))

    def test_post_not_replayed_after_read_timeout(self):
        adapter = fake_http.mount(self.session, [
            Reply(raises=requests.exceptions.ReadTimeout('slow'))])
        err = self.assertRaises(exception.ArrayTimeout,
                                self.session.request, 'POST', '/v',
                                body={})
        self.assertIn('7', err.msg)
        self.assertEqual(1, len(adapter.calls))

    def test_get_replayed_after_read_timeout(self):
        fake_http.mount(self.session, [
            Reply(raises=requests.exceptions.ReadTimeout('slow')),
            Reply(200, {'v': 2})])
        self.assertEqual({'v': 2}, self.session.request('GET', '/v')[1])

    def test_ambiguous_500_not_replayed_for_post(self):
        adapter = fake_http.mount(self.session, [Reply(500, {'msg': 'x'})])
        self.assertRaises(exception.ArrayAPIError, self.session.request,
                          'POST', '/v', body={})
        self.assertEqual(1, len(adapter.calls))

    def test_401_names_user_not_password(self):
        fake_http.mount(self.session, [Reply(401, {'msg': 'no'})])
        err = self.assertRaises(exception.ArrayAuthError,
                                self.session.request, 'GET', '/v')
        self.assertIn('admin', err.msg)
        self.assertNotIn('s3cr3t-pw', err.msg)

    def test_4xx_carries_array_message_and_is_not_retried(self):
        adapter = fake_http.mount(self.session, [
            Reply(400, {'msg': 'name too long'})])
        err = self.assertRaises(exception.ArrayAPIError,
                                self.session.request, 'POST', '/v', body={})
        self.assertIn('name too long', err.msg)
        self.assertEqual('name too long', err.error_code)
        self.assertEqual(1, len(adapter.calls))

    def test_html_error_page_becomes_clear_error(self):
        fake_http.mount(self.session, [Reply(
            502, text='<html><body>Bad Gateway</body></html>',
            content_type='text/html')] * 4)
        err = self.assertRaises(exception.ArrayAPIError,
                                self.session.request, 'GET', '/v')
        self.assertIn('Bad Gateway', err.msg)

    def test_truncated_json_on_success_is_bad_reply(self):
        fake_http.mount(self.session, [Reply(200, text='{"hits": [')])
        err = self.assertRaises(exception.ArrayBadReply,
                                self.session.request, 'GET', '/v')
        self.assertIn('not JSON', err.msg)

    def test_tls_failure_is_not_retried(self):
        adapter = fake_http.mount(self.session, [
            Reply(raises=requests.exceptions.SSLError('bad cert'))])
        self.assertRaises(exception.ArrayTLSError, self.session.request,
                          'GET', '/v')
        self.assertEqual(1, len(adapter.calls))

    @staticmethod
    def _hang_up(where):
        """What requests raises for an EOF the ssl module met in the
        function named ``where``.
        """
        def fail():
            raise ssl.SSLEOFError(8, '[SSL: UNEXPECTED_EOF_WHILE_READING] '
                                  'EOF occurred in violation of protocol')
        run = type(fail)(fail.__code__.replace(co_name=where),
                         fail.__globals__)
        try:
            run()
        except ssl.SSLEOFError as e:
            return requests.exceptions.SSLError(
                urllib3.exceptions.MaxRetryError(
                    None, '/v', urllib3.exceptions.SSLError(e)))

    def test_a_hang_up_during_the_handshake_is_retried(self):
        # An array at its connection limit closes a new connection
        # before the TLS handshake ends: no request was sent, so even a
        # POST is sent again.
        adapter = fake_http.mount(self.session, [
            Reply(raises=self._hang_up('do_handshake')), Reply(200, {})])
        self.assertEqual(200, self.session.request('POST', '/v',
                                                   body={})[0])
        self.assertEqual(2, len(adapter.calls))

    def test_a_hang_up_after_the_handshake_is_a_refusal(self):
        # TLS 1.3 reports a client certificate the array refused as an
        # EOF on the first write after the handshake: never retried.
        adapter = fake_http.mount(self.session, [
            Reply(raises=self._hang_up('sendall'))])
        self.assertRaises(exception.ArrayTLSError, self.session.request,
                          'GET', '/v')
        self.assertEqual(1, len(adapter.calls))

    def test_a_certificate_refusal_is_not_retried(self):
        refusal = requests.exceptions.SSLError(
            urllib3.exceptions.MaxRetryError(
                None, '/v', urllib3.exceptions.SSLError(
                    ssl.SSLCertVerificationError(
                        1, '[SSL: CERTIFICATE_VERIFY_FAILED]'))))
        adapter = fake_http.mount(self.session, [Reply(raises=refusal)])
        self.assertRaises(exception.ArrayTLSError, self.session.request,
                          'GET', '/v')
        self.assertEqual(1, len(adapter.calls))

    def test_refused_connection_is_retried(self):
        # As requests raises it: the connection was never opened, so
        # even a POST is sent again.
        refused = requests.exceptions.ConnectionError(
            urllib3.exceptions.MaxRetryError(
                None, '/v', urllib3.exceptions.NewConnectionError(
                    None, 'Failed to establish a new connection: '
                    '[Errno 111] Connection refused')))
        fake_http.mount(self.session, [Reply(raises=refused),
                                       Reply(200, {})])
        self.assertEqual(200, self.session.request('POST', '/v',
                                                   body={})[0])

    def test_a_reset_after_the_request_went_out_is_not_sent_again(self):
        # The array may have acted on it: a POST is not replayed, even
        # if the reason's text names a connection error.
        reset = requests.exceptions.ConnectionError(
            urllib3.exceptions.ProtocolError(
                'Connection aborted (not a NewConnectionError)',
                ConnectionResetError(104, 'Connection reset by peer')))
        adapter = fake_http.mount(self.session, [Reply(raises=reset),
                                                 Reply(200, {})])
        self.assertRaises(exception.ArrayUnreachable, self.session.request,
                          'POST', '/v', body={})
        self.assertEqual(1, len(adapter.calls))

    def test_password_never_logged(self):
        log = self.useFixture(__import__('fixtures').FakeLogger(
            level='DEBUG'))
        fake_http.mount(self.session, [Reply(503), Reply(
            400, {'msg': 'password=s3cr3t-pw'})])
        self.assertRaises(exception.ArrayAPIError, self.session.request,
                          'POST', '/v', body={'password': 's3cr3t-pw'})
        self.assertNotIn('s3cr3t-pw', log.output)
