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

from cinder import exception
from cinder.tests.unit import test
import ddt

from cinder_driver.common import extra_specs
from cinder_driver.k2 import specs as k2_specs

SCHEMA = (extra_specs.Spec('x:flag', bool, default=True),
          extra_specs.Spec('x:count', int, default=2, minimum=1, maximum=9),
          extra_specs.Spec('x:mode', ('fast', 'safe')))


@ddt.ddt
class ExtraSpecsTestCase(test.TestCase):

    def test_defaults_and_foreign_keys(self):
        values = extra_specs.parse({'other:key': 'anything',
                                    'volume_backend_name': 'b'},
                                   SCHEMA, ('x:',))
        self.assertEqual((True, 2, None), (values['x:flag'],
                                           values['x:count'],
                                           values['x:mode']))
        self.assertEqual(frozenset(), values['_given'])

    @ddt.data(('<is> True', True), ('<is>   false', False), ('YES', True),
              ('0', False), (' true ', True))
    @ddt.unpack
    def test_booleans(self, text, expected):
        self.assertEqual(expected, extra_specs.parse(
            {'x:flag': text}, SCHEMA, ('x:',))['x:flag'])

    @ddt.data({'x:flag': 'maybe'}, {'x:count': '0'}, {'x:count': '10'},
              {'x:count': 'two'}, {'x:mode': 'turbo'}, {'x:unknown': '1'},
              {'x:count': '9' * 40}, {'x:mode': '\u202e; DROP TABLE'})
    def test_rejected_with_key_and_value_named(self, specs):
        err = self.assertRaises(exception.InvalidVolumeType,
                                extra_specs.parse, specs, SCHEMA, ('x:',))
        key, value = next(iter(specs.items()))
        self.assertIn(key, err.msg)
        self.assertIn(repr(value), err.msg)

    def test_type_specs_from_dict_object_or_none(self):
        self.assertEqual({}, extra_specs.type_specs(None))
        self.assertEqual({'a': '1'}, extra_specs.type_specs(
            {'extra_specs': {'a': '1'}}))


@ddt.ddt
class K2SpecsTestCase(test.TestCase):

    @ddt.data(({}, True), ({'k2:dedup': 'false'}, False),
              ({'kaminario:thin_prov_type': 'nodedup'}, False),
              ({'kaminario:thin_prov_type': 'dedup'}, True),
              ({'k2:dedup': 'false',
                'kaminario:thin_prov_type': 'nodedup'}, False))
    @ddt.unpack
    def test_dedup(self, specs, expected):
        self.assertEqual(expected, k2_specs.volume_specs(
            {'extra_specs': specs})['dedup'])

    def test_contradiction_names_both_keys(self):
        err = self.assertRaises(
            exception.InvalidVolumeType, k2_specs.volume_specs,
            {'extra_specs': {'k2:dedup': 'true',
                             'kaminario:thin_prov_type': 'nodedup'}})
        self.assertIn('k2:dedup', err.msg)
        self.assertIn('kaminario:thin_prov_type', err.msg)

    def test_immutable_snapshots_are_refused_with_the_reason(self):
        err = self.assertRaises(
            exception.InvalidVolumeType, k2_specs.volume_specs,
            {'extra_specs': {'k2:snapshot_retention_hours': '24'}})
        self.assertIn('k2:snapshot_retention_hours=24', err.msg)
        self.assertIn('does not offer', err.msg)
        self.assertTrue(k2_specs.volume_specs(
            {'extra_specs': {'k2:snapshot_retention_hours': '0'}})['dedup'])


@ddt.ddt
class K2ReplicationSpecsTestCase(test.TestCase):

    @ddt.data({'replication_enabled': '<is> True'},
              {'kaminario:replication': 'enabled'})
    def test_replication_request_is_refused(self, specs):
        err = self.assertRaises(exception.InvalidVolumeType,
                                k2_specs.volume_specs, {'extra_specs': specs})
        self.assertIn(next(iter(specs)), err.msg)

    @ddt.data({'replication_enabled': '<is> False'},
              {'kaminario:replication': 'disabled'})
    def test_replication_off_is_fine(self, specs):
        self.assertTrue(k2_specs.volume_specs({'extra_specs': specs})[
            'dedup'])
