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

"""The K2 adapter's probe(): the checks of cinder-flash check."""

from unittest import mock

from cinder.common import constants

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import probe
from cinder_driver.k2 import records
from cinder_driver.tests.unit import k2_fakes

STATE = records.State(77, 'k2', 'ONLINE', '2.2.7',
                      'iqn.2026-11.io.example:k2')


class K2ProbeTestCase(k2_fakes.AdapterTestCase):

    def setUp(self):
        super().setUp()
        self.client.endpoint = ('192.0.2.10', 443)
        self.client.http = mock.Mock(username='admin', verify=True,
                                     timeout=(1.0, 5.0))
        self.client.system_state.return_value = STATE
        self.client.retention_policy_id.return_value = 1
        self.client.iscsi_addresses.return_value = ['192.0.2.21']
        self.client.fc_target_wwns.return_value = ['50024f4000000100']
        self.client.capacity.return_value = records.Capacity(
            100, 60, 10, 5, 5)
        self.mock_object(probe, 'reachable', return_value=True)
        self.mock_object(probe, 'handshake', return_value=True)

    def verdicts(self, adapter=None):
        return {name: (verdict, detail) for verdict, name, detail in
                (adapter or self.adapter).probe()}

    def test_ready(self):
        found = self.verdicts()
        self.assertEqual({'config', 'credentials', 'api', 'ports',
                          'capacity'}, set(found))
        self.assertTrue(all(v == probe.PASS for v, _d in found.values()),
                        found)
        self.assertIn('192.0.2.21:3260', found['ports'][1])

    def test_portals_are_checked_by_the_driver_s_own_rule(self):
        self.override_config('k2_iscsi_portals', ['192.0.2.50'],
                             group=self.GROUP)
        verdict, detail = self.verdicts()['ports']
        self.assertEqual(probe.FAIL, verdict)
        self.assertIn('192.0.2.50', detail)
        self.assertIn('k2_iscsi_portals', detail)

    def test_missing_retention_policy_fails_as_setup_would(self):
        self.client.retention_policy_id.return_value = None
        verdict, detail = self.verdicts()['api']
        self.assertEqual(probe.FAIL, verdict)
        self.assertIn('Best_Effort_Retention', detail)

    def test_refused_credentials(self):
        self.client.system_state.side_effect = flash_exception.ArrayAuthError(
            array='K2 test', method='GET', path='/system/state',
            user='admin', status_code=401, status=401)
        found = self.verdicts()
        self.assertEqual(probe.FAIL, found['credentials'][0])
        self.assertEqual(probe.SKIP, found['api'][0])

    def test_unreachable_array_skips_the_rest(self):
        probe.reachable.return_value = False
        found = self.verdicts()
        self.assertEqual(probe.SKIP, found['credentials'][0])
        self.client.system_state.assert_not_called()

    def test_fc_ports(self):
        self.PROTOCOL = constants.FC
        fc = self.make_adapter(self.client)
        verdict, detail = self.verdicts(fc)['ports']
        self.assertEqual((probe.PASS, 'FC target ports '
                          '50:02:4f:40:00:00:01:00'), (verdict, detail))
        self.client.fc_target_wwns.return_value = []
        self.assertEqual(probe.FAIL, self.verdicts(fc)['ports'][0])
