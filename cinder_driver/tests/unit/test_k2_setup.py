from unittest import mock

from cinder_driver.common import exception as flash_exception
from cinder_driver.tests.unit import k2_fakes

STATE = {'rest_api_version': '2.2.7', 'state': 'ONLINE',
         'iscsi_qualified_target_name': 'iqn.2026-11.io.example:k2'}


class SetupTestCase(k2_fakes.AdapterTestCase):

    def _array(self, state=STATE, policy={'id': 1},
               addresses=('192.0.2.21',)):
        self.client.discover_capabilities.return_value = {}
        self.client.system_state.return_value = state
        self.client.find.return_value = policy
        self.client.iscsi_addresses.return_value = list(addresses)

    def test_missing_password_names_the_option(self):
        self.override_config('san_password', '', group=self.GROUP)
        err = self.assertRaises(flash_exception.InvalidBackendConfig,
                                self.adapter.do_setup)
        self.assertIn('san_password', err.msg)

    def test_setup_builds_a_verifying_client(self):
        with mock.patch('cinder_driver.k2.rest.K2Rest') as k2:
            self.adapter.do_setup()
        kwargs = k2.call_args.kwargs
        self.assertIs(True, kwargs['verify'])
        self.assertEqual(10.0, kwargs['connect_timeout'])
        self.assertEqual(60.0, kwargs['read_timeout'])

    def test_portals_use_the_array_addresses(self):
        self._array()
        self.adapter.check_for_setup_error()
        self.assertEqual(['192.0.2.21:3260'], self.adapter.portals)

    def test_old_api_is_refused(self):
        self._array(state=dict(STATE, rest_api_version='2.1.0'))
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.adapter.check_for_setup_error)
        self.assertIn('2.1.0', err.msg)

    def test_unknown_portal_is_refused(self):
        self.override_config('k2_iscsi_portals', ['192.0.2.50'],
                             group=self.GROUP)
        self._array()
        err = self.assertRaises(flash_exception.InvalidBackendConfig,
                                self.adapter.check_for_setup_error)
        self.assertIn('192.0.2.50', err.msg)

    def test_unknown_retention_policy(self):
        self._array(policy=None)
        err = self.assertRaises(flash_exception.InvalidBackendConfig,
                                self.adapter.check_for_setup_error)
        self.assertIn('Best_Effort_Retention', err.msg)
