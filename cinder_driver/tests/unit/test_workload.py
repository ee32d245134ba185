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

"""The MongoDB workload library of the Tempest plugin."""

import io
import json
import shlex
import sys
import threading
from unittest import mock

import fixtures
import testtools

from tempest_plugin.workload import dataset
from tempest_plugin.workload import driver
from tempest_plugin.workload import remote
from tempest_plugin.workload import report
from tempest_plugin.workload import topology


class FakeCollection(object):
    """The part of a pymongo collection the workload uses, in memory."""

    def __init__(self):
        self.docs = {}
        self.indexes = []
        self.lock = threading.Lock()

    def create_index(self, key, unique=False):
        self.indexes.append((key, unique))

    def insert_many(self, docs, ordered=True):
        with self.lock:
            for doc in docs:
                if doc['mNumber'] in self.docs:
                    raise ValueError('duplicate key %s' % doc['mNumber'])
                self.docs[doc['mNumber']] = dict(doc)

    def find_one(self, flt, projection=None):
        with self.lock:
            doc = self.docs.get(flt['mNumber'])
            return dict(doc) if doc is not None else None

    def update_one(self, flt, update):
        with self.lock:
            doc = self.docs.get(flt['mNumber'])
            hit = doc is not None and doc['state'] == flt['state']
            if hit:
                doc.update(update['$set'])

        class Reply(object):
            modified_count = int(hit)
        return Reply()


class FakeDB(dict):

    def __missing__(self, name):
        self[name] = FakeCollection()
        return self[name]


class DatasetTestCase(testtools.TestCase):

    def test_documents_are_sized_and_repeatable(self):
        spec = dataset.Spec(scale=0.001)
        doc = dataset.document(spec, 3, 7)
        size = len(json.dumps(doc))
        self.assertLess(abs(size - spec.document_bytes),
                        spec.document_bytes * 0.05, size)
        self.assertEqual(doc, dataset.document(spec, 3, 7))
        self.assertNotEqual(doc, dataset.document(spec, 3, 8))
        self.assertIn(doc['state'], dataset.STATES)
        self.assertEqual(57, len(set(dataset.STATES)))

    def test_full_scale_is_the_reference_set(self):
        spec = dataset.Spec()
        self.assertEqual(750000, spec.total_documents)
        self.assertGreater(spec.approx_bytes, 12 * 10 ** 9)
        self.assertEqual(50, len(spec.collection_names()))

    def test_bad_parameters(self):
        self.assertRaises(ValueError, dataset.Spec, scale=0)
        self.assertRaises(ValueError, dataset.Spec, scale=2)
        self.assertRaises(ValueError, dataset.Spec, document_bytes=10)


class DriverTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.spec = dataset.Spec(scale=0.002, collections=4,
                                 document_bytes=512)
        self.db = FakeDB()

    def test_load_inserts_every_document_with_an_index(self):
        count, seconds = driver.load(self.db, self.spec, batch=7)
        self.assertEqual(self.spec.total_documents, count)
        self.assertEqual(4, len(self.db))
        for coll in self.db.values():
            self.assertEqual([('mNumber', True)], coll.indexes)
            self.assertEqual(self.spec.documents, len(coll.docs))

    def test_benchmark_counts_what_the_server_changed(self):
        driver.load(self.db, self.spec)
        before = {m: d['state'] for c in self.db.values()
                  for m, d in c.docs.items()}
        result = driver.benchmark(lambda: self.db, self.spec, processes=2,
                                  threads=3, iterations=2, ops_per_thread=50)
        self.assertEqual(2 * 2 * 3 * 50 * 2, result.operations)
        after = {m: d['state'] for c in self.db.values()
                 for m, d in c.docs.items()}
        changed = sum(1 for m in before if before[m] != after[m])
        # Every find is followed by an update to another state; one that
        # lost a race with another worker changes nothing. A document
        # changed twice may be back in its first state.
        self.assertLessEqual(changed, result.updated)
        self.assertGreater(result.updated, 2 * 2 * 3 * 50 * 0.9)
        self.assertGreater(result.updated_per_s, 0)
        self.assertEqual(0, result.errors)

    def test_a_shard_is_asked_only_for_its_collections(self):
        driver.load(self.db, self.spec)
        del self.db['collection_01'], self.db['collection_03']
        result = driver.benchmark(lambda: self.db, self.spec, processes=1,
                                  threads=2, iterations=1, ops_per_thread=40,
                                  collections=[0, 2])
        # Every find hit a document: an update followed each one.
        self.assertEqual(result.operations, 2 * result.updated)
        self.assertEqual(['collection_00', 'collection_02'],
                         sorted(self.db))

    def test_server_errors_are_counted_not_hidden(self):
        class Broken(FakeDB):
            def __missing__(self, name):
                coll = FakeCollection()
                coll.find_one = lambda *a: 1 / 0
                self[name] = coll
                return coll
        result = driver.benchmark(Broken, self.spec, processes=1, threads=1,
                                  iterations=1, ops_per_thread=5)
        self.assertEqual((5, 0), (result.errors, result.updated))


