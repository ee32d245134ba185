from cinder.tests.unit import test
from cinder.volume import configuration
from oslo_config import cfg

from cinder_driver.common import config as flash_config
from cinder_driver.common import opts

CONF = cfg.CONF


class TLSVerifyTestCase(test.TestCase):

    def _conf(self, **overrides):
        group = 'tls-test-%d' % len(overrides)
        conf = configuration.Configuration(
            __import__('cinder.volume.driver',
                       fromlist=['volume_opts']).volume_opts,
            config_group=group)
        for key, value in overrides.items():
            self.override_config(key, value, group=group)
        return conf

    def test_verified_when_section_is_silent(self):
        self.assertIs(True, flash_config.tls_verify(self._conf()))

    def test_ca_path_is_used(self):
        conf = self._conf(driver_ssl_cert_path='/etc/k2-ca.pem')
        self.assertEqual('/etc/k2-ca.pem', flash_config.tls_verify(conf))

    def test_explicit_false_turns_it_off(self):
        conf = self._conf(driver_ssl_cert_verify=False,
                          driver_ssl_cert_path='/etc/k2-ca.pem')
        self.assertIs(False, flash_config.tls_verify(conf))

    def test_explicit_true_with_path(self):
        conf = self._conf(driver_ssl_cert_verify=True,
                          driver_ssl_cert_path='/etc/k2-ca.pem')
        self.assertEqual('/etc/k2-ca.pem', flash_config.tls_verify(conf))


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
