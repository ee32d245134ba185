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

from cinder_driver.k2 import provider_id

ProviderId = provider_id.ProviderId


@ddt.ddt
class ProviderIdTestCase(test.TestCase):

    @ddt.data(('7/9', (7, 9, False, None)), ('20/9/g', (20, 9, True, None)),
              ('2/4@dr', (2, 4, False, 'dr')),
              ('20/9/g@10.0.0.5:443', (20, 9, True, '10.0.0.5:443')))
    @ddt.unpack
    def test_round_trip(self, text, fields):
        pid = ProviderId.parse(text)
        self.assertEqual(fields, tuple(pid))
        self.assertEqual(text, str(pid))

    @ddt.data(None, '', 'garbage', '7', '7/9/x', '7/x', '-1/9', '7/9/g/g',
              '7/9@', 'volume-1', 7, '1' * 40 + '/1')
    def test_not_a_provider_id(self, text):
        self.assertIsNone(ProviderId.parse(text))
        self.assertFalse(provider_id.is_shared(text))

    def test_built_from_ids(self):
        self.assertEqual('5/6', str(ProviderId(5, 6)))
        self.assertEqual('5/6/g@dr', str(ProviderId(5, 6, True, 'dr')))
        self.assertEqual((5, 6), ProviderId(5, 6, array='dr').ids)

    def test_shared(self):
        self.assertTrue(provider_id.is_shared('20/9/g'))
        self.assertTrue(provider_id.is_shared('20/9/g@dr'))
        self.assertFalse(provider_id.is_shared('20/9@dr'))
