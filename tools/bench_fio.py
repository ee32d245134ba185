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

"""fio through a real initiator, the array next to tgtd in one run.

Path, the same for both targets: fio (Debian's, ``ioengine=nbd``) ->
``qemu-storage-daemon`` (its libiscsi block driver, exported over NBD on
127.0.0.1) -> the iSCSI LUN. The anchor is tgtd serving a file on tmpfs,
the fastest target this machine has.

Data (fio's buffer generator, never a repeated byte):

mixed    ``buffer_compress_percentage=50``, ``dedupe_percentage=20``,
         buffers refilled for every I/O
unique   buffers refilled for every I/O, incompressible, no duplicates

Steps, in this order on each target, on one volume of ``size`` bytes:

fill         1 MiB sequential writes of mixed data over the whole volume
read4k       4k random reads, fresh volume
write4k      4k random writes, mixed data, ending with a flush
write4k_u    4k random writes, unique data, ending with a flush
write1m_u    1 MiB sequential writes, unique data, ending with a flush
age1..3      three passes of 4k random writes of mixed data, each over
             every block of the volume once (fio's random map)
read4k_aged  4k random reads after the three passes

Then, on the array only (``--fio-aged-pairs``), aged against fresh read
side by side: a second volume of the same size gets the same ``fill``,
and 4k random reads alternate between it (fresh) and the aged volume,
a pair at a time, so that both halves of a pair meet the same load and
the same background work of the array. Each pair's ratio is reported,
and their median.

Every step runs at queue depth 32. Reported per step: IOPS, MB/s, p50
and p99 completion latency, and the target's CPU-seconds per GB moved
(the array's or tgtd's process, not fio's or the daemon's).
"""

import json
import os
import socket
import statistics
import subprocess
import time

from tools.gate import processes

# The target's CPU seconds, read from /proc.
cpu_seconds = processes.cpu_seconds
MIB = 1 << 20
GIB = 1 << 30
QD = 32

MIXED = {'refill_buffers': '1', 'buffer_compress_percentage': '50',
         'dedupe_percentage': '20'}
UNIQUE = {'refill_buffers': '1', 'buffer_compress_percentage': '0',
          'dedupe_percentage': '0'}


def steps(size, runtime):
    """[(name, fio options)] of one run, in order."""
    timed = {'time_based': '1', 'runtime': str(runtime),
             'ramp_time': '1', 'size': str(size)}
    rand4k = {'bs': '4k', 'randrepeat': '0'}
    out = [
        ('fill', dict(MIXED, rw='write', bs='1M', size=str(size),
                      end_fsync='1')),
        ('read4k', dict(rand4k, rw='randread', **timed)),
        ('write4k', dict(MIXED, rw='randwrite', end_fsync='1',
                         **dict(rand4k, **timed))),
        ('write4k_u', dict(UNIQUE, rw='randwrite', end_fsync='1',
                           **dict(rand4k, **timed))),
        ('write1m_u', dict(UNIQUE, rw='write', bs='1M',
                           size=str(min(size, GIB)), end_fsync='1')),
    ]
    for n in (1, 2, 3):
        # No time limit: fio's random map visits every block once.
        out.append(('age%d' % n, dict(MIXED, rw='randwrite', bs='4k',
                                      randrepeat='0', size=str(size),
                                      end_fsync='1')))
    out.append(('read4k_aged', dict(rand4k, rw='randread', **timed)))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def load():
    return os.getloadavg()[0]


