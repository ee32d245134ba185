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

"""K2 driver with CHAP: profiles on the array, enforced by its target."""

import logging

import fixtures

from cinder_driver.tests.functional import k2_driver_base
from reference_array.tests import iscsi_client

INITIATOR = 'iqn.2026-01.io.test:chap-host'
CONNECTOR = dict(k2_driver_base.CONNECTOR, initiator=INITIATOR)


class CHAPTestCase(k2_driver_base.K2DriverTestCase):

    def make_driver(self, **overrides):
        overrides.setdefault('k2_iscsi_portals',
                             [self.array.info['iscsi_portal']])
        overrides.setdefault('use_chap_auth', True)
        return super().make_driver(**overrides)

    def _inq(self, info, user=None, password=None):
        data = info['data']
        creds = '%s%%%s@' % (user, password) if user else ''
        url = 'iscsi://%s%s/%s/%d' % (creds, data['target_portal'],
                                      data['target_iqn'], data['target_lun'])
        return iscsi_client.run('iscsi-inq', '-i', INITIATOR, url)

    def test_chap_is_required_and_works(self):
        log = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        vol = self.create()
        info = self.driver.initialize_connection(vol, CONNECTOR)
        data = info['data']
        self.assertEqual('CHAP', data['auth_method'])
        self.assertEqual(16, len(data['auth_password']))
        good = self._inq(info, data['auth_username'], data['auth_password'])
        self.assertEqual(0, good.returncode, good.stderr)
        self.assertIn('DIRECT_ACCESS', good.stdout)
        self.assertNotEqual(0, self._inq(info).returncode)
        wrong = self._inq(info, data['auth_username'], 'not-the-secret1')
        self.assertNotEqual(0, wrong.returncode)
        # The array never hands the secret back.
        profiles = self.array.k2_client().search('host_auth_profiles')
        self.assertEqual(1, len(profiles))
        self.assertNotIn('secret', profiles[0])
        self.assertNotIn(data['auth_password'], log.output)

    def test_every_service_derives_the_same_secret(self):
        vol = self.create()
        first = self.driver.initialize_connection(vol, CONNECTOR)
        other = self.make_driver()
        second = other.initialize_connection(vol, CONNECTOR)
        self.assertEqual(first['data']['auth_password'],
                         second['data']['auth_password'])
        other_host = dict(CONNECTOR, host='compute-2',
                          initiator='iqn.2026-01.io.test:chap-host-2')
        third = other.initialize_connection(vol, other_host)
        self.assertNotEqual(first['data']['auth_password'],
                            third['data']['auth_password'])

    def test_configured_credentials_and_existing_host(self):
        plain = super().make_driver(
            k2_iscsi_portals=[self.array.info['iscsi_portal']])
        vol = self.create()
        plain.initialize_connection(vol, CONNECTOR)
        drv = self.make_driver(chap_username='cinder-chap',
                               chap_password='fixed-secret-12')
        info = drv.initialize_connection(vol, CONNECTOR)
        self.assertEqual('cinder-chap', info['data']['auth_username'])
        self.assertEqual(0, self._inq(info, 'cinder-chap',
                                      'fixed-secret-12').returncode)
        self.assertNotEqual(0, self._inq(info).returncode)
