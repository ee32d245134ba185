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

"""The LINSTOR REST calls a driver makes stay the same amount of work
however many resource definitions the controller holds.

The LINSTOR dialect is assembled in this process over a store on disk.
Definitions fill the satellites (one volume, two diskful replicas, as
the driver places them); a node of its own, ``probe-node``, holds the
same two definitions at every size. Each call is counted, not timed: the
SQL statements it runs, the SQLite virtual machine steps they take and
the stored rows it decodes, at 10 and at 1,000 definitions.
"""

import json
import sqlite3

import testtools

from reference_array.core import store as store_mod
from reference_array.http import server as httpd
from reference_array.linstor import api as api_mod
from reference_array.linstor import backend as backend_mod
from reference_array.linstor import models
from reference_array.linstor import records as records_mod
from reference_array.tests import costs

SMALL, LARGE = costs.SMALL, costs.LARGE
PROBE = 'probe-node'
PER_OBJECT_STEPS = costs.PER_OBJECT_STEPS
# VM steps per definition an offset skips.
OFFSET_STEPS = 6
# What a client does with a reply: not counted as the store's decodes.
CLIENT = json.JSONDecoder()


class InProcessLinstor(costs.Filled):
    """The LINSTOR dialect over a store in a temporary directory."""

    def _setUp(self):
        self.open_store(models)
        nodes = records_mod.default_nodes('client-1')
        nodes.append({'name': PROBE, 'pools': {
            records_mod.DEFAULT_POOL: 'LVM_THIN',
            records_mod.DISKLESS_POOL: 'DISKLESS'}, 'props': {}})
        self.backend = backend_mod.LinstorBackend(
            self.store, self.engine, nodes, 1 << 40)
        self.api = api_mod.LinstorAPI(self.backend)
        for name in ('probe-a', 'probe-b'):
            self.add(name, (PROBE, 'sat-1'))

    def call(self, method, path, query=(), body=None):
        status, payload = self.api.route(method, path, list(query), body)
        if isinstance(payload, httpd.JSONText):
            # Sent as it is (``JSONServer``): what the client reads.
            payload = CLIENT.decode(payload.text)
        if status >= 300:
            raise AssertionError('%s %s: %s %s' % (method, path, status,
                                                   payload))
        return payload

    def add(self, name, nodes=('sat-1', 'sat-2')):
        """A definition, its volume and its replicas, as the driver
        creates them.
        """
        self.call('POST', '/v1/resource-definitions', body={
            'resource_definition': {'name': name}})
        self.call('POST', '/v1/resource-definitions/%s/volume-definitions'
                  % name, body={'volume_definition': {'size_kib': 1024}})
        self.call('POST', '/v1/resource-definitions/%s/resources' % name,
                  body=[{'resource': {'node_name': n}} for n in nodes])


class LinstorScaleTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.ls = self.useFixture(InProcessLinstor())

    def _lookups(self):
        ls = self.ls
        rd = '/v1/resource-definitions/probe-a'

        def definition(tag):
            found = ls.call('GET', rd)
            self.assertEqual('probe-a', found['name'])

        def definition_listed(tag):
            found = ls.call('GET', '/v1/resource-definitions', [
                ('resource_definitions', 'PROBE-A'),
                ('with_volume_definitions', 'true')])
            self.assertEqual(['probe-a'], [d['name'] for d in found])
            self.assertEqual(1, len(found[0]['volume_definitions']))

        def node_resources(tag):
            found = ls.call('GET', '/v1/view/resources', [('nodes', PROBE)])
            self.assertEqual(['probe-a', 'probe-b'],
                             [r['name'] for r in found])

        def definition_resources(tag):
            found = ls.call('GET', rd + '/resources')
            self.assertEqual([PROBE, 'sat-1'],
                             sorted(r['node_name'] for r in found))

        def definition_snapshots(tag):
            self.assertEqual([], ls.call('GET', rd + '/snapshots'))

        def node_pools(tag):
            found = ls.call('GET', '/v1/nodes/%s/storage-pools' % PROBE)
            self.assertEqual(2, len(found))

        def create(tag):
            ls.add('new-' + tag)

        return {'one definition': definition,
                'one definition, listed': definition_listed,
                "one node's resources": node_resources,
                "one definition's resources": definition_resources,
                "one definition's snapshots": definition_snapshots,
                "one node's storage pools": node_pools,
                'create a definition and its replicas': create}

    def test_lookups_and_creates_do_the_same_work_at_any_size(self):
        grown = []
        found = self.ls.costs(self._lookups(), (SMALL, LARGE))
        for name, (small, large) in found.items():
            # B-tree descents grow with the log of the size; a scan would
            # grow a hundredfold.
            if (small.statements, small.decoded) != (
                    large.statements, large.decoded) or \
                    large.steps >= small.steps * 1.5 + 50:
                grown.append('%s: %r at %d definitions, %r at %d' % (
                    name, small, SMALL, large, LARGE))
        self.assertEqual([], grown)

    def test_a_page_decodes_only_its_definitions(self):
        found = []
        for size in (SMALL * 20, LARGE):
            self.ls.fill(size)
            page, cost = self.ls.counted(lambda: self.ls.call(
                'GET', '/v1/resource-definitions', [
                    ('limit', '100'), ('offset', str(size // 2))]))
            # In LINSTOR's order, by the upper-cased name: the fill's
            # names before the probes'.
            self.assertEqual(['fill-%06d' % n for n in range(
                size // 2, size // 2 + 100)], [d['name'] for d in page])
            found.append(cost)
        small, large = found
        detail = '%r at %d definitions, %r at %d' % (small, SMALL * 20,
                                                     large, LARGE)
        self.assertEqual(small.statements, large.statements, detail)
        self.assertEqual(small.decoded, large.decoded, detail)
        # Skipping to the offset walks the names' index, a few steps per
        # definition before the page; the total is a kept count, not a
        # count over the kind (which took twice that again).
        self.assertLess(large.steps - small.steps,
                        (LARGE - SMALL * 20) // 2 * OFFSET_STEPS, detail)

    def test_a_page_decodes_nothing_whatever_its_length(self):
        # The page is the definitions' stored views joined, sent as they
        # are: one statement, no row, model or view decoded (one decode
        # of the views built in SQL before; 100 rows, models and views
        # before that).
        self.ls.fill(SMALL * 20)
        found = []
        for limit in (2, 100):
            page, cost = self.ls.counted(lambda: self.ls.call(
                'GET', '/v1/resource-definitions', [
                    ('limit', str(limit)), ('offset', '50'),
                    ('with_volume_definitions', 'true')]))
            self.assertEqual(limit, len(page))
            found.append(cost)
        self.assertEqual((1, 1), (found[0].statements, found[1].statements),
                         found)
        self.assertEqual((0, 0), (found[0].decoded, found[1].decoded),
                         found)

    def assertPageShowsDefinitions(self, count):
        """The page of all, with and without volumes, is the views the
        named lookup builds from each definition (``rd_view``).
        """
        for with_vds in ('false', 'true'):
            page = self.ls.call('GET', '/v1/resource-definitions', [
                ('limit', '100'), ('with_volume_definitions', with_vds)])
            named = self.ls.call('GET', '/v1/resource-definitions', [
                ('resource_definitions', ','.join(d['name'] for d in page)),
                ('with_volume_definitions', with_vds)])
            self.assertEqual(count, len(page))
            self.assertEqual(named, page)
        return page

    def test_a_page_shows_what_a_definition_shows(self):
        # The page's views, stored with each definition, are those of
        # the definitions' own (``rd_view``), with their volumes when
        # asked for, whatever the definition holds.
        self.ls.fill(SMALL)
        ls = self.ls
        ls.call('POST', '/v1/resource-definitions', body={
            'resource_definition': {
                'name': 'A_ext', 'props': {'Aux/a': 'b'},
                'layer_data': [{'type': 'STORAGE'}]}})
        ls.call('POST', '/v1/resource-definitions', body={
            'resource_definition': {'name': 'ab',
                                    'external_name': 'external name'},
            'drbd_peer_slots': 3})
        for name in ('A_ext', 'ab'):
            ls.call('POST', '/v1/resource-definitions/%s/volume-'
                    'definitions' % name, body={'volume_definition': {
                        'size_kib': 2048, 'props': {'Aux/v': 'w'}}})
        for with_vds in ('false', 'true'):
            page = self.ls.call('GET', '/v1/resource-definitions', [
                ('limit', '100'), ('with_volume_definitions', with_vds)])
            self.assertEqual(with_vds == 'true', all(
                len(d.get('volume_definitions', ())) >= 1 for d in page))
        self.assertPageShowsDefinitions(SMALL + 4)

    def test_a_page_shows_every_change_of_a_definition(self):
        # Each kind of write of a definition rewrites its stored views:
        # the page shows the change as the definition's own view does.
        ls = self.ls
        rd = '/v1/resource-definitions/'
        ls.call('POST', '/v1/resource-groups', body={'name': 'gold'})
        ls.call('POST', rd, body={'resource_definition': {
            'name': 'changed', 'external_name': 'its external name'}})
        changes = [
            ('PUT', rd + 'changed', {'override_props': {'Aux/a': 'b'}}),
            ('PUT', rd + 'changed', {'delete_props': ['Aux/a'],
                                     'override_props': {'Aux/c': 'd'}}),
            ('PUT', rd + 'changed', {'drbd_port': 7999}),
            ('PUT', rd + 'changed', {'layer_stack': ['STORAGE']}),
            ('PUT', rd + 'changed', {'resource_group': 'gold'}),
            ('POST', rd + 'changed/volume-definitions',
             {'volume_definition': {'size_kib': 1024}}),
            ('POST', rd + 'changed/volume-definitions',
             {'volume_definition': {'size_kib': 2048,
                                    'props': {'Aux/v': 'w'}}}),
            ('PUT', rd + 'changed/volume-definitions/0',
             {'size_kib': 4096}),
            ('PUT', rd + 'changed/volume-definitions/1',
             {'override_props': {'Aux/v': 'x'}}),
            ('DELETE', rd + 'changed/volume-definitions/0', None),
            ('PUT', rd + 'changed', {'layer_stack': ['DRBD', 'STORAGE']}),
        ]
        shown = [self.assertPageShowsDefinitions(3)]
        for method, path, body in changes:
            ls.call(method, path, body=body)
            page = self.assertPageShowsDefinitions(3)
            self.assertNotIn(page, shown, (method, path, body))
            shown.append(page)
        changed, = [d for d in page if d['name'] == 'changed']
        self.assertEqual(('its external name', 'gold', [(1, 2048)]), (
            changed['external_name'], changed['resource_group_name'],
            [(v['volume_number'], v['size_kib'])
             for v in changed['volume_definitions']]))
        ls.call('DELETE', rd + 'changed')
        self.assertPageShowsDefinitions(2)
        self.assertEqual([], ls.store.connection.execute(
            'SELECT id FROM object_views WHERE id NOT IN (SELECT id FROM '
            'objects WHERE kind = ?)', (records_mod.RDS,)).fetchall())

    def test_a_database_stored_before_the_views_gets_them_on_open(self):
        ls = self.ls
        path = ls.store.connection.execute(
            'PRAGMA database_list').fetchone()[2]
        with ls.store.transaction():
            ls.store.connection.execute('DROP TABLE object_views')
            ls.store.connection.execute('PRAGMA user_version=4')
        reopened = store_mod.Store(path, key_functions=models.KEY_FUNCTIONS,
                                   kept=models.KEPT,
                                   views=models.VIEW_FUNCTIONS)
        self.addCleanup(reopened.close)
        ls.backend.definitions.store = reopened
        self.assertEqual(['probe-a', 'probe-b'], [
            d['name'] for d in CLIENT.decode(
                ls.backend.definitions.page_text())])
        self.assertEqual(self.ls.call('GET', '/v1/resource-definitions', [
            ('resource_definitions', 'probe-a,probe-b'),
            ('with_volume_definitions', 'true')]), CLIENT.decode(
                ls.backend.definitions.page_text(with_vds=True)))
        db = sqlite3.connect(path)
        self.addCleanup(db.close)
        self.assertEqual(store_mod.KEYED, db.execute(
            'PRAGMA user_version').fetchone()[0])

    def test_definitions_views_are_written_again_when_their_form_changes(
            self):
        ls = self.ls
        path = ls.store.connection.execute(
            'PRAGMA database_list').fetchone()[2]
        before = ls.backend.definitions.page_text(with_vds=True)
        with ls.store.transaction():
            # As if written before a field was added to their views.
            ls.store.connection.execute(
                "UPDATE object_views SET text = '{}'")
            ls.store.connection.execute(
                "UPDATE view_marks SET mark = 'earlier'")
        reopened = store_mod.Store(path, key_functions=models.KEY_FUNCTIONS,
                                   kept=models.KEPT,
                                   views=models.VIEW_FUNCTIONS)
        self.addCleanup(reopened.close)
        ls.backend.definitions.store = reopened
        self.assertEqual(before, ls.backend.definitions.page_text(
            with_vds=True))

    def test_autoplace_does_the_same_work_at_any_size(self):
        found = []
        for size in (SMALL, LARGE):
            self.ls.fill(size)
            name = 'auto-%d' % size
            self.ls.call('POST', '/v1/resource-definitions', body={
                'resource_definition': {'name': name}})
            self.ls.call('POST', '/v1/resource-definitions/%s/volume-'
                         'definitions' % name,
                         body={'volume_definition': {'size_kib': 1024}})
            _entries, cost = self.ls.counted(lambda: self.ls.call(
                'POST', '/v1/resource-definitions/%s/autoplace' % name,
                body={'select_filter': {'place_count': 2}}))
            placed = self.ls.call('GET', '/v1/resource-definitions/%s/'
                                  'resources' % name)
            self.assertEqual(2, len(placed))
            found.append(cost)
        small, large = found
        detail = '%r at %d definitions, %r at %d' % (small, SMALL, large,
                                                     LARGE)
        self.assertEqual(small.statements, large.statements, detail)
        self.assertEqual(small.decoded, large.decoded, detail)
        # What the pools hold is one row each (the engine's accounts), not
        # a sum over their layers: the steps stay within B-tree depth.
        self.assertLessEqual(large.steps, small.steps * 1.1 + 50, detail)

    def test_a_pools_row_is_the_same_size_at_any_size(self):
        found = []
        for size in (SMALL, LARGE):
            self.ls.fill(size)
            found.append(max(len(body) for (body,) in
                             self.ls.store.connection.execute(
                                 'SELECT body FROM objects WHERE kind = ?',
                                 (models.PoolUsage.KIND,))))
        # Rewritten by every change of a definition in the pool: it must
        # not list what the pool holds.
        self.assertEqual(found[0], found[1])

    def test_pool_usage_is_the_same_work_at_any_size(self):
        ls = self.ls
        ls.call('POST', '/v1/resource-groups', body={
            'name': 'gold', 'select_filter': {'place_count': 2}})

        def spawn(tag):
            ls.call('POST', '/v1/resource-groups/gold/spawn', body={
                'resource_definition_name': 'spawned-' + tag,
                'volume_sizes': [1024]})

        def size_info(tag):
            found = ls.call('POST', '/v1/resource-groups/gold/query-size-'
                            'info', body={})
            self.assertIn('max_vlm_size_in_kib', found['space_info'])

        def pools(tag):
            found = ls.call('GET', '/v1/view/storage-pools')
            self.assertTrue(found)
        found = ls.costs({'spawn': spawn, 'query-size-info': size_info,
                          'storage-pool view': pools}, (SMALL, LARGE))
        grown = ['%s: %r at %d definitions, %r at %d' % (
            name, small, SMALL, large, LARGE)
            for name, (small, large) in found.items()
            if (small.statements, small.decoded) != (
                large.statements, large.decoded) or
            large.steps > small.steps * 1.1 + 50]
        self.assertEqual([], grown)