class NBDExport(object):
    """qemu-storage-daemon: one iSCSI LUN as an NBD export on 127.0.0.1."""

    def __init__(self, portal, iqn, lun, initiator, workdir):
        self.port = free_port()
        self.pidfile = os.path.join(workdir, 'qsd-%d.pid' % self.port)
        self.log = os.path.join(workdir, 'qsd-%d.log' % self.port)
        self.cmd = [
            'qemu-storage-daemon',
            '--blockdev', 'driver=iscsi,node-name=lun,transport=tcp,'
            'portal=%s,target=%s,lun=%d,initiator-name=%s,'
            'cache.direct=on' % (portal, iqn, lun, initiator),
            '--nbd-server', 'addr.type=inet,addr.host=127.0.0.1,'
            'addr.port=%d' % self.port,
            '--export', 'type=nbd,id=exp,node-name=lun,name=lun,'
            'writable=on']
        self.proc = None

    @property
    def uri(self):
        return 'nbd://127.0.0.1:%d/lun' % self.port

    def start(self):
        with open(self.log, 'w') as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=log,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                with open(self.log) as f:
                    raise RuntimeError('qemu-storage-daemon exited: %s' %
                                       f.read()[-500:])
            try:
                socket.create_connection(('127.0.0.1', self.port),
                                         timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError('qemu-storage-daemon did not listen in 30 s')

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def fio(uri, name, options, timeout=3600):
    """fio's JSON result of one job."""
    cmd = ['fio', '--output-format=json', '--name=' + name,
           '--ioengine=nbd', '--uri=' + uri, '--iodepth=%d' % QD,
           '--group_reporting']
    cmd += ['--%s=%s' % kv for kv in sorted(options.items())]
    result = subprocess.run(cmd, capture_output=True, text=True,
                            timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError('fio %s failed: %s' % (
            name, (result.stderr or result.stdout)[-800:]))
    # fio may print notes before the JSON document.
    return json.loads(result.stdout[result.stdout.index('{'):])


def summary(job, cpu, wall):
    """IOPS, MB/s, p50/p99 ms and CPU-s per GB of one fio job."""
    direction = 'write' if job['write']['io_bytes'] else 'read'
    side = job[direction]
    pct = side['clat_ns'].get('percentile', {})
    moved = side['io_bytes']
    return {
        'iops': side['iops'],
        'MBps': side['bw_bytes'] / 1e6,
        'p50_ms': pct.get('50.000000', 0) / 1e6,
        'p99_ms': pct.get('99.000000', 0) / 1e6,
        'cpu_s_per_GB': cpu / (moved / 1e9) if moved else 0.0,
        'bytes': moved, 'wall_s': wall, 'load': load()}


def run(uri, pid, size, runtime, only=None, log=print):
    """Every step on one exported LUN; ``pid``: the target's process."""
    out = {}
    for name, options in steps(size, runtime):
        if only and name not in only:
            continue
        cpu0, wall0 = cpu_seconds(pid), time.monotonic()
        result = fio(uri, name, options)
        wall = time.monotonic() - wall0
        out[name] = summary(result['jobs'][0], cpu_seconds(pid) - cpu0,
                            wall)
        log('  %-12s %8.0f IOPS %8.1f MB/s p50 %7.2f ms p99 %8.2f ms '
            '%6.2f CPU-s/GB (load %.1f)' % (
                name, out[name]['iops'], out[name]['MBps'],
                out[name]['p50_ms'], out[name]['p99_ms'],
                out[name]['cpu_s_per_GB'], out[name]['load']))
    return out


def aged_pairs(aged_uri, fresh_uri, pid, size, runtime, pairs, log=print):
    """Fill the fresh volume, then ``pairs`` x (fresh read, aged read)."""
    by_name = dict(steps(size, runtime))
    out = {'fill': None, 'pairs': []}
    cpu0, wall0 = cpu_seconds(pid), time.monotonic()
    result = fio(fresh_uri, 'fill_fresh', by_name['fill'])
    out['fill'] = summary(result['jobs'][0], cpu_seconds(pid) - cpu0,
                          time.monotonic() - wall0)
    for n in range(pairs):
        pair = {}
        for which, uri in (('fresh', fresh_uri), ('aged', aged_uri)):
            cpu0, wall0 = cpu_seconds(pid), time.monotonic()
            result = fio(uri, 'read4k_%s' % which, by_name['read4k'])
            pair[which] = summary(result['jobs'][0],
                                  cpu_seconds(pid) - cpu0,
                                  time.monotonic() - wall0)
        pair['ratio'] = pair['aged']['iops'] / max(pair['fresh']['iops'],
                                                   1e-9)
        out['pairs'].append(pair)
        log('  pair %d: fresh %8.0f IOPS aged %8.0f IOPS: %3.0f%% '
            '(load %.1f)' % (n + 1, pair['fresh']['iops'],
                             pair['aged']['iops'], 100 * pair['ratio'],
                             pair['aged']['load']))
    if out['pairs']:
        out['median'] = statistics.median(p['ratio'] for p in out['pairs'])
    return out


def ratios(ours, anchor):
    """ours/anchor for rates, ours/anchor for p99 (lower is better)."""
    out = {}
    for name, mine in ours.items():
        theirs = anchor.get(name)
        if not theirs:
            continue
        out[name] = {
            'iops': mine['iops'] / theirs['iops'] if theirs['iops'] else 0,
            'p99': (mine['p99_ms'] / theirs['p99_ms']
                    if theirs['p99_ms'] else 0)}
    if 'read4k' in ours and 'read4k_aged' in ours:
        out['aged_vs_fresh'] = (ours['read4k_aged']['iops'] /
                                ours['read4k']['iops'])
    if 'fill' in ours and ours['fill']['cpu_s_per_GB']:
        out['ingest_MB_per_cpu_s'] = 1000.0 / ours['fill']['cpu_s_per_GB']
    return out


LABELS = (
    ('fill', '1 MiB write, mixed (fill)'),
    ('read4k', '4k randread, fresh volume'),
    ('write4k', '4k randwrite, mixed'),
    ('write4k_u', '4k randwrite, unique'),
    ('write1m_u', '1 MiB write, unique'),
    ('age1', '4k randwrite, overwrite pass 1'),
    ('age2', '4k randwrite, overwrite pass 2'),
    ('age3', '4k randwrite, overwrite pass 3'),
    ('read4k_aged', '4k randread after 3 overwrite passes'),
)


def markdown(result):
    """Rows of the benchmark table: ours next to tgtd, as ratios."""
    ours, theirs = result['ours'], result['tgtd_tmpfs']
    rows = ['', '| fio, QD32 (%d MiB volume) | IOPS ours / tgtd | ratio | '
            'MB/s ours / tgtd | p50 ms ours / tgtd | p99 ms ours / tgtd '
            '| p99 ratio | CPU-s/GB ours / tgtd | load |' % (
                result['size_bytes'] // MIB),
            '|---|---|---|---|---|---|---|---|---|']
    for name, label in LABELS:
        if name not in ours or name not in theirs:
            continue
        a, b = ours[name], theirs[name]
        rows.append('| %s | %.0f / %.0f | %.0f%% | %.1f / %.1f | %.2f / %.2f '
                    '| %.2f / %.2f | %.1fx | %.2f / %.2f | %.1f |' % (
                        label, a['iops'], b['iops'],
                        100 * a['iops'] / max(b['iops'], 1e-9),
                        a['MBps'], b['MBps'], a['p50_ms'], b['p50_ms'],
                        a['p99_ms'], b['p99_ms'],
                        a['p99_ms'] / max(b['p99_ms'], 1e-9),
                        a['cpu_s_per_GB'], b['cpu_s_per_GB'], a['load']))
    r = result.get('ratios', {})
    if 'aged_vs_fresh' in r:
        rows.append('| randread aged / fresh (ours) | | %.0f%% | | | | | | |'
                    % (100 * r['aged_vs_fresh']))
    pairs = result.get('aged_pairs')
    if pairs and pairs['pairs']:
        rows.append('| randread aged / fresh, alternating (ours) | %s | '
                    'median %.0f%% | | | | | | |' % (
                        ', '.join('%.0f / %.0f' % (
                            p['aged']['iops'], p['fresh']['iops'])
                            for p in pairs['pairs']),
                        100 * pairs['median']))
    if 'ingest_MB_per_cpu_s' in r:
        rows.append('| ingest, fio mixed data (MB per array CPU-s) | %.0f | '
                    '| | | | | | |' % r['ingest_MB_per_cpu_s'])
    return '\n'.join(rows)
