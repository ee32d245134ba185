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

"""The K2 index of exports the target reads at a login: after any
sequence of K2 writes it says what one built from the store says, and
what the store answers asked by name; a login reads nothing from the
store, with 10 hosts as with 1,000.
"""

import os
import random

import fixtures
import testtools

from reference_array.core import devices
from reference_array.core import engine as engine_mod
from reference_array.core import errors
from reference_array.core import store as store_mod
from reference_array.http import server as httpd
from reference_array.k2 import api as api_mod
from reference_array.k2 import backend as backend_mod
from reference_array.k2 import export_index
from reference_array.k2 import exporter as exporter_mod
from reference_array.k2 import hosts as hosts_mod
from reference_array.k2 import models
from reference_array.k2 import records as records_mod
from reference_array.k2 import system as system_mod
from reference_array.k2 import volumes as volumes_mod

IQNS = ['iqn.2026-11.io.test:host-%d' % n for n in range(6)]
STORE_READS = ('get', 'first', 'find', 'all', 'find_in', 'count',
               'count_in', 'total', 'pluck', 'select')
GIB_KIB = 1024 * 1024
# The steps of MaintainedTest._step: deletes (2, 6, 10, 13 to 15) a third
# as often as the rest, so that objects pile up.
OPS = [op for op in range(16) for _ in range(
    1 if op in (2, 6, 10, 13, 14, 15) else 3)]


def _device(dev):
    return dev.ref.path, dev.serial, dev.blocks, dev.read_only


def _seen(export):
    """An Export as plain values."""
    if export is None:
        return None
    return export.chap, {n: _device(d) for n, d in export.luns.items()}


class IndexTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'array.db')
        self._open()

    def _open(self):
        self.store = store_mod.Store(self.path,
                                     key_functions=models.KEY_FUNCTIONS,
                                     kept=models.KEPT)
        self.addCleanup(self.store.close)
        self.engine = engine_mod.Engine(self.store)
        self.addCleanup(self.engine.close)
        self.records = records_mod.Records(self.store)
        self.exporter = exporter_mod.K2Exporter(self.records, self.engine,
                                                'index')
        self.exports = devices.Exports(self.store, 'iqn.2026-11.io.test:a',
                                       [self.exporter], engine=self.engine)
        system = system_mod.System(self.records, self.engine, {
            'system_id': 'index', 'name': 'index', 'iqn': self.exports.iqn,
            'portals': ['127.0.0.1'], 'fc_wwns': [], 'total_kib': 1 << 40})
        self.api = api_mod.K2API(backend_mod.K2Backend(
            self.records, self.engine, system,
            [volumes_mod.Volumes(self.records, self.engine, 1 << 40, True),
             hosts_mod.Hosts(self.records)]), {})

    def call(self, method, resource, body=None):
        """The reply's body, or None if the array refused."""
        try:
            status, payload = self.api.route(
                method, api_mod.PREFIX + '/' + resource, [], body)
        except (httpd.HTTPError, errors.ArrayError):
            return None
        return payload

    def assertIndexHolds(self):
        """The index = one built now from the store = the store asked."""
        kept = {iqn: _seen(e) for iqn, e in self.exporter.exports.items()}
        with self.store.lock:
            built = export_index.ExportIndex(
                self.records, self.exporter._lun, follow=False)
        self.assertEqual({iqn: _seen(e) for iqn, e in built.entries.items()},
                         kept)
        self.assertEqual(built.state(), self.exporter.index.state())
        asked = {}
        for port in self.records.all(models.HostIqn):
            asked[port.iqn] = (self.exporter.chap_for(port.iqn), {
                n: _device(d) for n, d in
                self.exporter.luns_for(port.iqn).items()})
        self.assertEqual(asked, kept)


