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

"""The K2 REST calls a driver makes stay the same amount of work however
many objects the array holds.

The K2 dialect is assembled in this process over a store on disk and
filled in the driver's layout (a volume group per volume). Each call is
then counted, not timed: the SQL statements it runs, the SQLite virtual
machine steps they take and the stored rows it decodes, at 10 and at
1,000 volumes.
"""

import json

import testtools

from reference_array.core import pages
from reference_array.core import store as store_mod
from reference_array.http import server as httpd
from reference_array.k2 import api as api_mod
from reference_array.k2 import backend as backend_mod
from reference_array.k2 import hosts as hosts_mod
from reference_array.k2 import models
from reference_array.k2 import records as records_mod
from reference_array.k2 import system as system_mod
from reference_array.k2 import volumes as volumes_mod
from reference_array.tests import costs

PREFIX = api_mod.PREFIX
SMALL, LARGE = costs.SMALL, costs.LARGE


class InProcessK2(costs.Filled):
    """The K2 dialect over a store in a temporary directory (``views``:
    the store keeps the K2 objects' views, as the array's does).
    """

    def __init__(self, views=True):
        super().__init__()
        self.views = views

    def _setUp(self):
        self.open_store(models, self.views)
        records = records_mod.Records(self.store)
        system = system_mod.System(records, self.engine, {
            'system_id': 'k2scale', 'name': 'k2scale',
            'iqn': 'iqn.2026-11.io.test:k2scale', 'portals': ['127.0.0.1'],
            'fc_wwns': [], 'total_kib': 1 << 40})
        self.api = api_mod.K2API(backend_mod.K2Backend(
            records, self.engine, system,
            [volumes_mod.Volumes(records, self.engine, 1 << 40, True),
             hosts_mod.Hosts(records)]), {})
        self.host = self.call('POST', 'hosts', body={'name': 'h'})

    def call(self, method, resource, query=(), body=None):
        status, payload = self.api.route(method, PREFIX + '/' + resource,
                                         list(query), body)
        if status >= 300:
            raise AssertionError('%s %s: %s %s' % (method, resource,
                                                   status, payload))
        if isinstance(payload, httpd.JSONText):
            return json.loads(payload.text)
        return payload

    def add(self, name):
        """A volume group and its volume, as the driver creates them."""
        vg = self.call('POST', 'volume_groups', body={
            'name': 'cvg-' + name, 'quota': 0})
        return self.call('POST', 'volumes', body={
            'name': 'cv-' + name, 'size': 1024 * 1024,
            'volume_group': {'ref': '/volume_groups/%d' % vg['id']}})


