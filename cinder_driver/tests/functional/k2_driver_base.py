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

"""A K2 driver instance configured against a live reference array."""

from cinder import context

from cinder_driver.k2 import driver as k2_driver
from cinder_driver.tests.functional import driver_base
from reference_array.tests import array_fixture

CONNECTOR = {'host': 'compute-1', 'initiator':
             'iqn.1993-08.org.debian:01:compute1', 'multipath': True,
             'wwpns': ['10000090fa000001', '10000090fa000002'],
             'wwnns': ['20000090fa000001']}


class K2DriverTestCase(driver_base.DriverTestCase):

    DRIVER = k2_driver.K2ISCSIDriver
    BACKEND = 'k2-functional'

    def setUp(self):
        super().setUp()
        self.array = self.useFixture(array_fixture.ReferenceArray(
            args=['--capacity-gib', '256'], fault_injection=True))
        self.ctx = context.get_admin_context()
        self.driver = self.make_driver()

    def backend_options(self):
        return {'san_ip': self.array.k2_host,
                'san_api_port': self.array.k2_port,
                'san_login': self.array.info['user'],
                'san_password': self.array.info['password'],
                'driver_ssl_cert_path': self.array.info['ca_cert']}

    def requests(self):
        return self.array.k2_requests()

    def array_volume(self, vol):
        return self.array.k2_client().find('volumes',
                                           name='cv-%s' % vol.name_id)
