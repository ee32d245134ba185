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

from cinder_driver.common import exception as flash_exception
from cinder_driver.k2 import driver as k2_driver
from cinder_driver.k2 import records
from cinder_driver.tests.unit import k2_fakes

STATE = records.State(77, 'k2', 'ONLINE', '2.2.7',
                      'iqn.2026-11.io.example:k2')


class SetupTestCase(k2_fakes.AdapterTestCase):

    def _array(self, state=STATE, policy=1, addresses=('192.0.2.21',)):
        self.client.discover_capabilities.return_value = {}
        self.client.system_state.return_value = state
        self.client.retention_policy_id.return_value = policy
        self.client.iscsi_addresses.return_value = list(addresses)

    def driver(self):
        return k2_driver.K2ISCSIDriver(configuration=self.conf,
                                       host='cinder@k2-unit')

    def test_missing_password_names_the_option(self):
        self.override_config('san_password', '', group=self.GROUP)
        err = self.assertRaises(flash_exception.InvalidBackendConfig,
                                self.driver().do_setup, self.ctx)
        self.assertIn('san_password', err.msg)

    def test_setup_builds_a_verifying_client(self):
        with mock.patch('cinder_driver.k2.client.K2Client') as k2:
            drv = self.driver()
            drv.do_setup(self.ctx)
        kwargs = k2.call_args.kwargs
        self.assertIs(True, kwargs['verify'])
        self.assertEqual(10.0, kwargs['connect_timeout'])
        self.assertEqual(60.0, kwargs['read_timeout'])
        self.assertIs(k2.return_value, drv.adapter.client)
        self.assertEqual(['default'], list(drv.adapters))

    def test_portals_use_the_array_addresses(self):
        self._array()
        self.adapter.check_for_setup_error()
        self.assertEqual(['192.0.2.21:3260'], self.adapter.portals)
        self.assertEqual('cinder-flash:k2:77', self.adapter.location)
        self.assertEqual(1, self.adapter.retention_policy_id)

    def test_old_api_is_refused(self):
        self._array(state=STATE._replace(api_version='2.1.0'))
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.adapter.check_for_setup_error)
        self.assertIn('2.1.0', err.msg)

    def test_two_part_api_version_is_accepted(self):
        self._array(state=STATE._replace(api_version='2.2'))
        self.adapter.check_for_setup_error()

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

    def test_no_iscsi_target(self):
        self._array(state=STATE._replace(iscsi_target=None))
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.adapter.check_for_setup_error)
        self.assertIn('no iSCSI target', err.msg)

    def test_restart_after_a_failback_runs_on_the_primary(self):
        # Cinder writes '' into the service's active_backend_id on a
        # failback and passes it to the service when it starts again.
        for recorded in ('', None, 'default'):
            with mock.patch('cinder_driver.k2.client.K2Client') as k2:
                drv = k2_driver.K2ISCSIDriver(configuration=self.conf,
                                              host='cinder@k2-unit',
                                              active_backend_id=recorded)
                drv.do_setup(self.ctx)
            self.assertIsNone(drv.active_backend_id, recorded)
            self.assertIs(k2.return_value, drv.adapter.client)

    def test_failed_over_without_device_is_refused(self):
        drv = k2_driver.K2ISCSIDriver(configuration=self.conf,
                                      host='cinder@k2-unit',
                                      active_backend_id='dr')
        err = self.assertRaises(flash_exception.InvalidBackendConfig,
                                drv.do_setup, self.ctx)
        self.assertIn('dr', err.msg)
