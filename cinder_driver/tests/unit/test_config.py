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

from unittest import mock

from cinder.tests.unit import test
from cinder.volume import configuration
from oslo_config import cfg

from cinder_driver.common import exception
from cinder_driver.common import opts
from cinder_driver.common import tls

CONF = cfg.CONF


class TLSVerifyTestCase(test.TestCase):

    def _conf(self, **overrides):
        from cinder_driver.linstor import options as linstor_options
        group = 'tls-test-%d' % len(overrides)
        conf = configuration.Configuration(
            __import__('cinder.volume.driver',
                       fromlist=['volume_opts']).volume_opts,
            config_group=group)
        conf.append_config_values(linstor_options.linstor_opts)
        for key, value in overrides.items():
            self.override_config(key, value, group=group)
        return conf

    def test_verified_when_section_is_silent(self):
        self.assertIs(True, tls.verify(self._conf(), tls.K2))

    def test_ca_path_is_used(self):
        conf = self._conf(driver_ssl_cert_path='/etc/k2-ca.pem')
        self.assertEqual('/etc/k2-ca.pem', tls.verify(conf, tls.K2))

    def test_explicit_false_turns_it_off(self):
        conf = self._conf(driver_ssl_cert_verify=False,
                          driver_ssl_cert_path='/etc/k2-ca.pem')
        self.assertIs(False, tls.verify(conf, tls.K2))

    def test_explicit_true_with_path(self):
        conf = self._conf(driver_ssl_cert_verify=True,
                          driver_ssl_cert_path='/etc/k2-ca.pem')
        self.assertEqual('/etc/k2-ca.pem', tls.verify(conf, tls.K2))

    def test_linstor_names_its_own_options(self):
        conf = self._conf(linstor_trusted_ca='/etc/ls-ca.pem')
        self.assertEqual('/etc/ls-ca.pem', tls.verify(conf, tls.LINSTOR))
        self.override_config('linstor_verify_tls', False,
                             group=conf.config_group)
        with mock.patch.object(tls.LOG, 'warning') as warn:
            self.assertIs(False, tls.verify(conf, tls.LINSTOR))
        self.assertIn('linstor_verify_tls', warn.call_args.args[2])

    def test_linstor_takes_the_cinder_ca_option_when_its_own_is_unset(self):
        # Canonical's cinder-volume snap writes driver_ssl_cert_path for a
        # backend given a CA, whatever its driver.
        conf = self._conf(driver_ssl_cert_path='/snap/ca.pem')
        self.assertEqual('/snap/ca.pem', tls.verify(conf, tls.LINSTOR))
        self.override_config('linstor_trusted_ca', '/etc/ls-ca.pem',
                             group=conf.config_group)
        self.assertEqual('/etc/ls-ca.pem', tls.verify(conf, tls.LINSTOR))

    def test_client_certificate_pairs(self):
        conf = self._conf()
        group = conf.config_group
        self.assertIsNone(tls.client_cert(conf, tls.LINSTOR))
        self.assertIsNone(tls.client_cert(conf, tls.K2))
        self.override_config('linstor_client_cert', '/c.pem', group=group)
        self.assertEqual('/c.pem', tls.client_cert(conf, tls.LINSTOR))
        self.override_config('linstor_client_key', '/k.pem', group=group)
        self.assertEqual(('/c.pem', '/k.pem'),
                         tls.client_cert(conf, tls.LINSTOR))
        self.override_config('linstor_client_cert', None, group=group)
        err = self.assertRaises(exception.InvalidBackendConfig,
                                tls.client_cert, conf, tls.LINSTOR)
        self.assertIn('linstor_client_key', err.msg)


class ListOptsTestCase(test.TestCase):

    def test_every_option_listed_once_in_backend_defaults(self):
        listed = opts.list_opts()
        self.assertEqual(['backend_defaults'], [g for g, _o in listed])
        names = [o.name for o in listed[0][1]]
        self.assertEqual(len(names), len(set(names)))
        for name in ('flash_rest_connect_timeout', 'flash_rest_read_timeout',
                     'flash_rest_retries', 'flash_rest_retry_backoff',
                     'k2_iscsi_portals', 'k2_retention_policy'):
            self.assertIn(name, names)

    def test_options_have_help(self):
        for _group, options in opts.list_opts():
            for opt in options:
                self.assertGreater(len(opt.help or ''), 20, opt.name)
