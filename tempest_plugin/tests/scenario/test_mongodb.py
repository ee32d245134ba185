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

"""MongoDB on instances booted from cinder-flash volumes.

The reference architecture's measurement: for each topology (standalone,
3-member replica set, sharded cluster) and each volume type compared,
boot the members from volumes of that type, start MongoDB, load the data
set, run the update benchmark, and read IOPS, latency and data reduction
from Cinder's pool stats (no array credentials). One test and one table
per topology; the commands that form each topology come from
``workload.topology.formation``.

Needs Nova, Glance and Neutron and an image with MongoDB
(``[cinder_flash_mongodb] image_ref``); otherwise skipped with the reason.
With ``server = ferretdb`` (an image with FerretDB standing in for
mongod) the replica-set and sharded tests are skipped: FerretDB has
neither.
"""

import base64
import io
import json
import os
import shlex
import tarfile
import threading
import time

from tempest.common import waiters
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators
from testtools import content as testtools_content

from tempest_plugin import config as config_groups
from tempest_plugin.tests.scenario import base
from tempest_plugin.workload import dataset
from tempest_plugin.workload import report
from tempest_plugin.workload import topology

CONF = config.CONF
MONGO = config_groups.Lazy('cinder_flash_mongodb')
DATABASE = 'bench'


