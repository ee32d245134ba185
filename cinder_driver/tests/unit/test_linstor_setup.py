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

"""LINSTOR adapter: options and setup checks."""

from unittest import mock

from cinder.tests.unit import test

from cinder_driver.common import exception as flash_exception
from cinder_driver.linstor import adapter
from cinder_driver.tests.unit import linstor_fakes as fakes


class SetupTestCase(test.TestCase):

    def adapter(self, **options):
        return adapter.LinstorAdapter(fakes.make_conf(self, **options),
                                      'DRBD', '1.0.0')

    def test_tls_and_client_certificates(self):
        a = self.adapter(linstor_uris=['linstor+ssl://ctl',
                                       'https://ctl2:443'],
                         linstor_trusted_ca='/etc/ca.pem',
                         linstor_client_cert='/etc/c.pem',
                         linstor_client_key='/etc/k.pem')
        a.do_setup()
        first, second = a.client.sessions
        self.assertEqual(('https://ctl:3371', 'https://ctl2:443'),
                         (first.base_url, second.base_url))
        self.assertEqual('/etc/ca.pem', first.verify)
        self.assertEqual(('/etc/c.pem', '/etc/k.pem'), first.session.cert)

    def test_bad_options(self):
        for options, name in (
                ({'linstor_uris': ['ctl']}, 'ctl'),
                ({'linstor_uris': []}, 'linstor_uris'),
                ({'linstor_client_key': '/k.pem'}, 'linstor_client_key')):
            err = self.assertRaises(flash_exception.InvalidBackendConfig,
                                    self.adapter(**options).do_setup)
            self.assertIn(name, str(err))

    def test_verification_off_is_logged(self):
        a = self.adapter(linstor_verify_tls=False)
        with mock.patch.object(adapter.LOG, 'warning') as warn:
            a.do_setup()
        self.assertIs(False, a.client.sessions[0].verify)
        warn.assert_called_once()

    def test_old_controller_and_missing_pool(self):
        a = self.adapter()
        a.client = mock.Mock()
        a.client.name = 'LINSTOR test'
        a.client.version.return_value = {'rest_api_version': '1.9.0'}
        err = self.assertRaises(flash_exception.InvalidBackendConfig,
                                a.check_for_setup_error)
        self.assertIn('1.9.0', str(err))
        a.client.version.return_value = {'rest_api_version': '1.28.0'}
        a.client.storage_pools.return_value = [
            {'storage_pool_name': 'other'}]
        err = self.assertRaises(flash_exception.InvalidBackendConfig,
                                a.check_for_setup_error)
        self.assertIn('DfltStorPool', str(err))
