"""``tox -e mongo-local``: the MongoDB workload without a cloud.

For each volume type compared (a dedup and a nodedup K2 volume group) and
each topology, a fresh reference array; each MongoDB server is FerretDB
(a MongoDB wire-protocol server) whose data directory is an XFS
filesystem on a reference-array volume:

    K2 volume -> iSCSI LUN -> qemu-storage-daemon FUSE export -> loop
    device -> xfs -> FerretDB (SQLite) data directory

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

FERRETDB_VERSION = 'v1.24.0'
CACHE = os.path.expanduser('~/.cache/cinder-flash')
FERRETDB = os.path.join(CACHE, 'ferretdb-%s' % FERRETDB_VERSION)
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


def ensure_ferretdb():
    """Build FerretDB from its pinned Go module once, into the cache.

    The Go proxy serves a pinned module version but not ``go install
    ...@version``; the module zip lacks the version file the binary reads,
    so it is written before the build.
    """
    if os.path.exists(FERRETDB):
        return FERRETDB
    if shutil.which('go') is None:
        raise SystemExit('FerretDB is built from its Go module: install '
                         'Go (https://go.dev/dl) or put a FerretDB %s '
                         'binary at %s' % (FERRETDB_VERSION, FERRETDB))
    os.makedirs(CACHE, exist_ok=True)
    work = tempfile.mkdtemp(prefix='ferretdb-build-')
    env = dict(os.environ, GOFLAGS='-mod=mod')
    log('building FerretDB %s (a few minutes, once)' % FERRETDB_VERSION)
    try:
        run('go', 'mod', 'init', 'fb', cwd=work, env=env)
        run('go', 'get', 'github.com/FerretDB/FerretDB@%s' %
            FERRETDB_VERSION, cwd=work, env=env)
        source = run('go', 'list', '-m', '-f', '{{.Dir}}',
                     'github.com/FerretDB/FerretDB', cwd=work,
                     env=env).strip()
        src = os.path.join(work, 'src')
        shutil.copytree(source, src)
        run('chmod', '-R', 'u+w', src)
        with open(os.path.join(src, 'build', 'version', 'version.txt'),
                  'w') as f:
            f.write(FERRETDB_VERSION + '\n')
        run('go', 'build', '-o', FERRETDB, './cmd/ferretdb', cwd=src,
            env=env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return FERRETDB


class Server(object):
    """One FerretDB on an XFS filesystem on a reference-array volume."""

    def __init__(self, array, name, size_gib, dedup, port, work):
        self.array, self.name, self.port = array, name, port
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        self.procs, self.loop, self.mounted = [], None, None
        vg = array.k2.create('volume_groups', {
            'name': 'cvg-' + name, 'quota': 0, 'is_dedup': dedup})
        self.volume = array.k2.create('volumes', {
            'name': 'cv-' + name, 'size': size_gib * KIB_PER_GIB,
            'volume_group': k2_client.ref('volume_groups', vg['id'])})
        lun = array.map(self.volume['id'])
        export = os.path.join(self.dir, 'lun.img')
        open(export, 'w').close()
        host, port_ = array.info['iscsi_portal'].rsplit(':', 1)
        self._spawn([
            'qemu-storage-daemon', '--blockdev', json.dumps({
                'driver': 'iscsi', 'node-name': 'lun', 'transport': 'tcp',
                'portal': '%s:%s' % (host, port_),
                'target': array.info['iqn'], 'lun': lun,
                'initiator-name': INITIATOR}),
            '--export', 'type=fuse,id=exp,node-name=lun,mountpoint=%s,'
            'writable=on' % export])
        self._wait(lambda: os.path.getsize(export) > 0, 'the FUSE export')
        self.export = export
        self.loop = run('losetup', '--find', '--show', export).strip()
        run('mkfs.xfs', '-q', '-f', self.loop)
        self.mounted = os.path.join(self.dir, 'data')
        os.makedirs(self.mounted)
        run('mount', self.loop, self.mounted)
        self._spawn([
            ensure_ferretdb(), '--handler=sqlite',
            '--sqlite-url=file:%s/' % self.mounted,
            '--state-dir=%s' % self.dir,
            '--listen-addr=127.0.0.1:%d' % port,
            '--debug-addr=-', '--telemetry=disable', '--log-level=warn'])
        self._wait(self._answers, 'FerretDB on port %d' % port)

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
        for proc in reversed(self.procs[1:]):
            proc.terminate()
            proc.wait(timeout=30)
        if self.mounted:
            subprocess.run(['umount', self.mounted], capture_output=True)
        if self.loop:
            subprocess.run(['losetup', '-d', self.loop], capture_output=True)
        if self.procs:
            self.procs[0].terminate()
            self.procs[0].wait(timeout=30)


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
    ensure_ferretdb()
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