def _library():
    """The workload package as a base64 tarball, to copy to a member."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w:gz') as tar:
        tar.add(os.path.join(here, '__init__.py'),
                'tempest_plugin/__init__.py')
        tar.add(os.path.join(here, 'workload'), 'tempest_plugin/workload',
                filter=lambda t: None if '__pycache__' in t.name else t)
    return base64.b64encode(buf.getvalue()).decode()


class MongoDBScenarioTest(base.VolumeBootScenarioTest):

    credentials = ['primary', 'admin']

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.cinder_flash_feature_enabled.mongodb_scenarios:
            raise cls.skipException('MongoDB scenarios are disabled '
                                    '([cinder_flash_feature_enabled] '
                                    'mongodb_scenarios)')
        if not MONGO.image_ref:
            raise cls.skipException('[cinder_flash_mongodb] image_ref is '
                                    'not set')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.stats = cls.os_admin.volume_scheduler_stats_client_latest

    def _backend(self, volume_type):
        """The backend of a volume type named in tempest.conf."""
        types = self.os_admin.volume_types_client_latest
        # Cinder shows a type by ID only; the configuration names it.
        for vtype in types.list_volume_types()['volume_types']:
            if volume_type in (vtype['name'], vtype['id']):
                specs = types.show_volume_type(vtype['id'])['volume_type'][
                    'extra_specs']
                return specs.get('volume_backend_name')
        self.fail('no volume type %s' % volume_type)

    def _pool(self, volume_type):
        pools = self.stats.list_pools(detail=True)['pools']
        backend = self._backend(volume_type)
        for pool in pools:
            if pool['capabilities'].get('volume_backend_name') == backend:
                return pool['capabilities']
        self.fail('no pool for volume type %s' % volume_type)

    def _fresh_pool(self, volume_type, before):
        """The pool's stats once Cinder has a report newer than ``before``.
        """
        deadline = time.monotonic() + CONF.volume.build_timeout
        while True:
            caps = self._pool(volume_type)
            if report.is_new(caps, before):
                return caps
            if time.monotonic() > deadline:
                self.fail('no fresh pool stats for %s within %ss' % (
                    volume_type, CONF.volume.build_timeout))
            time.sleep(CONF.volume.build_interval)

    def _watched(self, volume_type, run):
        """Run ``run()`` (the benchmark) while reading the pool's stats.

        Returns its result and the pool's figures averaged over the
        window: every report Cinder received while it ran, and the first
        one after, which covers its end.
        """
        before = self._pool(volume_type)
        done, result = threading.Event(), {}

        def target():
            try:
                result['out'] = run()
            except Exception as e:
                result['error'] = e
            finally:
                done.set()
        worker = threading.Thread(target=target, daemon=True)
        worker.start()
        reports = []
        while not done.wait(CONF.volume.build_interval):
            reports.append(self._pool(volume_type))
        worker.join()
        if 'error' in result:
            raise result['error']
        last = self._fresh_pool(volume_type, (reports or [before])[-1])
        return result['out'], report.window_average(reports + [last],
                                                    before), last

    def _member(self, volume_type, role, keypair, security_group):
        volume = self.create_volume(
            size=MONGO.volume_size, imageRef=MONGO.image_ref,
            volume_type=volume_type, name=data_utils.rand_name(role))
        _server, ip, ssh = self.boot_from_volume(
            volume, keypair, security_group, username=MONGO.ssh_user,
            flavor=MONGO.flavor_ref or CONF.compute.flavor_ref)
        if MONGO.install_method == 'package':
            ssh.exec_command('sudo apt-get install -y mongodb-org || '
                             'sudo dnf install -y mongodb-org')
        # Either way the server must now be there.
        ssh.exec_command('command -v mongod')
        return {'role': role, 'ip': ip, 'ssh': ssh, 'volume': volume}

    def _remote(self, entry, topo, args):
        """Run the workload library on the entry member; its JSON line.

        It runs in a temporary directory holding this library (removed
        afterwards) and prints one JSON line of results.
        """
        out = entry['ssh'].exec_command(
            'd=$(mktemp -d) && trap \'rm -rf "$d"\' EXIT && '
            'echo %s | base64 -d | tar xz -C "$d" && '
            '(python3 -c "import pymongo" || sudo pip3 install pymongo) && '
            'cd "$d" && python3 -m tempest_plugin.workload.remote '
            '--uri %s --database %s --scale %s %s' % (
                _library(), shlex.quote(topology.client_uri(topo)), DATABASE,
                MONGO.dataset_scale, args))
        return json.loads(out.strip().splitlines()[-1])

    def _run(self, topo, volume_type):
        keypair = self.create_keypair()
        group = self.create_security_group()
        members = [self._member(volume_type, role, keypair, group)
                   for role in topology.members(topo)]
        by_role = {m['role']: m for m in members}
        spec = dataset.Spec(scale=MONGO.dataset_scale)
        for role, command in topology.formation(
                topo, {m['role']: m['ip'] for m in members}, DATABASE,
                spec.collection_names()):
            by_role[role]['ssh'].exec_command(command)
        entry = by_role[topology.entry(topo)]
        self._remote(entry, topo, '--load-only')
        measured, window, after = self._watched(
            volume_type, lambda: self._remote(
                entry, topo, '--skip-load --processes %d --threads %d '
                '--iterations %d --ops-per-thread %d' % (
                    MONGO.processes, MONGO.threads, MONGO.iterations,
                    MONGO.ops_per_thread)))
        row = {'topology': topo, 'volume type': volume_type,
               'updated docs/s': measured['updated_per_s'],
               'ops/s': measured['operations_per_s'],
               'IOPS': window['IOPS'], 'MB/s': window['MB/s'],
               'latency ms': window['latency ms'],
               'data reduction': after.get('data_reduction_ratio')}
        for member in members:
            waiters.wait_for_volume_resource_status(
                self.volumes_client, member['volume']['id'], 'in-use')
        return row

    def _measure(self, topo):
        reason = topology.unavailable(topo, MONGO.server, MONGO.topologies)
        if reason:
            raise self.skipException(reason)
        rows = []
        for volume_type in CONF.cinder_flash.compare_volume_types:
            row = self._run(topo, volume_type)
            report.check(row, dedup=volume_type ==
                         CONF.cinder_flash.dedup_volume_type)
            rows.append(row)
        title = topo
        if MONGO.run_label:
            title = '%s (%s)' % (topo, MONGO.run_label)
        table = report.table(rows, title=title)
        print(table)
        self.addDetail(report.DETAIL_NAME,
                       testtools_content.text_content(table))

    @decorators.idempotent_id('7d4f2a31-0c7e-4d4e-9b5e-3e8f6a2c9d01')
    def test_standalone(self):
        self._measure(topology.STANDALONE)

    @decorators.idempotent_id('2f0c9a8e-51d4-4b2e-8f1a-6c3d7e9b0a12')
    def test_replica_set(self):
        self._measure(topology.REPLICA_SET)

    @decorators.idempotent_id('c4e1b7d2-9a3f-4e6c-b5d8-0f2a7c1e3b45')
    def test_sharded(self):
        self._measure(topology.SHARDED)
