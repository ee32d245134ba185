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

"""Benchmarks, side by side in one run, printed as ratios.

``tox -e bench [-- --scale 0.25]``. Each section runs against a fresh
reference array and compares it with its anchor on this machine:

rest       K2 REST round trip of our client vs krest 1.3.7 (the in-tree
           driver's client), same calls, same array
cow        snapshot and clone creation time after 256 MiB vs 4 GiB were
           written to the source (copy-on-write: the ratio should be ~1)
ingest     MB/s per array CPU-second through iSCSI of the MongoDB
           reference architecture's documents (tempest_plugin.workload),
           and the data reduction of two copies, dedup vs nodedup
iops       fio through qemu-storage-daemon (libiscsi) and its NBD export,
           our target vs tgtd serving a file on tmpfs, the same path:
           fio's compress/dedupe mix, unique data and an aged volume
           (tools/bench_fio); IOPS, MB/s, p50/p99 and CPU-s per GB
memory     the array's resident memory with 1 TiB provisioned, 8 GiB
           written
scale      REST lookup, create, list-page and attach times and the
           array's RSS at 0 / 1,000 / 10,000 volumes, one volume group
           each (tools/bench_scale)
scale-linstor
           the same for LINSTOR resource definitions spawned as our
           driver does, with autoplace and query-size-info times
ops, growth, concurrency
           our drivers next to Cinder's in-tree drivers (tools/bench_drivers)

Results go to bench-results.json and bench-results.md. Timings are
reported, never asserted.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from urllib import parse
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

from cinder_driver.k2 import client as k2_client  # noqa: E402
from cinder_driver.k2 import rest as k2_rest  # noqa: E402
from reference_array import launch  # noqa: E402
from tools import bench_drivers  # noqa: E402
from tools import bench_fio  # noqa: E402
from tools import bench_scale  # noqa: E402
from tools.gate import processes  # noqa: E402

MIB = 1 << 20
KIB_PER_GIB = 1 << 20
INITIATOR = 'iqn.2026-11.io.cinder-flash:bench'


class Array(object):
    """A reference array process with a mapped-volume helper."""

    def __init__(self, capacity_gib=2048):
        self.dir = tempfile.mkdtemp(prefix='bench-array-')
        self.process = launch.ArrayProcess(self.dir, [
            '--iscsi-port', '0', '--capacity-gib', str(capacity_gib)])
        self.info = self.process.start()
        self.proc = self.process.proc
        url = parse.urlsplit(self.info['k2'])
        self.k2 = k2_rest.K2Rest(url.hostname, self.info['user'],
                                 self.info['password'], port=url.port,
                                 verify=self.info['ca_cert'],
                                 read_timeout=600)
        self.host = None

    def volume(self, name, size_gib, dedup=True):
        vg = self.k2.create('volume_groups', {'name': 'cvg-' + name,
                                              'quota': 0, 'is_dedup': dedup})
        vol = self.k2.create('volumes', {
            'name': 'cv-' + name, 'size': size_gib * KIB_PER_GIB,
            'volume_group': k2_client.ref('volume_groups', vg['id'])})
        return vg, vol

    def map(self, resource, obj_id):
        return iscsi_url(self.info['iscsi_portal'], self.info['iqn'],
                         self.map_lun(resource, obj_id))

    def map_lun(self, resource, obj_id):
        if self.host is None:
            self.host = self.k2.create('hosts', {'name': 'bench'})
            self.k2.create('host_iqns', {'iqn': INITIATOR, 'host':
                                         k2_client.ref('hosts',
                                                       self.host['id'])})
        return self.k2.create('mappings', {
            'volume': k2_client.ref(resource, obj_id),
            'host': k2_client.ref('hosts', self.host['id'])})['lun']

    def cpu_seconds(self):
        return processes.cpu_seconds(self.proc.pid)

    def rss_mib(self):
        with open('/proc/%d/status' % self.proc.pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
        return 0.0

    def stop(self):
        self.process.stop(timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)


def iscsi_url(portal, iqn, lun):
    return 'json:' + json.dumps({
        'file.driver': 'iscsi', 'file.transport': 'tcp',
        'file.portal': portal, 'file.target': iqn, 'file.lun': lun,
        'file.initiator-name': INITIATOR})


def run(*cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError('%s failed: %s' % (cmd[0], result.stderr[-500:]))
    return result.stdout


def random_file(path, mib):
    with open(path, 'wb') as f:
        for _n in range(mib):
            f.write(os.urandom(MIB))


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


# -- sections ---------------------------------------------------------------

def bench_rest(args, tmp):
    import krest
    import urllib3
    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    array = Array()
    try:
        url = parse.urlsplit(array.info['k2'])
        theirs = krest.EndPoint('%s:%s' % (url.hostname, url.port),
                                array.info['user'], array.info['password'],
                                ssl_validate=False)

        def p50(fn, rounds=200):
            samples = [timed(fn)[0] for _n in range(rounds)]
            return statistics.median(samples) * 1000
        ours = p50(lambda: array.k2.system_state())
        krests = p50(lambda: theirs.search('system/state').hits[0])
        return {'ours_p50_ms': ours, 'krest_p50_ms': krests,
                'ratio': krests / ours}
    finally:
        array.stop()


def bench_cow(args, tmp):
    small, large = int(256 * args.scale), int(4096 * args.scale)
    array = Array()
    out = {}
    try:
        for mib in (small, large):
            vg, vol = array.volume('cow%d' % mib, max(1, -(-mib // 1024)))
            data = os.path.join(tmp, 'cow.raw')
            random_file(data, mib)
            run('qemu-img', 'convert', '-n', '-f', 'raw', '-O', 'raw',
                data, array.map('volumes', vol['id']))
            # Medians of five: the first durable commit after a large
            # ingest may also pay for a database checkpoint.
            snaps, clones = [], []
            for n in range(5):
                snaps.append(timed(lambda: array.k2.create('snapshots', {
                    'short_name': 's%d-%d' % (mib, n),
                    'source': k2_client.ref('volume_groups', vg['id'])}))[0])
                clone_vg, _c = array.volume('clone%d-%d' % (mib, n), 1)
                clones.append(timed(lambda: array.k2.create('volumes', {
                    'name': 'cv-c%d-%d' % (mib, n), 'size': vol['size'],
                    'volume_group': k2_client.ref('volume_groups',
                                                  clone_vg['id']),
                    'source': k2_client.ref('volumes', vol['id'])}))[0])
            out['%d MiB' % mib] = {
                'snapshot_ms': statistics.median(snaps) * 1000,
                'clone_ms': statistics.median(clones) * 1000}
            os.unlink(data)
        a, b = out['%d MiB' % small], out['%d MiB' % large]
        out['snapshot_ratio'] = b['snapshot_ms'] / a['snapshot_ms']
        out['clone_ratio'] = b['clone_ms'] / a['clone_ms']
        return out
    finally:
        array.stop()


def bench_ingest(args, tmp):
    from tempest_plugin.workload import dataset
    mib = int(512 * args.scale)
    data = os.path.join(tmp, 'docs.raw')
    # The MongoDB reference architecture's documents (~16.5 KB of JSON).
    dataset.write_file(data, mib * MIB)
    out = {}
    for dedup in (True, False):
        array = Array()
        try:
            _vg, vol = array.volume('ingest', max(1, -(-mib // 1024)),
                                    dedup=dedup)
            target = array.map('volumes', vol['id'])
            cpu0 = array.cpu_seconds()
            wall, _r = timed(lambda: run('qemu-img', 'convert', '-n', '-f',
                                         'raw', '-O', 'raw', data, target))
            # A second copy, as a replica would write it.
            _vg2, vol2 = array.volume('ingest2', max(1, -(-mib // 1024)),
                                      dedup=dedup)
            run('qemu-img', 'convert', '-n', '-f', 'raw', '-O', 'raw', data,
                array.map('volumes', vol2['id']))
            cpu = array.cpu_seconds() - cpu0
            cap = array.k2.find('system/capacity')
            out['dedup' if dedup else 'nodedup'] = {
                'MB_per_s_wall': mib / wall,
                'MB_per_cpu_s': 2 * mib / cpu if cpu else 0,
                'reduction': cap['logical'] / max(cap['physical'], 1)}
        finally:
            array.stop()
    os.unlink(data)
    return out


def bench_iops(args, tmp):
    """fio mixes, unique data and an aged volume (tools/bench_fio).

    The array next to tgtd on tmpfs through the same initiator path.
    """
    size = int(args.fio_gib * args.scale * (1 << 30)) // MIB * MIB
    size_gib = -(-size // (1 << 30))
    only = args.fio_steps.split(',') if args.fio_steps else None
    out = {'size_bytes': size, 'runtime_s': args.fio_runtime,
           'load_before': bench_fio.load()}
    array = Array()
    try:
        export = _volume_export(array, 'iops', size_gib, tmp)
        try:
            print(' array', flush=True)
            out['ours'] = bench_fio.run(export.uri, array.proc.pid, size,
                                        args.fio_runtime, only)
            if args.fio_aged_pairs and 'read4k_aged' in out['ours']:
                out['aged_pairs'] = _aged_pairs(args, tmp, array, export,
                                                size, size_gib)
        finally:
            export.stop()
        out['ours_rss_MiB'] = array.rss_mib()
    finally:
        array.stop()
    tgt = _tgtd(tmp, size)
    try:
        export = bench_fio.NBDExport('127.0.0.1:%d' % tgt['port'],
                                     tgt['iqn'], 1, INITIATOR, tmp).start()
        try:
            print(' tgtd on tmpfs', flush=True)
            out['tgtd_tmpfs'] = bench_fio.run(export.uri, tgt['proc'].pid,
                                              size, args.fio_runtime, only)
        finally:
            export.stop()
    finally:
        _tgtd_stop(tgt)
    out['ratios'] = bench_fio.ratios(out['ours'], out['tgtd_tmpfs'])
    out['load_after'] = bench_fio.load()
    return out


def _volume_export(array, name, size_gib, tmp):
    """A new volume of the array, mapped and exported over NBD."""
    _vg, vol = array.volume(name, size_gib)
    lun = array.map_lun('volumes', vol['id'])
    return bench_fio.NBDExport(array.info['iscsi_portal'], array.info['iqn'],
                               lun, INITIATOR, tmp).start()


def _aged_pairs(args, tmp, array, aged, size, size_gib):
    """The aged volume's reads next to a fresh volume's, alternating."""
    fresh = _volume_export(array, 'iops-fresh', size_gib, tmp)
    try:
        print(' array, aged and fresh volumes alternating', flush=True)
        return bench_fio.aged_pairs(aged.uri, fresh.uri, array.proc.pid,
                                    size, args.fio_runtime,
                                    args.fio_aged_pairs)
    finally:
        fresh.stop()


def _tgtd_admin(tgt, *args):
    return run('tgtadm', '-C', str(tgt['control']), '--lld', 'iscsi',
               *args)


def _tgtd(tmp, size):
    mnt = os.path.join(tmp, 'tmpfs')
    os.makedirs(mnt)
    run('mount', '-t', 'tmpfs', '-o', 'size=%d' % (size + 64 * MIB),
        'tmpfs', mnt)
    backing = os.path.join(mnt, 'lun')
    # Sparse: only what the benchmark writes takes memory.
    run('truncate', '-s', str(size), backing)
    port = bench_fio.free_port()
    # A control port of its own: another tgtd may run on this machine.
    control = 1000 + port % 20000
    proc = subprocess.Popen(['tgtd', '-f', '-C', str(control), '--iscsi',
                             'portal=127.0.0.1:%d' % port],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    tgt = {'proc': proc, 'port': port, 'mnt': mnt, 'control': control,
           'iqn': 'iqn.2026-11.io.cinder-flash:tgtd-baseline'}
    for _n in range(50):
        if subprocess.run(['tgtadm', '-C', str(control), '--lld', 'iscsi',
                           '--mode', 'target', '--op', 'show'],
                          capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    _tgtd_admin(tgt, '--mode', 'target', '--op', 'new', '--tid', '1',
                '--targetname', tgt['iqn'])
    _tgtd_admin(tgt, '--mode', 'logicalunit', '--op', 'new', '--tid', '1',
                '--lun', '1', '--backing-store', backing)
    _tgtd_admin(tgt, '--mode', 'target', '--op', 'bind', '--tid', '1',
                '--initiator-address', 'ALL')
    return tgt


def _tgtd_stop(tgt):
    for args in (('--mode', 'target', '--op', 'delete', '--force', '--tid',
                  '1'), ('--mode', 'system', '--op', 'delete')):
        subprocess.run(['tgtadm', '-C', str(tgt['control']), '--lld',
                        'iscsi'] + list(args), capture_output=True)
    try:
        tgt['proc'].wait(timeout=10)
    except subprocess.TimeoutExpired:
        tgt['proc'].kill()
        tgt['proc'].wait()
    subprocess.run(['umount', tgt['mnt']], capture_output=True)


def _scale(run, args):
    """``run``'s points on an array, beside a second array kept empty, on
    which each call is timed in turn with the filled one: the time at 0
    of the same moment.
    """
    points = [int(n) for n in args.scale_points.split(',')]
    array = Array()
    try:
        empty = Array()
        try:
            return {'points': run(array, points, args.fill_budget,
                                  empty=empty),
                    'load': bench_fio.load()}
        finally:
            empty.stop()
    finally:
        array.stop()


def bench_scale_section(args, tmp):
    return _scale(bench_scale.run, args)


def bench_scale_linstor(args, tmp):
    return _scale(bench_scale.run_linstor, args)


def bench_memory(args, tmp):
    written = int(8192 * args.scale)
    array = Array(capacity_gib=4096)
    try:
        _vg, vol = array.volume('big', 1024)
        url = array.map('volumes', vol['id'])
        # Spread the written data over the whole 1 TiB.
        stride = 1024 * 1024 * MIB // max(1, written // 256)
        for n in range(max(1, written // 256)):
            run('qemu-io', '-f', 'raw', '-c', 'write -P %d %d 256M' % (
                n % 251, n * stride), url)
        return {'provisioned_GiB': 1024, 'written_MiB': written,
                'rss_MiB': array.rss_mib()}
    finally:
        array.stop()


def bench_copy(args, tmp):
    """Array-side clone vs the driver's host-copy fallback, same data."""
    mib = int(256 * args.scale)
    array = Array()
    try:
        vg, vol = array.volume('copysrc', 1)
        data = os.path.join(tmp, 'copy.raw')
        random_file(data, mib)
        run('qemu-img', 'convert', '-n', '-f', 'raw', '-O', 'raw', data,
            array.map('volumes', vol['id']))
        os.unlink(data)
        clone_vg, _c = array.volume('copyarray', 1)
        array_s, _r = timed(lambda: array.k2.create('volumes', {
            'name': 'cv-copy-array', 'size': vol['size'],
            'volume_group': k2_client.ref('volume_groups', clone_vg['id']),
            'source': k2_client.ref('volumes', vol['id'])}))

        def host_copy():
            # What the driver does without volume_source: snapshot, map
            # the image and an empty volume, copy with qemu-img.
            _vg, target = array.volume('copyhost', 1)
            snap = array.k2.create('snapshots', {
                'short_name': 'cc-bench',
                'source': k2_client.ref('volume_groups', vg['id'])})
            volsnap = array.k2.find('volsnaps', **{
                'snapshot.ref': '/snapshots/%d' % snap['id']})
            run('qemu-img', 'convert', '-n', '--target-is-zero', '-f', 'raw',
                '-O', 'raw', array.map('volsnaps', volsnap['id']),
                array.map('volumes', target['id']))
        host_s, _r = timed(host_copy)
        return {'written_MiB': mib, 'array_clone_ms': array_s * 1000,
                'host_copy_ms': host_s * 1000,
                'ratio': host_s / array_s}
    finally:
        array.stop()