class K2ScaleTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.k2 = self.useFixture(InProcessK2())

    def _lookups(self):
        k2 = self.k2

        def group_by_name(tag):
            found = k2.call('GET', 'volume_groups',
                            [('name', 'cvg-fill-000005')])
            self.assertEqual(1, found['total'])
            self.assertEqual(1, found['hits'][0]['volumes_count'])

        def volume_by_name(tag):
            found = k2.call('GET', 'volumes', [('name', 'cv-fill-000005')])
            self.assertEqual(1, found['total'])

        def mappings_of_volume(tag):
            k2.call('GET', 'mappings', [('volume.ref', '/volumes/7')])

        def group_by_id(tag):
            k2.call('GET', 'volume_groups/3')

        def create(tag):
            k2.add('probe-' + tag)

        def capacity(tag):
            found = k2.call('GET', 'system/capacity')['hits'][0]
            self.assertGreater(found['provisioned'], 0)

        return {'group by name': group_by_name,
                'volume by name': volume_by_name,
                'mappings of a volume': mappings_of_volume,
                'group by id': group_by_id,
                'create group and volume': create,
                'system capacity (provisioned kept)': capacity}

    def test_lookups_and_creates_do_the_same_work_at_any_size(self):
        found = self.k2.costs(self._lookups(), (SMALL, LARGE))
        for name, (small, large) in found.items():
            detail = '%s: %r at %d volumes, %r at %d' % (
                name, small, SMALL, large, LARGE)
            self.assertEqual(small.statements, large.statements, detail)
            self.assertEqual(small.decoded, large.decoded, detail)
            # B-tree descents grow with the log of the size; a scan would
            # grow a hundredfold.
            self.assertLess(large.steps, small.steps * 1.5 + 50, detail)

    def test_the_provisioned_total_is_the_sum_of_the_sizes(self):
        k2 = self.k2
        k2.fill(SMALL * 3)
        ids = [v['id'] for v in k2.call('GET', 'volumes', [
            ('__limit', '0')])['hits'] if v['name'].startswith('cv-')]
        for vol_id in ids[:5]:
            k2.call('PATCH', 'volumes/%d' % vol_id, body={
                'size': 3 * 1024 * 1024})
        for vol_id in ids[5:9]:
            k2.call('DELETE', 'volumes/%d' % vol_id)
        summed = sum(v['size'] for v in k2.call('GET', 'volumes', [
            ('__limit', '0')])['hits'])
        found = k2.call('GET', 'system/capacity')['hits'][0]
        self.assertEqual(summed, found['provisioned'])
        # Kept through a store that is opened again.
        reopened = store_mod.Store(k2.store.connection.execute(
            'PRAGMA database_list').fetchone()[2])
        self.addCleanup(reopened.close)
        self.assertEqual(summed, reopened.total(models.Volume.KIND, 'size'))

    def test_the_volume_count_is_kept(self):
        # The driver's count_volumes, on each stats poll.
        k2, costs = self.k2, []

        def count():
            return k2.call('GET', 'volumes', [('name__neq', 'CTRL'),
                                              ('__limit', '1')])['total']
        for size in (SMALL, LARGE):
            k2.fill(size)
            found, cost = k2.counted(count)
            self.assertEqual(size, found)
            costs.append(cost)
        small, large = costs
        detail = '%r at %d volumes, %r at %d' % (small, SMALL, large, LARGE)
        self.assertEqual(small.statements, large.statements, detail)
        self.assertLess(large.steps, small.steps * 1.5 + 50, detail)
        # Kept through deletes, and through a store opened again.
        ids = [v['id'] for v in k2.call('GET', 'volumes', [
            ('name__prefix', 'cv-'), ('__limit', '5')])['hits']]
        for vol_id in ids:
            k2.call('DELETE', 'volumes/%d' % vol_id)
        self.assertEqual(LARGE - 5, count())
        listed = k2.call('GET', 'volumes', [('__limit', '0')])
        self.assertEqual(LARGE - 5 + 1, listed['total'])
        self.assertEqual(listed['total'], len(listed['hits']))

    def test_attach_does_the_same_work_at_any_size(self):
        k2 = self.k2
        costs = []
        for size in (SMALL, LARGE):
            k2.fill(size)
            vol = k2.add('attach-%d' % size)
            _mapping, cost = k2.counted(lambda: k2.call(
                'POST', 'mappings', body={
                    'volume': {'ref': '/volumes/%d' % vol['id']},
                    'host': {'ref': '/hosts/%d' % k2.host['id']}}))
            costs.append(cost)
        small, large = costs
        detail = '%r at %d volumes, %r at %d' % (small, SMALL, large, LARGE)
        self.assertEqual(small.statements, large.statements, detail)
        self.assertEqual(small.decoded, large.decoded, detail)
        self.assertLess(large.steps, small.steps * 1.5 + 50, detail)

    def test_a_page_decodes_nothing_and_skips_to_its_offset(self):
        costs = []
        for size in (SMALL * 20, LARGE):
            self.k2.fill(size)
            (status, sent), cost = self.k2.counted(
                lambda: self.k2.api.route(
                    'GET', PREFIX + '/volume_groups',
                    [('__limit', '100'), ('__offset', str(size // 2))],
                    None))
            page = json.loads(sent.text)
            self.assertEqual(100, len(page['hits']))
            self.assertEqual(size, page['total'])
            costs.append(cost)
        small, large = costs
        detail = '%r at %d volumes, %r at %d' % (small, SMALL * 20, large,
                                                 LARGE)
        self.assertEqual(small.statements, large.statements, detail)
        # Sent from the groups' stored views; their totals are read from
        # their volumes' rows, none of them decoded.
        self.assertEqual(0, large.decoded, detail)
        # The page begins in the block of ids holding its offset (fewer
        # than pages.BLOCK ids skipped, about 2 steps each), and probes
        # only its own groups' volumes: skipping to the offset id by id,
        # 400 more groups at 1,000 took 1,200 steps more.
        self.assertLess(large.steps - small.steps, pages.BLOCK * 3, detail)