class MaintainedTest(IndexTestCase):

    def _ids(self, kind):
        return [obj.id for obj in self.records.all(kind)]

    def _pick(self, rnd, kind):
        ids = self._ids(kind)
        return rnd.choice(ids) if ids else None

    def _step(self, rnd, n):
        """One random K2 write (the array may refuse it)."""
        op = rnd.choice(OPS)
        host = self._pick(rnd, models.Host)
        profile = self._pick(rnd, models.HostAuthProfile)
        if op == 0:
            self.call('POST', 'host_auth_profiles', {
                'name': 'p%d' % n, 'auth_type': 'CHAP',
                'username': 'user-%d' % n, 'secret': 'secret-%06d' % n})
        elif op == 1 and profile:
            field = rnd.choice(['username', 'secret'])
            self.call('PATCH', 'host_auth_profiles/%d' % profile, {
                field: '%s-%08d' % (field[:4], n)})
        elif op == 2 and profile:
            self.call('DELETE', 'host_auth_profiles/%d' % profile)
        elif op == 3:
            body = {'name': 'h%d' % n}
            if profile and rnd.random() < 0.5:
                body['host_auth_profile'] = {
                    'ref': '/host_auth_profiles/%d' % profile}
            self.call('POST', 'hosts', body)
        elif op == 4 and host:
            ref = {'ref': '/host_auth_profiles/%d' % profile} \
                if profile and rnd.random() < 0.7 else None
            self.call('PATCH', 'hosts/%d' % host, {'host_auth_profile': ref})
        elif op == 5 and host:
            self.call('POST', 'host_iqns', {
                'iqn': rnd.choice(IQNS), 'host': {'ref': '/hosts/%d' % host}})
        elif op == 6:
            port = self._pick(rnd, models.HostIqn)
            if port:
                self.call('DELETE', 'host_iqns/%d' % port)
        elif op == 7:
            vg = self.call('POST', 'volume_groups', {'name': 'vg%d' % n,
                                                     'quota': 0})
            self.call('POST', 'volumes', {
                'name': 'v%d' % n, 'size': GIB_KIB,
                'volume_group': {'ref': '/volume_groups/%d' % vg['id']}})
        elif op == 8:
            vol = self._pick(rnd, models.Volume)
            if vol:
                current = self.records.get(models.Volume, vol)
                self.call('PATCH', 'volumes/%d' % vol, rnd.choice([
                    {'size': current.size + GIB_KIB},
                    {'read_only': not current.read_only},
                    {'name': 'renamed-%d' % n}]))
        elif op == 9 and host:
            kind = rnd.choice(['volumes', 'volumes', 'snapshots'])
            obj = self._pick(rnd, models.BY_KIND[kind])
            if obj:
                self.call('POST', 'mappings', {
                    'volume': {'ref': '/%s/%d' % (kind, obj)},
                    'host': {'ref': '/hosts/%d' % host}})
        elif op == 10:
            mapping = self._pick(rnd, models.Mapping)
            if mapping:
                self.call('DELETE', 'mappings/%d' % mapping)
        elif op == 11:
            vg = self._pick(rnd, models.VolumeGroup)
            if vg:
                self.call('POST', 'snapshots', {
                    'short_name': 's%d' % n,
                    'source': {'ref': '/volume_groups/%d' % vg},
                    'is_exposable': rnd.random() < 0.7})
        elif op == 12:
            # Mostly a mapped view: its LUNs change with it.
            mapped = [m.volume for m in self.records.all(models.Mapping)
                      if m.volume.kind == models.Volsnap.KIND]
            snap = self._pick(rnd, models.Snapshot)
            if mapped and rnd.random() < 0.7:
                snap = self.records.resolve(rnd.choice(mapped)).snapshot.id
            if snap:
                self.call('PATCH', 'snapshots/%d' % snap,
                          {'is_exposable': rnd.random() < 0.5})
        elif op == 13 and host:
            # A host goes with its mappings (its ports go with it).
            for m in self.records.children(models.Mapping, 'host',
                                           models.Ref('hosts', host)):
                self.call('DELETE', 'mappings/%d' % m.id)
            self.call('DELETE', 'hosts/%d' % host)
        elif op == 14:
            vol = self._pick(rnd, models.Volume)
            if vol:
                self.call('DELETE', 'volumes/%d' % vol)
        elif op == 15:
            snap = self._pick(rnd, models.Snapshot)
            if snap:
                self.call('DELETE', 'snapshots/%d' % snap)

    def test_random_writes_keep_the_index_as_built(self):
        exported = set()
        for seed in range(3):
            rnd = random.Random(seed)
            for n in range(70):
                self._step(rnd, seed * 1000 + n)
                self.assertIndexHolds()
                for e in self.exporter.exports.values():
                    exported.update(
                        ['chap'] * bool(e.chap) + ['luns'] * bool(e.luns) +
                        ['view'] * any(d.ref.kind == 'volsnaps'
                                       for d in e.luns.values()))
        # The writes exported CHAP, LUNs and views.
        self.assertEqual({'chap', 'luns', 'view'}, exported)

    def test_an_initiator_moves_to_another_host(self):
        p = self.call('POST', 'host_auth_profiles', {
            'name': 'p', 'username': 'u', 'secret': 'secret-000001'})
        h1 = self.call('POST', 'hosts', {'name': 'h1', 'host_auth_profile': {
            'ref': '/host_auth_profiles/%d' % p['id']}})
        h2 = self.call('POST', 'hosts', {'name': 'h2'})
        port = self.call('POST', 'host_iqns', {
            'iqn': IQNS[0], 'host': {'ref': '/hosts/%d' % h1['id']}})
        self.assertEqual(('u', 'secret-000001'), self.exports.chap(IQNS[0]))
        self.call('DELETE', 'host_iqns/%d' % port['id'])
        self.assertIsNone(self.exports.chap(IQNS[0]))
        self.call('POST', 'host_iqns', {
            'iqn': IQNS[0], 'host': {'ref': '/hosts/%d' % h2['id']}})
        self.assertIsNone(self.exports.chap(IQNS[0]))
        self.assertIndexHolds()

    def test_a_rolled_back_write_leaves_the_index_as_the_store(self):
        p = self.call('POST', 'host_auth_profiles', {
            'name': 'p', 'username': 'u', 'secret': 'secret-000001'})
        h = self.call('POST', 'hosts', {'name': 'h', 'host_auth_profile': {
            'ref': '/host_auth_profiles/%d' % p['id']}})
        self.call('POST', 'host_iqns', {
            'iqn': IQNS[0], 'host': {'ref': '/hosts/%d' % h['id']}})

        class Undone(Exception):
            pass
        with testtools.ExpectedException(Undone):
            with self.store.transaction():
                profile = self.records.get(models.HostAuthProfile, p['id'])
                profile.secret = 'secret-undone'
                self.records.put(profile)
                self.assertEqual('secret-undone',
                                 self.exporter.exports[IQNS[0]].chap[1])
                raise Undone()
        self.assertEqual(('u', 'secret-000001'), self.exports.chap(IQNS[0]))
        self.assertIndexHolds()

    def test_a_reopened_store_has_the_index_it_had(self):
        rnd = random.Random(7)
        for n in range(60):
            self._step(rnd, n)
        before = {iqn: _seen(e) for iqn, e in self.exporter.exports.items()}
        self.assertTrue(before)
        # As after a restart: the same database, opened again.
        self._open()
        self.assertEqual(before, {iqn: _seen(e) for iqn, e in
                                  self.exporter.exports.items()})


