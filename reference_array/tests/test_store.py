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

"""The array's object store: keyed lookups, their rollback, old databases."""

import hashlib
import json
import os
import sqlite3
from unittest import mock

import fixtures
import testtools

from reference_array.core import store as store_mod


class StoreKeysTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'a.db')

    def _store(self):
        store = store_mod.Store(self.path)
        self.addCleanup(store.close)
        return store

    def test_find_by_field_reference_mapping_key_and_folded_name(self):
        store = self._store()
        store.put('vols', 1, {'id': 1, 'name': 'Alpha', 'size': 5,
                              'group': {'ref': '/groups/7'},
                              'resources': {'node-a': {}, 'node-b': {}},
                              '_secret': 'hidden'})
        store.put('vols', 2, {'id': 2, 'name': 'beta', 'size': 5,
                              'group': {'ref': '/groups/8'},
                              'resources': {'node-b': {}}})
        self.assertEqual([1, 2],
                         [o['id'] for o in store.find('vols', 'size', 5)])
        self.assertEqual(1, store.first('vols', 'group.ref',
                                        '/groups/7')['id'])
        self.assertEqual([1, 2], [o['id'] for o in store.find(
            'vols', 'resources.key', 'node-b')])
        self.assertEqual([1], [o['id'] for o in store.find(
            'vols', 'resources.key', 'node-a')])
        self.assertEqual(1, store.first('vols', 'name.folded', 'alpha')['id'])
        self.assertIsNone(store.first('vols', 'name', 'alpha'))
        # Private fields are never keys; a string is not the number.
        self.assertEqual([], store.find('vols', '_secret', 'hidden'))
        self.assertEqual(0, store.count('vols', 'size', '5'))

    def test_long_values_are_found_exactly_by_a_bounded_key(self):
        store = self._store()
        long_iqn = 'iqn.2026-01.io.test:' + 'x' * 300
        store.put('host_iqns', 1, {'id': 1, 'iqn': long_iqn,
                                   'description': 'd' * 100000})
        self.assertEqual(1, store.first('host_iqns', 'iqn', long_iqn)['id'])
        self.assertIsNone(store.first('host_iqns', 'iqn', long_iqn + 'y'))
        widest = store.connection.execute(
            'SELECT MAX(LENGTH(value)) FROM object_keys').fetchone()[0]
        self.assertLessEqual(widest, store_mod.MAX_KEY_TEXT)

    def test_a_key_is_the_json_text_of_its_value(self):
        # Names and numbers take a quicker way to the same text.
        for value in ('plain', 'caf\u00e9 "quoted" \\ \n\u2028', '\ud800',
                      '', 0, -7, 1 << 70, True, False, None, 1.5,
                      {'ref': '/a/1', 'b': [1]}, 'x' * 300):
            text = json.dumps(value, sort_keys=True)
            self.assertEqual(text if len(text) <= store_mod.MAX_KEY_TEXT
                             else '#' + hashlib.sha256(
                                 text.encode()).hexdigest(),
                             store_mod.encode_key(value), repr(value))

    def test_a_change_moves_and_a_delete_drops_the_keys(self):
        store = self._store()
        store.put('vols', 1, {'id': 1, 'name': 'a'})
        store.put('vols', 1, {'id': 1, 'name': 'b'})
        self.assertIsNone(store.first('vols', 'name', 'a'))
        self.assertEqual(1, store.count('vols', 'name', 'b'))
        store.delete('vols', 1)
        self.assertEqual(0, store.count('vols', 'name', 'b'))

    def test_keys_roll_back_with_their_object(self):
        store = self._store()

        def refused():
            with store.transaction():
                store.put('vols', 1, {'id': 1, 'name': 'a'})
                raise ValueError('refused')
        self.assertRaises(ValueError, refused)
        self.assertIsNone(store.get('vols', 1))
        self.assertEqual(0, store.count('vols', 'name', 'a'))

    def test_a_lookup_decodes_only_what_it_finds(self):
        store = self._store()
        with store.transaction():
            for n in range(200):
                store.put('vols', n, {'id': n, 'name': 'v%d' % n,
                                      'group': {'ref': '/groups/%d' % (
                                          n % 10)}})
        with mock.patch.object(store_mod.json, 'loads',
                               side_effect=json.loads) as loads:
            self.assertEqual(20, len(store.find('vols', 'group.ref',
                                                '/groups/3')))
            self.assertEqual('v42', store.first('vols', 'name',
                                                'v42')['name'])
            self.assertEqual(20, store.count('vols', 'group.ref',
                                             '/groups/4'))
        self.assertEqual(21, loads.call_count)

    def test_a_database_without_keys_gets_them_when_opened(self):
        db = sqlite3.connect(self.path)
        db.executescript("""
            CREATE TABLE objects (kind TEXT NOT NULL, id INTEGER NOT NULL,
                                  body TEXT NOT NULL, PRIMARY KEY (kind, id));
            CREATE TABLE counters (kind TEXT PRIMARY KEY,
                                   last INTEGER NOT NULL);
        """)
        db.execute('INSERT INTO objects VALUES (?, ?, ?)', (
            'hosts', 3, json.dumps({'id': 3, 'name': 'host-a'})))
        db.execute('INSERT INTO objects VALUES (?, ?, ?)', (
            'host_iqns', 4, json.dumps({'id': 4, 'iqn': 'iqn.x:a',
                                        'host': {'ref': '/hosts/3'}})))
        db.commit()
        db.close()
        store = self._store()
        self.assertEqual(3, store.first('hosts', 'name', 'host-a')['id'])
        self.assertEqual(4, store.first('host_iqns', 'iqn', 'iqn.x:a')['id'])
        self.assertEqual(1, store.count('host_iqns', 'host.ref', '/hosts/3'))
        store.close()
        # Keyed once: opening again does not rebuild (nor lose) them.
        again = self._store()
        self.assertEqual(3, again.first('hosts', 'name', 'host-a')['id'])


