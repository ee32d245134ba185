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

from cinder_driver.common import naming


class NamingTestCase(test.TestCase):

    def test_volume_names_use_name_id(self):
        vol = mock.Mock(id='aaaa', name_id='bbbb')
        self.assertEqual('cv-bbbb', naming.volume_name(vol))
        self.assertEqual('cvg-bbbb', naming.group_name(vol))

    def test_fit_keeps_short_safe_names(self):
        self.assertEqual('compute-1', naming.fit('compute-1', 32))

    def test_fit_shortens_with_digest(self):
        a = naming.fit('rack-17-compute-node-0001.example.org', 32)
        b = naming.fit('rack-17-compute-node-0002.example.org', 32)
        self.assertNotEqual(a, b)
        self.assertEqual(32, len(a))

    def test_fit_replaces_unsafe_characters_without_collisions(self):
        a = naming.fit('node.example', 32)
        b = naming.fit('node_example', 32)
        self.assertNotEqual(a, b)
        self.assertNotIn('.', a)

    def test_host_name_falls_back_to_initiator(self):
        self.assertEqual('iqn_1993-08_org_x', naming.host_name(
            {'initiator': 'iqn.1993-08.org.x'}, 64)[:17])