class TopologyTestCase(testtools.TestCase):

    def test_members(self):
        self.assertEqual(1, len(topology.members('standalone')))
        self.assertEqual(3, len(topology.members('replica-set')))
        self.assertEqual(10, len(topology.members('sharded')))
        self.assertRaises(ValueError, topology.members, 'ring')

    def test_commands(self):
        self.assertIn('--replSet rs0', topology.start_command('rs0-1'))
        self.assertIn('--configsvr', topology.start_command('cfg-0'))
        self.assertIn('--shardsvr --replSet shard1',
                      topology.start_command('shard1-2'))
        self.assertIn('cfg/10.0.0.1:27017,10.0.0.2:27017',
                      topology.start_command('mongos', ['10.0.0.1',
                                                        '10.0.0.2']))
        self.assertRaises(ValueError, topology.start_command, 'mongos')
        script = topology.initiate_script('cfg', ['a', 'b'], True)
        self.assertEqual({'_id': 'cfg', 'configsvr': True, 'members': [
            {'_id': 0, 'host': 'a:27017'}, {'_id': 1, 'host': 'b:27017'}]},
            json.loads(script[len('rs.initiate('):-1]))
        shards = topology.shard_script([('shard0', ['a'])], 'bench', ['c1'])
        self.assertIn('sh.shardCollection("bench.c1"', shards)

    IPS = {role: '10.0.0.%d' % n for n, role in enumerate(
        topology.members('sharded') + topology.members('replica-set') +
        topology.members('standalone'), 10)}

    def _scripts(self, steps, word):
        """The mongosh scripts of the steps whose command holds ``word``."""
        return [(role, shlex.split(cmd)[-1]) for role, cmd in steps
                if word in cmd]

    def test_standalone_only_starts_the_server(self):
        steps = topology.formation('standalone', self.IPS, 'bench', ['c'])
        self.assertEqual([('mongod', 'sudo sh -c %s' % shlex.quote(
            topology.start_command('mongod')))], steps)
        self.assertEqual('mongod', topology.entry('standalone'))
        self.assertEqual('mongodb://127.0.0.1:27017/',
                         topology.client_uri('standalone'))

    def test_replica_set_sequence(self):
        steps = topology.formation('replica-set', self.IPS, 'bench', ['c'])
        roles = [role for role, _cmd in steps]
        # Three servers start, then the first member forms the set and
        # waits for its primary.
        self.assertEqual(['rs0-0', 'rs0-1', 'rs0-2', 'rs0-0', 'rs0-0'],
                         roles)
        for _role, cmd in steps[:3]:
            self.assertIn('--replSet rs0', shlex.split(cmd)[-1])
        (_r, initiate), (_r2, wait) = self._scripts(steps, 'mongosh')
        config = json.loads(initiate[len('rs.initiate('):-1])
        self.assertEqual(['%s:27017' % self.IPS['rs0-%d' % n]
                          for n in range(3)],
                         [m['host'] for m in config['members']])
        self.assertIn('db.hello().primary', wait)
        self.assertIn('quit(1)', wait)
        self.assertEqual('mongodb://127.0.0.1:27017/?replicaSet=rs0',
                         topology.client_uri('replica-set'))

    def test_sharded_sequence(self):
        colls = ['collection_00', 'collection_01']
        steps = topology.formation('sharded', self.IPS, 'bench', colls)
        roles = [role for role, _cmd in steps]
        members = topology.members('sharded')
        # Nine servers start, config servers and each shard form their
        # replica sets (each waiting for a primary), only then mongos
        # starts and adds the shards.
        self.assertEqual(members[:-1], roles[:9])
        self.assertEqual(['cfg-0', 'cfg-0', 'shard0-0', 'shard0-0',
                          'shard1-0', 'shard1-0', 'mongos', 'mongos'],
                         roles[9:])
        scripts = self._scripts(steps, 'mongosh')
        cfg = json.loads(scripts[0][1][len('rs.initiate('):-1])
        self.assertTrue(cfg['configsvr'])
        self.assertEqual('cfg', cfg['_id'])
        shard1 = json.loads(scripts[4][1][len('rs.initiate('):-1])
        self.assertEqual(['%s:27017' % self.IPS['shard1-%d' % n]
                          for n in range(3)],
                         [m['host'] for m in shard1['members']])
        mongos_start = shlex.split(steps[-2][1])[-1]
        self.assertIn('--configdb cfg/%s:27017,' % self.IPS['cfg-0'],
                      mongos_start)
        sharding = scripts[-1][1]
        self.assertIn('sh.addShard("shard0/%s:27017' % self.IPS['shard0-0'],
                      sharding)
        self.assertIn('sh.enableSharding("bench")', sharding)
        for name in colls:
            self.assertIn('sh.shardCollection("bench.%s", {mNumber: '
                          '"hashed"})' % name, sharding)
        self.assertEqual('mongos', topology.entry('sharded'))

    def test_formation_needs_every_address(self):
        ips = dict(self.IPS)
        del ips['shard1-2']
        err = self.assertRaises(ValueError, topology.formation, 'sharded',
                                ips, 'bench', ['c'])
        self.assertIn('shard1-2', str(err))

    def test_what_ferretdb_cannot_form_is_skipped_with_the_reason(self):
        every = topology.TOPOLOGIES
        self.assertIsNone(topology.unavailable('standalone', 'ferretdb',
                                               every))
        for topo in ('replica-set', 'sharded'):
            reason = topology.unavailable(topo, 'ferretdb', every)
            self.assertIn('%s needs mongod' % topo, reason)
            self.assertIn('neither replica sets nor sharding', reason)
            self.assertIsNone(topology.unavailable(topo, 'mongod', every))
        self.assertIn('not in [cinder_flash_mongodb] topologies',
                      topology.unavailable('sharded', 'mongod',
                                           ['standalone']))
        self.assertRaises(ValueError, topology.unavailable, 'ring', 'mongod',
                          every)

    def test_local_layouts(self):
        names = ['c%d' % n for n in range(5)]
        self.assertEqual([(0, names)], topology.local_layout('standalone',
                                                             names))
        self.assertEqual(3, len(topology.local_layout('replica-set', names)))
        (a, first), (b, second) = topology.local_layout('sharded', names)
        self.assertEqual(sorted(names), sorted(first + second))
        self.assertFalse(set(first) & set(second))