class KeptTotalsTestCase(testtools.TestCase):
    """Totals declared when the store is built: one row each, moved in
    the transaction of each change, and right from their first open.
    """

    KEPT = (('vols', store_mod.COUNT), ('vols', 'size'))

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'a.db')

    def _store(self, kept=KEPT):
        store = store_mod.Store(self.path, kept=kept)
        self.addCleanup(store.close)
        return store

    def _summed(self, store):
        found = store.all('vols')
        return len(found), sum(o['size'] for o in found)

    def _kept(self, store):
        return store.total('vols'), store.total('vols', 'size')

    def test_totals_follow_puts_replacements_deletes_and_rollbacks(self):
        store = self._store()
        self.assertEqual((0, 0), self._kept(store))
        for n in range(1, 6):
            store.put('vols', n, {'id': n, 'size': n * 10})
        store.put('others', 1, {'id': 1, 'size': 1000})
        # A replacement is not a new object.
        store.put('vols', 2, {'id': 2, 'size': 7})
        store.delete('vols', 3)
        store.delete('vols', 99)
        self.assertEqual(self._summed(store), self._kept(store))
        self.assertEqual((4, 10 + 7 + 40 + 50), self._kept(store))
        with testtools.ExpectedException(RuntimeError):
            with store.transaction():
                store.put('vols', 6, {'id': 6, 'size': 60})
                store.delete('vols', 1)
                raise RuntimeError('rolled back')
        self.assertEqual(self._summed(store), self._kept(store))

    def test_a_total_declared_later_starts_from_what_is_stored(self):
        store = self._store(kept=())
        for n in range(1, 4):
            store.put('vols', n, {'id': n, 'size': n})
        self.assertEqual((None, None), self._kept(store))
        store.close()
        store = self._store()
        self.assertEqual((3, 6), self._kept(store))
        store.put('vols', 4, {'id': 4, 'size': 4})
        self.assertEqual((4, 10), self._kept(store))
        # Kept by the database itself, whoever opens it next.
        store.close()
        self.assertEqual((4, 10), self._kept(self._store(kept=())))

    def test_reading_a_total_declares_nothing(self):
        store = self._store(kept=())
        store.put('vols', 1, {'id': 1, 'size': 5})
        self.assertIsNone(store.total('vols', 'size'))
        self.assertEqual([], store.connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND "
            "name LIKE 'kept_%'").fetchall())

    def test_sums_kept_in_their_own_table_move_to_the_kept_totals(self):
        # A database from when the store kept its sums in key_totals,
        # with the triggers that moved them.
        store = self._store(kept=())
        store.put('vols', 1, {'id': 1, 'size': 5})
        db = store.connection
        with store.transaction():
            db.execute('CREATE TABLE key_totals (kind TEXT NOT NULL, field '
                       'TEXT NOT NULL, total INTEGER NOT NULL, PRIMARY KEY '
                       '(kind, field)) WITHOUT ROWID')
            db.execute("INSERT INTO key_totals VALUES ('vols', 'size', 5)")
            db.execute('CREATE TRIGGER "key_total_added_x" AFTER INSERT ON '
                       'object_keys BEGIN UPDATE key_totals SET total = '
                       'total + 1; END')
        store.close()
        store = self._store()
        self.assertEqual((1, 5), self._kept(store))
        store.put('vols', 2, {'id': 2, 'size': 4})
        self.assertEqual((2, 9), self._kept(store))
        self.assertEqual([], store.connection.execute(
            "SELECT name FROM sqlite_master WHERE name LIKE 'key_total%'"
        ).fetchall())