class CountsTest(IndexTestCase):

    def _fill(self, hosts):
        """``hosts`` hosts, each with a CHAP profile, an IQN and a mapped
        volume; in one transaction.
        """
        with self.store.transaction():
            for n in range(hosts):
                profile = self.records.new(models.HostAuthProfile(
                    name='p%d' % n, username='u%d' % n,
                    secret='secret-%06d' % n))
                host = self.records.new(models.Host(
                    name='h%d' % n, host_auth_profile=models.Ref.to(profile)))
                self.records.new(models.HostIqn(
                    iqn=IQNS[0] + '-%d' % n, host=models.Ref.to(host)))
                vol = self.records.new(models.Volume(
                    name='v%d' % n, size=GIB_KIB, scsi_sn='S%d' % n))
                self.records.new(models.Mapping(
                    volume=models.Ref.to(vol), host=models.Ref.to(host),
                    lun=1))

    def _counted(self):
        """The list each store read is added to from now on."""
        reads = []
        for name in STORE_READS:
            self.useFixture(fixtures.MonkeyPatch(
                'reference_array.core.store.Store.' + name,
                (lambda real, name: lambda *a, **k: (
                    reads.append(name), real(*a, **k))[1])(
                        getattr(store_mod.Store, name), name)))
        return reads

    def _reads_of_writes(self):
        """Store reads of K2 writes the index follows, beyond the
        writes' own.
        """
        # Those of IQN -5 (ids start at 1).
        profile = self.records.get(models.HostAuthProfile, 6)
        vol = self.records.get(models.Volume, 6)
        reads = self._counted()
        profile.secret = 'secret-changed'
        self.records.put(profile)
        vol.size *= 2
        self.records.put(vol)
        mapping = self.records.new(models.Mapping(
            volume=models.Ref.to(vol), host=models.Ref('hosts', 7), lun=2))
        self.records.delete(mapping)
        self.assertEqual('secret-changed',
                         self.exports.chap(IQNS[0] + '-5')[1])
        return list(reads)

    def test_a_write_reads_as_much_with_1000_hosts_as_with_10(self):
        # An index built whole again at each write reads every host.
        self._fill(10)
        at_10 = self._reads_of_writes()
        self.path += '-1000'
        self._open()
        self._fill(1000)
        self.assertEqual(at_10, self._reads_of_writes())

    def _reads_of_a_login(self):
        reads = self._counted()
        iqn = IQNS[0] + '-5'
        chap = self.exports.chap(iqn)
        luns = self.exports.resolve(iqn)
        self.assertEqual(('u5', 'secret-000005'), chap)
        self.assertEqual([1], list(luns))
        return reads

    def test_a_login_reads_as_much_with_1000_hosts_as_with_10(self):
        self._fill(10)
        at_10 = list(self._reads_of_a_login())
        self.path += '-1000'
        self._open()
        self._fill(1000)
        at_1000 = list(self._reads_of_a_login())
        self.assertEqual(at_10, at_1000)
        self.assertEqual([], at_1000)