class ReportTestCase(testtools.TestCase):

    ROW = {'topology': 'standalone', 'volume type': 'dedup',
           'updated docs/s': 120.5, 'ops/s': 300.0, 'IOPS': 900,
           'MB/s': 12.5, 'latency ms': 0.8, 'data reduction': 2.4}

    def test_table(self):
        text = report.table([self.ROW], 'standalone')
        self.assertIn('| standalone | dedup | 120 | 300 | 900 | 12 | 0.80 | '
                      '2.40:1 |', text)

    def test_nonsense_is_refused(self):
        for change, words in (({'IOPS': None}, 'IOPS is missing'),
                              ({'data reduction': 0.8}, 'below 1'),
                              ({'updated docs/s': 0}, 'updated nothing'),
                              ({'IOPS': 0}, 'no I/O'),
                              ({'ops/s': 'fast'}, 'not a measurement')):
            row = dict(self.ROW, **change)
            err = self.assertRaises(report.BadMeasurement, report.check,
                                    row, True)
            self.assertIn(words, str(err))
        report.check(dict(self.ROW, **{'data reduction': 0.9}), False)


class WindowAverageTestCase(testtools.TestCase):
    """IOPS over the benchmark come from every pool report within it."""

    @staticmethod
    def caps(stamp, read, write, latency=500, throughput=4e6):
        return {'timestamp': stamp, 'read_iops': read, 'write_iops': write,
                'latency_usec': latency,
                'throughput_bytes_per_sec': throughput}

    def test_reports_in_the_window_are_averaged(self):
        before = self.caps('t0', 0, 0)
        # Read every few seconds: the same report several times, then the
        # first after the end (idle again).
        reading = [before, self.caps('t1', 100, 300, 400),
                   self.caps('t1', 100, 300, 400),
                   self.caps('t2', 0, 200, 1000), self.caps('t3', 0, 0, 0)]
        got = report.window_average(reading, before)
        self.assertEqual(3, got['reports'])
        self.assertEqual(200, got['IOPS'])
        # Weighted by IOPS: (400 * 400 + 200 * 1000) / 600 us.
        self.assertAlmostEqual(0.6, got['latency ms'])
        self.assertAlmostEqual(4.0, got['MB/s'])

    def test_one_idle_report_after_the_run_is_not_the_measurement(self):
        # What a single reading after the benchmark used to give: 0 IOPS.
        reading = [self.caps('t1', 50, 150), self.caps('t2', 0, 0)]
        self.assertEqual(100, report.window_average(reading)['IOPS'])

    def test_without_timestamps_the_rates_tell_reports_apart(self):
        before = {'read_iops': 0, 'write_iops': 0}
        reading = [before, {'read_iops': 10, 'write_iops': 30},
                   {'read_iops': 10, 'write_iops': 30}]
        got = report.window_average(reading, before)
        self.assertEqual((1, 40), (got['reports'], got['IOPS']))
        self.assertTrue(report.is_new(reading[1], before))
        self.assertFalse(report.is_new(reading[2], reading[1]))

    def test_no_report_within_the_window_is_an_error(self):
        before = self.caps('t0', 5, 5)
        err = self.assertRaises(report.BadMeasurement,
                                report.window_average, [before], before)
        self.assertIn('no pool report', str(err))