SECTIONS = {'rest': bench_rest, 'cow': bench_cow, 'copy': bench_copy,
            'ingest': bench_ingest, 'iops': bench_iops,
            'memory': bench_memory, 'scale': bench_scale_section,
            'scale-linstor': bench_scale_linstor}
for _name in bench_drivers.SECTIONS:
    SECTIONS[_name] = (lambda name: lambda args, tmp: bench_drivers.
                       run_section(name, args, tmp))(_name)


def markdown(results):
    lines = ['| benchmark | ours | anchor | ratio |', '|---|---|---|---|']
    # ratio: anchor/ours for times, ours/anchor for rates.
    r = results.get('rest')
    if r:
        lines.append('| K2 REST round trip p50 (ms) | %.2f | %.2f (krest '
                     '1.3.7) | %.2f |' % (
                         r['ours_p50_ms'], r['krest_p50_ms'], r['ratio']))
    c = results.get('cow')
    if c:
        keys = [k for k in c if k.endswith('MiB')]
        lines.append('| snapshot creation (ms), %s vs %s written | %.1f | '
                     '%.1f | %.2f |' % (keys[1], keys[0],
                                        c[keys[1]]['snapshot_ms'],
                                        c[keys[0]]['snapshot_ms'],
                                        c['snapshot_ratio']))
        lines.append('| clone creation (ms), %s vs %s written | %.1f | '
                     '%.1f | %.2f |' % (keys[1], keys[0],
                                        c[keys[1]]['clone_ms'],
                                        c[keys[0]]['clone_ms'],
                                        c['clone_ratio']))
    k = results.get('copy')
    if k:
        lines.append('| clone of %d MiB written (ms): array-side vs host '
                     'copy fallback | %.0f | %.0f | %.1fx slower |' % (
                         k['written_MiB'], k['array_clone_ms'],
                         k['host_copy_ms'], k['ratio']))
    i = results.get('ingest')
    if i:
        for kind in ('dedup', 'nodedup'):
            lines.append('| ingest %s: MB/s per array CPU-s / reduction | '
                         '%.0f / %.2f:1 | | |' % (
                             kind, i[kind]['MB_per_cpu_s'],
                             i[kind]['reduction']))
    o = results.get('iops')
    if o:
        lines.append(bench_fio.markdown(o))
    sc = results.get('scale')
    if sc:
        lines.append(bench_scale.markdown(sc['points']))
    sl = results.get('scale-linstor')
    if sl:
        lines.append(bench_scale.linstor_markdown(sl['points']))
    m = results.get('memory')
    if m:
        lines.append('| array RSS, %d GiB provisioned, %d MiB written | '
                     '%.0f MiB | 512 MiB target | |' % (
                         m['provisioned_GiB'], m['written_MiB'],
                         m['rss_MiB']))
    return '\n'.join(lines) + bench_drivers.markdown(results)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('sections', nargs='*', default=list(SECTIONS))
    parser.add_argument('--scale', type=float, default=1.0,
                        help='shrink the data sizes (0.25: a quarter)')
    parser.add_argument('--fio-gib', type=float, default=2.0,
                        help='volume size of the fio runs (GiB)')
    parser.add_argument('--fio-runtime', type=int, default=20,
                        help='seconds of each timed fio step')
    parser.add_argument('--fio-steps', default='',
                        help='comma-separated fio steps (default: all)')
    parser.add_argument('--fio-aged-pairs', type=int, default=3,
                        help='alternating fresh and aged random reads on '
                        'the array after the fio steps (0: none)')
    parser.add_argument('--scale-points', default='0,1000,10000',
                        help='volume counts of the scale section')
    parser.add_argument('--fill-budget', type=float, default=1800,
                        help='seconds to fill up to each scale point')
    parser.add_argument('--output', default=os.path.join(
        ROOT, 'bench-results'))
    args = parser.parse_args()
    results = {'machine': {'host': os.uname().nodename,
                           'cpus': os.cpu_count(),
                           'kernel': os.uname().release},
               'data_scale': args.scale}
    with tempfile.TemporaryDirectory(prefix='bench-') as tmp:
        for name in args.sections:
            print('== %s' % name, flush=True)
            started = time.monotonic()
            results[name] = SECTIONS[name](args, tmp)
            print(json.dumps(results[name], indent=1), flush=True)
            print('(%.0f s)' % (time.monotonic() - started), flush=True)
    table = markdown(results)
    print('\n' + table)
    with open(args.output + '.json', 'w') as f:
        json.dump(results, f, indent=2)
    with open(args.output + '.md', 'w') as f:
        f.write(table + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
