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

"""The typed LINSTOR models: the rows the dialect writes, the keys the
store finds them under, and rows no model reads.
"""

import sqlite3

import testtools

from reference_array.core import store as store_mod
from reference_array.http import server as httpd
from reference_array.linstor import models
from reference_array.linstor import records as records_mod
from reference_array.tests import test_linstor_scale as scale

RD = '/v1/resource-definitions/'


def _present(row):
    """``row`` without its null fields, at any depth."""
    if isinstance(row, dict):
        return {k: _present(v) for k, v in row.items() if v is not None}
    if isinstance(row, list):
        return [_present(v) for v in row]
    return row


class LinstorModelsTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.ls = self.useFixture(scale.InProcessLinstor())
        self.ls.add('snapped', ('sat-1', 'sat-3'))
        self.ls.call('POST', RD + 'snapped/snapshots',
                     body={'name': 'snap1', 'nodes': ['sat-3']})

    def _rows(self, kind):
        return self.ls.store.all(kind)

    def test_every_stored_row_is_its_model_and_back(self):
        for model in models.STORED:
            rows = self._rows(model.KIND)
            self.assertNotEqual([], rows, model.KIND)
            for row in rows:
                typed = model.from_row(row)
                # Optional fields a row leaves out come back as null.
                self.assertEqual(row, _present(typed.to_row()), model.KIND)
        rd = models.ResourceDefinition.from_row(
            self.ls.backend.records.find_definition('snapped'))
        self.assertEqual(['sat-1', 'sat-3'], sorted(rd.resources))
        self.assertIsInstance(rd.resources['sat-1'], models.Resource)
        self.assertIsInstance(rd.snapshots['snap1'].vds[0],
                              models.SnapshotVolume)
        self.assertEqual(1024, rd.volume(0).usable())

    def test_a_row_no_model_reads_is_refused_and_nothing_stored(self):
        records = self.ls.backend.records
        rd = records.find_definition('snapped')
        misspelt = dict(rd, resource={})
        self.assertRaises(ValueError, records.put, records_mod.RDS, misspelt)
        wrong = dict(rd, port='7001')
        self.assertRaises(TypeError, records.put, records_mod.RDS, wrong)
        broken = dict(rd, resources={'sat-1': dict(
            rd['resources']['sat-1'], diskless='no')})
        self.assertRaises(TypeError, records.put, records_mod.RDS, broken)
        self.assertEqual(rd, records.find_definition('snapped'))

    def test_views_filtered_by_an_unknown_node_are_404(self):
        # LINSTOR loads each node a view of resources or storage pools is
        # filtered by, and refuses one it does not know: 404, the node's
        # not-found code with no object bits.
        for path in ('/v1/view/resources', '/v1/view/storage-pools'):
            e = self.assertRaises(httpd.HTTPError, self.ls.api.route, 'GET',
                                  path, [('nodes', 'SAT-1'),
                                         ('nodes', 'nowhere')], None)
            self.assertEqual(404, e.status)
            self.assertEqual((0xC000000000000000 | 300) - (1 << 64),
                             e.payload[0]['ret_code'])
            self.assertEqual("Node 'nowhere' not found.",
                             e.payload[0]['message'])
            self.assertTrue(self.ls.call('GET', path, [('nodes', 'SAT-1')]))
        # Filters LINSTOR does not load by stay quiet.
        for path, query in (
                ('/v1/view/resources', [('resources', 'nothing')]),
                ('/v1/view/resources', [('storage_pools', 'nopool')]),
                ('/v1/view/storage-pools', [('nodes', 'nowhere'),
                                            ('cached', 'true')]),
                ('/v1/view/snapshots', [('nodes', 'nowhere')])):
            self.assertEqual([], self.ls.call('GET', path, query), path)

    def test_definitions_are_found_by_the_nodes_of_their_snapshots(self):
        store = self.ls.store
        self.assertEqual(['snapped'], [
            rd['name'] for rd in store.find(records_mod.RDS,
                                            'snapshot_nodes', 'sat-3')])
        self.assertEqual([], store.find(records_mod.RDS, 'snapshot_nodes',
                                        'sat-1'))
        found = self.ls.call('GET', '/v1/view/snapshots',
                             [('nodes', 'SAT-3')])
        self.assertEqual([('snapped', 'snap1')],
                         [(s['resource_name'], s['name']) for s in found])
        self.assertEqual([], self.ls.call('GET', '/v1/view/snapshots',
                                          [('nodes', 'sat-1')]))

    def test_a_database_keyed_before_the_models_is_keyed_again(self):
        store = self.ls.store
        path = store.connection.execute(
            'PRAGMA database_list').fetchone()[2]
        with store.transaction():
            store.connection.execute(
                "DELETE FROM object_keys WHERE field = 'snapshot_nodes'")
            store.connection.execute('PRAGMA user_version=2')
        reopened = store_mod.Store(path, key_functions=models.KEY_FUNCTIONS)
        self.addCleanup(reopened.close)
        self.assertEqual(['snapped'], [
            rd['name'] for rd in reopened.find(records_mod.RDS,
                                               'snapshot_nodes', 'sat-3')])
        db = sqlite3.connect(path)
        self.addCleanup(db.close)
        self.assertEqual(store_mod.KEYED, db.execute(
            'PRAGMA user_version').fetchone()[0])
