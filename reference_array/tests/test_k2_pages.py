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

"""A K2 page of a whole kind is sent from the objects' stored wire views,
with their derived fields added: the same objects a filtered query
presents from the decoded rows, through changes, rollbacks and a
database written before the views.
"""

import json
import sqlite3
from unittest import mock

import testtools

from reference_array.core import store as store_mod
from reference_array.k2 import models
from reference_array.k2 import schema
from reference_array.tests import test_k2_scale as scale

PREFIX = scale.PREFIX
KINDS = ('volume_groups', 'volumes', 'snapshots', 'hosts', 'mappings',
         'volsnaps')
# The windows compared: everything, a page in the middle, the same page
# in reverse, a page past the end.
WINDOWS = ([('__limit', '0')],
           [('__limit', '3'), ('__offset', '2')],
           [('__limit', '3'), ('__offset', '2'), ('__sort', 'id'),
            ('__sort_order', 'desc')],
           [('__limit', '5'), ('__offset', '500')])
# A condition every object meets: the query is then answered from the
# decoded rows, as any filtered one.
EVERY = ('id__gte', '0')


class K2PagesTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.k2 = self.useFixture(scale.InProcessK2())
        self.k2.fill(8)
        k2 = self.k2
        # A group of two volumes, one of them mapped, snapshotted and
        # written.
        self.vol = k2.call('GET', 'volumes', [('name', 'cv-fill-000003')])[
            'hits'][0]
        self.vg = self.vol['volume_group']
        k2.call('POST', 'volumes', body={
            'name': 'second', 'size': 2 * 1024 * 1024,
            'volume_group': self.vg})
        k2.call('POST', 'mappings', body={
            'volume': {'ref': '/volumes/%d' % self.vol['id']},
            'host': {'ref': '/hosts/%d' % k2.host['id']}})
        k2.call('POST', 'snapshots', body={
            'short_name': 's1', 'source': self.vg})
        # Written after the snapshot: in the volume's own layer.
        layer = k2.api.backend.records.get('volumes', self.vol['id']).layer
        k2.engine.write(layer, 0, bytes(range(256)) * 256)
        k2.engine.flush()

    def _raw(self, resource, query, k2=None):
        """The reply to a search, decoded, and whether it was sent from
        the stored views: no object presented from its row.
        """
        api = (k2 or self.k2).api
        with mock.patch.object(api.backend, 'list',
                               wraps=api.backend.list) as rows:
            status, payload = api.route('GET', PREFIX + '/' + resource,
                                        list(query), None)
        self.assertEqual(200, status)
        return json.loads(payload.text), not rows.called

    def _compare(self, resource):
        for window in WINDOWS:
            sent, from_views = self._raw(resource, window)
            self.assertTrue(from_views, resource)
            decoded, from_views = self._raw(resource, window + [EVERY])
            self.assertFalse(from_views, resource)
            self.assertEqual(decoded, sent, '%s %s' % (resource, window))

    def test_a_whole_kinds_page_is_what_its_objects_present(self):
        for resource in KINDS:
            self._compare(resource)
        groups = {g['id']: g for g in self.k2.call(
            'GET', 'volume_groups', [('__limit', '0')])['hits']}
        mine = groups[int(self.vg['ref'].rsplit('/', 1)[1])]
        self.assertEqual(2, mine['volumes_count'])
        self.assertEqual(3 * 1024 * 1024,
                         mine['volumes_provisioned_capacity'])
        self.assertEqual(1, mine['snapshots_count'])
        self.assertGreater(mine['logical_capacity'], 0)
        vols = {v['id']: v for v in self.k2.call(
            'GET', 'volumes', [('__limit', '0')])['hits']}
        self.assertEqual(mine['logical_capacity'],
                         vols[self.vol['id']]['logical_capacity'])
        self.assertNotIn('layer', vols[self.vol['id']])
        self.assertNotIn('_layer', vols[self.vol['id']])

    def test_a_page_follows_changes_and_rollbacks(self):
        k2 = self.k2
        k2.call('PATCH', 'volumes/%d' % self.vol['id'],
                body={'description': 'renamed'})
        k2.call('DELETE', 'volumes/%d' % (self.vol['id'] + 1))
        store = k2.store
        records = k2.api.backend.records
        group = records.get('volume_groups', 2)
        group.description = 'never'
        try:
            with store.transaction():
                records.put(group)
                raise RuntimeError('undone')
        except RuntimeError:
            pass
        for resource in KINDS:
            self._compare(resource)
        vols = {v['id']: v for v in k2.call('GET', 'volumes', [
            ('__limit', '0')])['hits']}
        self.assertEqual('renamed', vols[self.vol['id']]['description'])
        self.assertNotIn(self.vol['id'] + 1, vols)
        self.assertNotEqual('never', k2.call('GET', 'volume_groups/2')[
            'description'])

    def _reopened(self, change):
        """The texts of every kind's views, then the store reopened after
        ``change(db)`` to its file, and the same texts from it.
        """
        path = self.k2.store.connection.execute(
            'PRAGMA database_list').fetchone()[2]
        kinds = [schema.model(r).KIND for r in KINDS]

        def texts(store):
            return {k: store.page_views(k, models.WIRE, 0, None)
                    for k in kinds}
        before = texts(self.k2.store)
        db = sqlite3.connect(path)
        change(db)
        db.commit()
        db.close()
        reopened = store_mod.Store(path, key_functions=models.KEY_FUNCTIONS,
                                   kept=models.KEPT,
                                   views=models.VIEW_FUNCTIONS)
        self.addCleanup(reopened.close)
        return before, texts(reopened)

    def test_an_older_database_gets_the_views_when_opened(self):
        def older(db):
            db.execute('DELETE FROM object_views')
            db.execute('DROP TABLE view_marks')
        before, after = self._reopened(older)
        self.assertEqual(before, after)
        self.assertEqual(8, len(after['volume_groups']))

    def test_views_are_written_again_when_a_model_changes(self):
        def stale(db):
            # As if written before a field was added to the volumes.
            db.execute("UPDATE object_views SET text = '{}' WHERE kind = "
                       "'volumes'")
            db.execute("UPDATE view_marks SET mark = 'earlier' WHERE kind "
                       "= 'volumes'")
        before, after = self._reopened(stale)
        self.assertEqual(before, after)

    def test_views_a_store_without_them_left_behind_are_written_again(self):
        path = self.k2.store.connection.execute(
            'PRAGMA database_list').fetchone()[2]
        kind = models.VolumeGroup.KIND
        plain = store_mod.Store(path, key_functions=models.KEY_FUNCTIONS,
                                kept=models.KEPT)
        group = models.VolumeGroup.from_row(plain.get(kind, 2))
        group.description = 'written without views'
        plain.put(kind, 2, group.to_row())
        plain.close()
        reopened = store_mod.Store(path, key_functions=models.KEY_FUNCTIONS,
                                   kept=models.KEPT,
                                   views=models.VIEW_FUNCTIONS)
        self.addCleanup(reopened.close)
        texts = {r[0]: json.loads(r[1]) for r in reopened.page_views(
            kind, models.WIRE, 0, None)}
        self.assertEqual('written without views', texts[2]['description'])

    def test_a_store_without_views_answers_from_the_rows(self):
        # A dialect over a store that keeps no views (an export index's
        # test, an embedding) gets the same page, built from the rows.
        plain = self.useFixture(scale.InProcessK2(views=None))
        plain.fill(3)
        sent, from_views = self._raw('volume_groups', [('__limit', '0')],
                                     plain)
        self.assertFalse(from_views)
        self.assertEqual(3, sent['total'])
        self.assertEqual([1, 1, 1], [g['volumes_count']
                                     for g in sent['hits']])

    def test_an_object_without_its_view_is_sent_from_its_row(self):
        self.k2.store.connection.execute(
            "DELETE FROM object_views WHERE kind = 'volumes' AND id = ?",
            (self.vol['id'],))
        with self.assertLogs('reference_array.k2.backend', 'WARNING'):
            sent, from_views = self._raw('volumes', [('__limit', '0')])
        self.assertFalse(from_views)
        self.assertEqual(self._raw('volumes', [('__limit', '0'), EVERY])[0],
                         sent)
        self.assertIn(self.vol['id'], [v['id'] for v in sent['hits']])

    def test_every_derived_field_is_an_integer(self):
        # A page writes them into the stored texts as integers.
        for model in models.STORED:
            for name, kind in model.DERIVED:
                self.assertIs(int, kind, '%s.%s' % (model.KIND, name))
