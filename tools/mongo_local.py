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

"""``tox -e mongo-local``: the MongoDB workload without a cloud.

For each volume type compared (a dedup and a nodedup K2 volume group) and
each topology, a fresh reference array; each MongoDB server is FerretDB
(a MongoDB wire-protocol server) whose data directory is an XFS
filesystem on a reference-array volume:

    K2 volume -> iSCSI LUN -> qemu-storage-daemon FUSE export -> buffered
    loop device (tools/iscsi_loop.py) -> xfs -> FerretDB (SQLite) data
    directory

FerretDB has neither replica sets nor sharding, so the topologies are
local approximations: a replica set is three independent servers each
loaded with the whole set; a sharded cluster is two servers splitting the
collections. The results table is the one the cloud scenarios print, with
IOPS, throughput, latency and data reduction from the array's own
counters. Needs root (loop devices, FUSE mounts); starts and stops every
process it uses.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from urllib import parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from cinder_driver.k2 import client as k2_client  # noqa: E402
from cinder_driver.k2 import rest as k2_rest  # noqa: E402
from reference_array import launch  # noqa: E402
from tempest_plugin.workload import dataset  # noqa: E402
from tempest_plugin.workload import driver  # noqa: E402
from tempest_plugin.workload import report  # noqa: E402
from tempest_plugin.workload import topology  # noqa: E402
from tools import ferretdb  # noqa: E402
from tools import iscsi_loop  # noqa: E402

INITIATOR = 'iqn.2026-11.io.cinder-flash:mongo-local'
APT = {'qemu-storage-daemon': 'qemu-system-common',
       'mkfs.xfs': 'xfsprogs', 'fusermount3': 'fuse3',
       'losetup': 'mount'}
KIB_PER_GIB = 1 << 20
BASE_PORT = 27117


def log(text):
    print('[mongo-local] %s' % text, flush=True)


def run(*cmd, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        raise RuntimeError('%s failed: %s' % (' '.join(cmd[:3]),
                                              result.stderr[-800:]))
    return result.stdout


def ensure_tools():
    missing = sorted({pkg for tool, pkg in APT.items()
                      if shutil.which(tool) is None})
    if missing:
        log('installing %s' % ', '.join(missing))
        run('apt-get', 'install', '-y', '--no-install-recommends',
            *missing, env=dict(os.environ,
                               DEBIAN_FRONTEND='noninteractive'))


class Server(object):
    """One FerretDB on an XFS filesystem on a reference-array volume."""

    def __init__(self, array, name, size_gib, dedup, port, work):
        self.array, self.name, self.port = array, name, port
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        self.procs, self.attachment, self.mounted = [], None, None
        vg = array.k2.create('volume_groups', {
            'name': 'cvg-' + name, 'quota': 0, 'is_dedup': dedup})
        self.volume = array.k2.create('volumes', {
            'name': 'cv-' + name, 'size': size_gib * KIB_PER_GIB,
            'volume_group': k2_client.ref('volume_groups', vg['id'])})
        lun = array.map(self.volume['id'])
        self.attachment = iscsi_loop.Attachment(
            os.path.join(self.dir, 'attachments'), iscsi_loop.Target(
                array.info['iscsi_portal'], array.info['iqn'], lun,
                INITIATOR))
        try:
            loop = self.attachment.attach()
            run('mkfs.xfs', '-q', '-f', loop)
            data = os.path.join(self.dir, 'data')
            os.makedirs(data)
            run('mount', loop, data)
            self.mounted = data
            self._spawn([
                ferretdb.ensure(log), '--handler=sqlite',
                '--sqlite-url=file:%s/' % data,
                '--state-dir=%s' % self.dir,
                '--listen-addr=127.0.0.1:%d' % port,
                '--debug-addr=-', '--telemetry=disable', '--log-level=warn'])
            self._wait(self._answers, 'FerretDB on port %d' % port)
        except BaseException:
            # Nothing stays attached, mounted or running.
            self.stop()
            raise

    def _spawn(self, cmd):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(
                                    self.dir, 'proc-%d.log' %
                                    len(self.procs)), 'w'))
        self.procs.append(proc)

    def _wait(self, ready, what, timeout=60):
        deadline = time.monotonic() + timeout
        while not ready():
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError('%s exited while starting %s' % (
                        proc.args[0], what))
            if time.monotonic() > deadline:
                raise RuntimeError('%s not ready in %ss' % (what, timeout))
            time.sleep(0.2)

    def _answers(self):
        import socket
        try:
            with socket.create_connection(('127.0.0.1', self.port), 1):
                return True
        except OSError:
            return False

    @property
    def uri(self):
        return 'mongodb://127.0.0.1:%d/' % self.port

    def stop(self):
        for proc in reversed(self.procs):
            proc.terminate()
            proc.wait(timeout=30)
        if self.mounted:
            subprocess.run(['umount', self.mounted], capture_output=True)
        if self.attachment:
            self.attachment.detach(force=True)


class Array(object):

    def __init__(self, work):
        self.dir = tempfile.mkdtemp(prefix='array-', dir=work)
        self.process = launch.ArrayProcess(self.dir, [
            '--iscsi-port', '0', '--capacity-gib', '64'])
        self.info = self.process.start()
        url = parse.urlsplit(self.info['k2'])
        self.k2 = k2_rest.K2Rest(url.hostname, self.info['user'],
                                 self.info['password'], port=url.port,
                                 verify=self.info['ca_cert'])
        host = self.k2.create('hosts', {'name': 'mongo-local'})
        self.host = k2_client.ref('hosts', host['id'])
        self.k2.create('host_iqns', {'iqn': INITIATOR, 'host': self.host})

    def map(self, volume_id):
        return self.k2.create('mappings', {
            'volume': k2_client.ref('volumes', volume_id),
            'host': self.host})['lun']

    def counters(self):
        stats = self.k2.find('stats/system') or {}
        cap = self.k2.find('system/capacity') or {}
        return stats, cap

    def stop(self):
        self.process.stop(timeout=60)


def measure(topo, dedup, spec, args, work):
    """One topology on one volume type: a results row."""
    import pymongo
    work = tempfile.mkdtemp(prefix='%s-%s-' % (topo, dedup), dir=work)
    array = Array(work)
    servers = []
    try:
        layout = topology.local_layout(topo, spec.collection_names())
        for index, _colls in layout:
            servers.append(Server(array, '%s-%d' % (topo, index),
                                  args.volume_gib, dedup,
                                  BASE_PORT + index, work))
        clients = []

        def db_for(server):
            client = pymongo.MongoClient(server.uri)
            clients.append(client)
            return client['bench']
        for (index, colls), server in zip(layout, servers):
            sub = dataset.Spec(scale=1.0, collections=spec.collections,
                               documents=spec.documents,
                               document_bytes=spec.document_bytes)
            keep = set(colls)
            names = sub.collection_names()
            log('%s: loading %d collections into %s' % (
                topo, len(colls), server.name))
            _load_some(db_for(server), sub, [names.index(c) for c in names
                                             if c in keep])
        # Reading stats/system starts the array's measuring window: the
        # next read averages over the benchmark.
        array.counters()
        started = time.monotonic()
        results = []
        names = spec.collection_names()
        for (index, colls), server in zip(layout, servers):
            results.append(driver.benchmark(
                lambda server=server: db_for(server), spec,
                processes=args.processes, threads=args.threads,
                iterations=args.iterations,
                ops_per_thread=args.ops_per_thread,
                collections=[names.index(c) for c in colls]))
        seconds = time.monotonic() - started
        stats, cap = array.counters()
        for client in clients:
            client.close()
        row = {'topology': topo + ' (local)',
               'volume type': 'dedup' if dedup else 'nodedup',
               'updated docs/s': sum(r.updated for r in results) / seconds,
               'ops/s': sum(r.operations for r in results) / seconds,
               'IOPS': stats.get('iops_avg'),
               'MB/s': stats.get('throughput_avg', 0) / 1e6,
               'latency ms': stats.get('latency_avg', 0) / 1000.0,
               'data reduction': round(cap['logical'] / cap['physical'], 2)
               if cap.get('physical') else 0.0}
        errors = sum(r.errors for r in results)
        if errors:
            raise RuntimeError('%s: %d benchmark operations failed' % (
                topo, errors))
        return row
    finally:
        for server in servers:
            server.stop()
        array.stop()


def _load_some(db, spec, indexes):
    for index in indexes:
        coll = db[spec.collection_names()[index]]
        coll.create_index('mNumber', unique=True)
        for docs in dataset.batches(spec, index, 200):
            coll.insert_many(docs, ordered=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--scale', type=float, default=0.002,
                        help='share of the 15,000 documents per collection '
                             '(default 0.002: 30)')
    parser.add_argument('--collections', type=int, default=50)
    parser.add_argument('--topologies', nargs='*',
                        default=list(topology.TOPOLOGIES))
    parser.add_argument('--processes', type=int, default=2)
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--iterations', type=int, default=2)
    parser.add_argument('--ops-per-thread', type=int, default=20)
    parser.add_argument('--volume-gib', type=int, default=4)
    parser.add_argument('--output', default=os.path.join(ROOT,
                                                         'mongo-local'))
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit('mongo-local needs root (loop devices, FUSE)')
    ensure_tools()
    ferretdb.ensure(log)
    spec = dataset.Spec(scale=args.scale, collections=args.collections)
    log('data set: %d collections x %d documents of %d bytes (~%d MB) per '
        'copy' % (spec.collections, spec.documents, spec.document_bytes,
                  spec.approx_bytes // 10 ** 6))
    tables, rows_out = [], []
    with tempfile.TemporaryDirectory(prefix='mongo-local-') as work:
        for topo in args.topologies:
            rows = []
            for dedup in (True, False):
                row = measure(topo, dedup, spec, args, work)
                report.check(row, dedup)
                rows.append(row)
            rows_out += rows
            tables.append(report.table(rows, title='%s (local '
                                       'approximation: %s)' % (
                                           topo, _approximation(topo))))
            print('\n' + tables[-1] + '\n', flush=True)
    with open(args.output + '.json', 'w') as f:
        json.dump(rows_out, f, indent=2)
    with open(args.output + '.md', 'w') as f:
        f.write('\n\n'.join(tables) + '\n')
    return 0


def _approximation(topo):
    return {topology.STANDALONE: 'one FerretDB server',
            topology.REPLICA_SET: 'three independent servers, each with '
                                  'the whole set',
            topology.SHARDED: 'two servers splitting the collections'}[topo]


if __name__ == '__main__':
    sys.exit(main())