class RemoteTestCase(testtools.TestCase):
    """The entry member's command: load and benchmark run separately."""

    def setUp(self):
        super().setUp()
        self.db = FakeDB()
        client = mock.MagicMock()
        client.__getitem__.return_value = self.db
        pymongo = mock.MagicMock(MongoClient=mock.Mock(return_value=client))
        self.useFixture(fixtures.MonkeyPatch('sys.modules', dict(
            sys.modules, pymongo=pymongo)))

    def _run(self, *args):
        out = io.StringIO()
        with mock.patch('sys.stdout', out):
            code = remote.main(['--scale', '0.0001', '--collections', '2',
                                '--processes', '1', '--threads', '1',
                                '--iterations', '1', '--ops-per-thread', '5']
                               + list(args))
        return code, json.loads(out.getvalue().strip().splitlines()[-1])

    def test_load_only_loads_and_does_not_benchmark(self):
        code, out = self._run('--load-only')
        self.assertEqual(0, code)
        self.assertGreater(out['loaded'], 0)
        self.assertNotIn('updated', out)

    def test_skip_load_benchmarks_what_is_there(self):
        self._run('--load-only')
        code, out = self._run('--skip-load')
        self.assertEqual(0, code)
        self.assertEqual(0, out['loaded'])
        self.assertGreater(out['operations'], 0)
        self.assertEqual(0, out['errors'])
