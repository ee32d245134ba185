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

"""Pages of stored views in id order: they begin at their offset
whatever was deleted before it, in either order, through rollbacks and
in a database written before the block counts, walking fewer than a
block of ids to get there.
"""

import dataclasses
import json
import os
import sqlite3

import fixtures
import testtools

from reference_array.core import model
from reference_array.core import pages
from reference_array.core import store as store_mod
from reference_array.core import views
from reference_array.tests import costs


@dataclasses.dataclass(kw_only=True, slots=True)
class Thing(model.Model):
    KIND = 'things'


@dataclasses.dataclass(kw_only=True, slots=True)
class Other(model.Model):
    KIND = 'others'


def _wire(obj):
    return {'wire': {'id': obj.id}}


VIEWS = {m.KIND: views.Views(m, _wire, 1) for m in (Thing, Other)}
OBJECTS = 3 * pages.BLOCK + 40


class StorePagesTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'a.db')
        self.store = self._store()
        with self.store.transaction():
            for obj_id in range(1, OBJECTS + 1):
                self.store.put('things', obj_id, {'id': obj_id})
            # Another kind's ids in the same blocks count apart.
            for obj_id in range(1, 50):
                self.store.put('others', obj_id, {'id': obj_id})
        # Gone: scattered ids, and every id of the second block.
        with self.store.transaction():
            for obj_id in list(range(3, OBJECTS, 7)) + list(range(
                    pages.BLOCK, 2 * pages.BLOCK)):
                self.store.delete('things', obj_id)
        # Put again: a replacement is not a second object.
        self.store.put('things', 1, {'id': 1})

    def _store(self):
        store = store_mod.Store(self.path, views=VIEWS)
        self.addCleanup(store.close)
        return store

    def _ids(self, store=None):
        return [o['id'] for o in (store or self.store).all('things')]

    def _check(self, store):
        ids = self._ids(store)
        offsets = sorted({0, 1, 2, pages.BLOCK - 1, pages.BLOCK,
                          pages.BLOCK + 1, 300, len(ids) - 1, len(ids),
                          len(ids) + 5})
        for descending in (False, True):
            ordered = sorted(ids, reverse=descending)
            for offset in offsets:
                for limit in (1, 7, None):
                    page = store.page_views('things', 'wire', offset, limit,
                                            descending)
                    want = ordered[offset:][:limit]
                    self.assertEqual(want, [i for i, _t in page],
                                     (offset, limit, descending))
                    self.assertEqual(
                        want, [json.loads(t)['id'] for _i, t in page])

    def test_a_page_begins_at_its_offset_whatever_was_deleted(self):
        self._check(self.store)

    def test_a_rolled_back_insert_or_delete_moves_no_count(self):
        ids = self._ids()
        try:
            with self.store.transaction():
                self.store.put('things', OBJECTS + 500, {'id': 0})
                self.store.delete('things', ids[5])
                raise RuntimeError('undone')
        except RuntimeError:
            pass
        self.assertEqual(ids, self._ids())
        self._check(self.store)

    def test_an_older_database_gets_its_blocks_counted_when_opened(self):
        self.store.close()
        db = sqlite3.connect(self.path)
        db.execute('DROP TABLE object_blocks')
        for trigger in ('object_blocks_added', 'object_blocks_dropped'):
            db.execute('DROP TRIGGER %s' % trigger)
        db.commit()
        db.close()
        reopened = self._store()
        self._check(reopened)
        # Counted once: a put after the reopen moves them as before.
        reopened.put('things', OBJECTS + 1, {'id': OBJECTS + 1})
        self._check(reopened)

    def test_a_page_walks_less_than_a_block_to_its_offset(self):
        ids = self._ids()
        steps = []
        for offset in (0, len(ids) - 10):
            _page, cost = costs.counted(self.store, lambda: (
                self.store.page_views('things', 'wire', offset, 10)))
            steps.append(cost.steps)
        # Walking to the end one entry at a time would take several VM
        # steps per object skipped.
        self.assertLess(steps[1] - steps[0], pages.BLOCK * 4,
                        steps)

    def test_blocks_hold_no_empty_rows_and_the_last_ids_page_backwards(self):
        top = (1 << 63) - 1
        self.store.put('things', top, {'id': top})
        self.assertEqual([top], [i for i, _t in self.store.page_views(
            'things', 'wire', 0, 1, descending=True)])
        self.store.delete('things', top)
        blocks = self.store.connection.execute(
            'SELECT block, count FROM object_blocks WHERE kind = ?',
            ('things',)).fetchall()
        self.assertEqual([], [b for b in blocks if b[1] <= 0])
        self.assertEqual(len(self._ids()), sum(c for _b, c in blocks))
