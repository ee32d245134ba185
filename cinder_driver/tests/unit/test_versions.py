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

from cinder_driver.common import versions
from cinder_driver.k2 import client as k2_client
from cinder_driver.linstor import client as linstor_client


@ddt.ddt
class VersionsTestCase(test.TestCase):

    @ddt.data(('2.2', (2, 2, 0), True), ('2.2.7', (2, 2, 7), True),
              ('1.9.0-rc2', (1, 9, 0), False),
              ('2.2.7-rc1', (2, 2, 7), False), ('3', (3, 0, 0), True),
              ('1.28.0+build.5', (1, 28, 0), True), (' 2.10.3 ', (2, 10, 3),
                                                     True))
    @ddt.unpack
    def test_parse(self, text, release, final):
        version = versions.parse(text)
        self.assertEqual(release, version.release)
        self.assertIs(final, version.final)

    @ddt.data(None, '', 'x', '2.x', '2..2', '1.2.3.4', [2, 2], True,
              '9' * 40, '1.2.3-' + 'a' * 100)
    def test_not_a_version(self, text):
        self.assertIsNone(versions.parse(text))
        self.assertFalse(versions.at_least(text, (0, 0, 0)))

    def test_k2_array_reporting_two_parts_is_accepted(self):
        # "2.2" once compared as (2, 2) < (2, 2, 0): refused.
        self.assertTrue(versions.at_least('2.2', k2_client.MIN_API_VERSION))
        self.assertTrue(versions.at_least(2.2, k2_client.MIN_API_VERSION))
        self.assertFalse(versions.at_least('2.1', k2_client.MIN_API_VERSION))

    def test_pre_release_digits_stay_out_of_the_patch_level(self):
        # "1.9.0-rc2" once read as 1.9.2 and "2.2.7-rc1" as 2.2.71.
        self.assertEqual((1, 9, 0), versions.parse('1.9.0-rc2').release)
        self.assertFalse(versions.at_least('1.9.0-rc2', (1, 9, 1)))
        self.assertLess(versions.parse('2.2.7-rc1'), versions.parse('2.2.8'))

    def test_a_pre_release_comes_before_its_release(self):
        minimum = linstor_client.MIN_API_VERSION
        self.assertFalse(versions.at_least('1.10.0-rc1', minimum))
        self.assertTrue(versions.at_least('1.10.0', minimum))
        self.assertTrue(versions.at_least('1.10.1-rc1', minimum))

    def test_dotted(self):
        self.assertEqual('2.2.0', versions.dotted((2, 2, 0)))
