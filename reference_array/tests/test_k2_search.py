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

"""K2 query parameters, answered in SQL by the store and over objects
in memory: both must mean the same by every operator.
"""

import os

import fixtures
import testtools

from reference_array.core import errors
from reference_array.core import query
from reference_array.core import store as store_mod
from reference_array.k2 import models
from reference_array.k2 import records as records_mod
from reference_array.k2 import search

Ref = models.Ref


class K2SearchTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'a.db')
        self.store = store_mod.Store(path,
                                     key_functions=models.KEY_FUNCTIONS,
                                     kept=models.KEPT)
        self.addCleanup(self.store.close)
        self.records = records_mod.Records(self.store)
        group = Ref('volume_groups', 1)
        for name, size, read_only, vg in (
                ('cv-a', 1024, False, group), ('cv-b', 4096, True, group),
                ('cv-c', 2048, False, None), ('other', 4096, False, group)):
            self.records.new(models.Volume(
                name=name, size=size, read_only=read_only, volume_group=vg,
                layer=7))

    def ids(self, *pairs):
        """Ids found by the store and in memory (they must agree)."""
        q = search.parse(models.Volume, list(pairs))
        total, found = self.records.select(models.Volume, q)
        wires = [o.to_wire() for o in self.records.all(models.Volume)]
        mem_total, in_memory = query.over(wires, q)
        stored = [o.id for o in found]
        self.assertEqual(stored, [o['id'] for o in in_memory], pairs)
        self.assertEqual(total, mem_total, pairs)
        return stored

    def test_equality_by_type(self):
        self.assertEqual([2], self.ids(('name', 'cv-b')))
        self.assertEqual([2, 4], self.ids(('size', '4096')))
        self.assertEqual([], self.ids(('size', 'five')))
        self.assertEqual([2], self.ids(('read_only', 'TRUE')))
        self.assertEqual([1, 3, 4], self.ids(('read_only', 'false')))
        self.assertEqual([], self.ids(('read_only', 'yes')))

    def test_references_with_or_without_ref(self):
        self.assertEqual([1, 2, 4], self.ids(('volume_group',
                                              '/volume_groups/1')))
        self.assertEqual([1, 2, 4], self.ids(('volume_group.ref',
                                              '/volume_groups/1')))
        self.assertEqual([3], self.ids(('volume_group', 'null')))
        self.assertEqual([1, 2, 4], self.ids(('volume_group__neq', 'null')))

    def test_operators(self):
        self.assertEqual([1, 3], self.ids(('name__in', 'cv-a,cv-c')))
        self.assertEqual([1, 3], self.ids(('name__m_eq', 'cv-c,cv-a')))
        self.assertEqual([3, 4], self.ids(('name__neq', 'cv-a'),
                                          ('name__neq', 'cv-b')))
        self.assertEqual([2, 4], self.ids(('size__gt', '2048')))
        self.assertEqual([2, 3, 4], self.ids(('size__gte', '2048')))
        self.assertEqual([1], self.ids(('size__lt', '2048')))
        self.assertEqual([], self.ids(('size__lt', 'many')))
        self.assertEqual([1, 2, 3], self.ids(('name__prefix', 'cv-')))
        self.assertEqual([2], self.ids(('name__contains', 'b')))
        self.assertEqual([2, 4], self.ids(('size__contains', '409')))
        self.assertEqual([2], self.ids(('read_only__contains', 'tru')))
        # All conditions hold together.
        self.assertEqual([4], self.ids(('size', '4096'),
                                       ('name__prefix', 'o')))

    def test_order_and_pages(self):
        self.assertEqual([4, 3, 2, 1], self.ids(('__sort', 'id'),
                                                ('__sort_order', 'desc')))
        self.assertEqual([1, 3, 2, 4], self.ids(('__sort', 'size')))
        self.assertEqual([2, 4, 3, 1], self.ids(('__sort', 'size'),
                                                ('__sort_order', 'desc')))
        self.assertEqual([3, 2], self.ids(('__sort', 'size'),
                                          ('__limit', '2'),
                                          ('__offset', '1')))
        q = search.parse(models.Volume, [('__limit', '1')])
        self.assertEqual(4, self.records.select(models.Volume, q)[0])
        self.assertEqual([1, 2, 3, 4], self.ids(('__limit', '0')))

    def test_refusals(self):
        for pairs in ([('nope', '1')], [('layer', '7')],
                      [('name.ref', '/volumes/1')], [('__sort', 'nope')],
                      [('__limit', '-1')], [('__offset', 'x')]):
            self.assertRaises(errors.Invalid, search.parse, models.Volume,
                              pairs)

    def test_private_fields_are_neither_keys_nor_on_the_wire(self):
        vol = self.records.get(models.Volume, 1)
        self.assertNotIn('layer', vol.to_wire())
        self.assertNotIn('builtin', vol.to_wire())
        self.assertEqual(7, vol.layer)
        self.assertEqual(0, self.store.count('volumes', 'layer', 7))
        self.assertRaises(TypeError, models.Volume, name='x', size='big')
        self.assertRaises(AttributeError, setattr, vol, 'sise', 5)


class StoredFormTestCase(testtools.TestCase):

    def test_a_reference_beyond_sqlite_ids_names_nothing(self):
        self.assertEqual(Ref('volumes', (1 << 63) - 1),
                         Ref.parse('/volumes/%d' % ((1 << 63) - 1)))
        self.assertIsNone(Ref.parse('/volumes/%d' % (1 << 63)))
        self.assertIsNone(Ref.parse('/volumes/x'))

    def test_a_volsnap_row_with_its_view_layer_loads(self):
        # The row a volsnap of a view was stored as before models.
        row = {'id': 4, 'name': 'g:s:v', 'snapshot': {'ref': '/snapshots/2'},
               'source': {'ref': '/volumes/3'}, 'scsi_sn': 'REFS4',
               '_layer': 7, '_size': 1024, '_view': 9}
        vs = models.Volsnap.from_row(row)
        self.assertEqual((7, 9, 1024), (vs.layer, vs.view, vs.size))
        self.assertEqual(row, vs.to_row())
