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

"""Driver benchmarks: ours next to Cinder 29's in-tree drivers.

Sections of ``tox -e bench`` (see tools/bench.py):

ops          REST round trips (from the array's request log) and wall time
             per operation: our K2 driver vs the in-tree KaminarioISCSIDriver
             (krest 1.3.7), our LINSTOR driver vs the in-tree
             LinstorDrbdDriver (python-linstor), on one reference array
growth       clone and volume-from-snapshot time as the source grows (256
             MiB, 1 GiB, 4 GiB written): ours, and the host copy the
             in-tree K2 driver does (qemu-img over iSCSI here: the in-tree
             driver itself needs a kernel initiator this machine lacks)
concurrency  50 create+attach+detach+delete flows through one driver
             instance on Cinder's green-thread pool, with 20 ms injected
             per array call: operations/s, p50 and p99, ours vs in-tree K2
"""

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from urllib import parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONCURRENT_FLOWS = 50
LATENCY_S = 0.020
KIB_PER_GIB = 1 << 20


def _cinder():
    """Cinder's process set-up, as cinder-volume does before a driver."""
    from cinder import context
    from oslo_config import cfg
    conf = cfg.CONF
    if not getattr(_cinder, 'done', False):
        conf([], project='cinder', default_config_files=[],
             default_config_dirs=[])
        state = tempfile.mkdtemp(prefix='bench-cinder-')
        conf.set_override('backend_url', 'file://%s' % state,
                          group='coordination')
        conf.set_override('lock_path', state, group='oslo_concurrency')
        from cinder import coordination
        coordination.COORDINATOR.start()
        _cinder.done = True
    return context.get_admin_context()


def _configuration(group, opt_lists, values):
    from cinder.volume import configuration
    from cinder.volume import driver as volume_driver
    from oslo_config import cfg
    conf = configuration.Configuration(volume_driver.volume_opts,
                                       config_group=group)
    for opts in opt_lists:
        conf.append_config_values(opts)
    for key, value in values.items():
        cfg.CONF.set_override(key, value, group=group)
    return conf


class BenchArray(object):
    """A reference array with request counting."""

    def __init__(self, extra=()):
        from reference_array import launch
        self.dir = tempfile.mkdtemp(prefix='bench-drivers-')
        self.process = launch.ArrayProcess(self.dir, [
            '--iscsi-port', '0', '--capacity-gib', '256',
            '--linstor-local-node', socket.gethostname()] + list(extra))
        self.info = self.process.start()
        url = parse.urlsplit(self.info['k2'])
        self.k2_host, self.k2_port = url.hostname, url.port

    def requests(self, dialect):
        path = os.path.join(self.dir, '%s-requests.log' % dialect)
        if not os.path.exists(path):
            return 0
        with open(path) as f:
            return sum(1 for _line in f)

    def stop(self):
        self.process.stop(timeout=60)


def k2_ours(array, ctx):
    from cinder.volume.drivers.san import san

    from cinder_driver.common import options as common_options
    from cinder_driver.k2 import driver
    from cinder_driver.k2 import options as k2_options
    conf = _configuration('bench-k2', (san.san_opts, common_options.rest_opts,
                                       k2_options.k2_opts), {
        'san_ip': array.k2_host, 'san_api_port': array.k2_port,
        'san_login': array.info['user'],
        'san_password': array.info['password'],
        'driver_ssl_cert_path': array.info['ca_cert'],
        'volume_backend_name': 'bench-k2'})
    drv = driver.K2ISCSIDriver(configuration=conf, host='bench@bench-k2')
    drv.do_setup(ctx)
    drv.check_for_setup_error()
    return drv


def k2_intree(array, ctx):
    from cinder.volume.drivers.kaminario import kaminario_iscsi
    from cinder.volume.drivers.san import san
    import urllib3
    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    conf = _configuration('bench-kaminario', (san.san_opts,), {
        'san_ip': '%s:%s' % (array.k2_host, array.k2_port),
        'san_login': array.info['user'],
        'san_password': array.info['password'],
        'volume_backend_name': 'bench-kaminario'})
    drv = kaminario_iscsi.KaminarioISCSIDriver(configuration=conf)
    drv.do_setup(ctx)
    drv.check_for_setup_error()
    return drv


def linstor_ours(array, ctx):
    from cinder_driver.common import options as common_options
    from cinder_driver.linstor import driver
    from cinder_driver.linstor import options as linstor_options
    conf = _configuration('bench-linstor', (common_options.rest_opts,
                                            linstor_options.linstor_opts), {
        'linstor_uris': [array.info['linstor']],
        'volume_backend_name': 'bench-linstor'})
    drv = driver.LinstorDrbdDriver(configuration=conf,
                                   host='bench@bench-linstor')
    drv.do_setup(ctx)
    drv.check_for_setup_error()
    return drv


def linstor_intree(array, ctx):
    from cinder.volume.drivers import linstordrv
    conf = _configuration('bench-linstordrv', (linstordrv.linstor_opts,), {
        'linstor_default_uri': array.info['linstor'].replace(
            'http://', 'linstor://'),
        'linstor_autoplace_count': 2,
        'volume_backend_name': 'bench-linstordrv'})
    drv = linstordrv.LinstorDrbdDriver(configuration=conf)
    drv.do_setup(ctx)
    drv.check_for_setup_error()
    return drv


def _connector(n):
    return {'host': socket.gethostname() if n is None else 'bench-%d' % n,
            'ip': '127.0.0.1', 'multipath': False,
            'initiator': 'iqn.2026-11.io.cinder-flash:bench-%s' % n}


def _objects(ctx, vtype_specs=None):
    from cinder_driver.tests import objects
    return objects, objects.volume_type(ctx, **(vtype_specs or {}))


def _measure(array, dialect, fn):
    before = array.requests(dialect)
    started = time.perf_counter()
    try:
        fn()
        ok = True
    except Exception as e:
        ok = '%s: %s' % (type(e).__name__, str(e).splitlines()[0][:100])
    elapsed = (time.perf_counter() - started) * 1000
    return {'calls': array.requests(dialect) - before,
            'ms': round(elapsed, 1), 'ok': ok}


def _lifecycle(array, dialect, drv, ctx, manage_ref, retype_specs,
               intree_linstor=False):
    """Every operation once; {op: {calls, ms, ok}}."""
    objects, vtype = _objects(ctx)
    backend = drv.configuration.volume_backend_name
    pool = 'DfltStorPool' if dialect == 'linstor' else backend
    host = 'bench@%s#%s' % (backend, pool)
    vol = objects.volume(ctx, 1, vtype, host=host)
    out = {}

    def step(name, fn):
        out[name] = _measure(array, dialect, fn)

    def create():
        vol.update(drv.create_volume(vol) or {})
    step('create', create)
    step('extend', lambda: drv.extend_volume(vol, 2))
    vol.size = 2
    snap = objects.snapshot(ctx, vol)
    step('snapshot', lambda: snap.update(drv.create_snapshot(snap) or {}))
    clone = objects.volume(ctx, 2, vtype, host=host)
    step('clone', lambda: clone.update(
        drv.create_cloned_volume(clone, vol) or {}))
    from_snap = objects.volume(ctx, 2, vtype, host=host)
    step('from snapshot', lambda: from_snap.update(
        drv.create_volume_from_snapshot(from_snap, snap) or {}))
    # Before the retype: a K2 volume with snapshots is retyped by Cinder's
    # migration, not in place.
    step('delete snapshot', lambda: drv.delete_snapshot(snap))
    from cinder import objects as cinder_objects
    vol.volume_attachment = cinder_objects.VolumeAttachmentList(objects=[])
    connector = _connector(None if intree_linstor or dialect == 'linstor'
                           else 1)
    step('attach', lambda: drv.initialize_connection(vol, connector))
    step('detach', lambda: drv.terminate_connection(vol, connector))
    step('stats', lambda: drv.get_volume_stats(refresh=True))
    if retype_specs is None:
        out['retype'] = {'calls': 0, 'ms': 0, 'ok': 'not supported'}
    else:
        new_type = objects.volume_type(ctx, **retype_specs)

        def retype():
            result = drv.retype(ctx, vol, new_type, {}, {'host': host})
            if not (result is True or (isinstance(result, tuple) and
                                       result[0])):
                raise RuntimeError('retype answered %r' % (result,))
            if isinstance(result, tuple) and result[1]:
                vol.update(result[1])
            vol.volume_type = new_type
        step('retype', retype)
    if manage_ref is None:
        out['manage'] = {'calls': 0, 'ms': 0, 'ok': 'not supported'}
    else:
        managed = objects.volume(ctx, 2, vol.volume_type, host=host)

        def manage():
            drv.unmanage(vol)
            ref = manage_ref(vol)
            drv.manage_existing_get_size(managed, ref)
            managed.update(drv.manage_existing(managed, ref) or {})
        step('manage', manage)
        if out['manage']['ok'] is True:
            vol.update({'provider_id': managed.provider_id})
            vol.id = managed.id
    for name, each in (('delete', vol), ('delete clone', clone),
                       ('delete from snapshot', from_snap)):
        step(name, lambda each=each: drv.delete_volume(each))
    return out


def bench_ops(args, tmp):
    ctx = _cinder()
    results = {}
    array = BenchArray()
    try:
        results['k2_ours'] = _lifecycle(
            array, 'k2', k2_ours(array, ctx), ctx,
            lambda v: {'source-name': 'cv-%s' % v.name_id},
            {'k2:dedup': 'False'})
        results['k2_intree'] = _lifecycle(
            array, 'k2', k2_intree(array, ctx), ctx,
            lambda v: {'source-name': 'cv-%s' % v.id},
            {'kaminario:thin_prov_type': 'nodedup'})
        results['linstor_ours'] = _lifecycle(
            array, 'linstor', linstor_ours(array, ctx), ctx,
            lambda v: {'source-name': 'volume-%s' % v.name_id},
            {'linstor:redundancy': '3'})
        results['linstor_intree'] = _lifecycle(
            array, 'linstor', linstor_intree(array, ctx), ctx, None, None,
            intree_linstor=True)
    finally:
        array.stop()
    return results


def _write(url, mib, tmp):
    from tempest_plugin.workload import dataset
    from tools import bench
    path = os.path.join(tmp, 'src-%d.bin' % mib)
    dataset.write_file(path, mib << 20)
    bench.run('qemu-img', 'convert', '-n', '-f', 'raw', '-O', 'raw', path,
              url)


def bench_growth(args, tmp):
    """Array-side copies stay flat; a host copy grows with the data."""
    from cinder_driver.k2 import client as k2_client
    from tools import bench
    sizes = [max(16, int(m * args.scale)) for m in (256, 1024, 4096)]
    array = bench.Array(capacity_gib=64)
    out = {}
    try:
        for mib in sizes:
            vg, vol = array.volume('grow-%d' % mib, 5)
            _write(array.map('volumes', vol['id']), mib, tmp)
            snap = array.k2.create('snapshots', {
                'short_name': 's-%d' % mib,
                'source': k2_client.ref('volume_groups', vg['id'])})
            volsnap = array.k2.find('volsnaps', **{
                'snapshot.ref': '/snapshots/%d' % snap['id']})
            times = {}
            for kind, source in (('clone', k2_client.ref('volumes',
                                                         vol['id'])),
                                 ('from_snapshot', k2_client.ref(
                                     'volsnaps', volsnap['id']))):
                target_vg, _t = array.volume('%s-%d' % (kind, mib), 1)
                times[kind], _r = bench.timed(
                    lambda: array.k2.create('volumes', {
                        'name': 'cv-%s-c-%d' % (kind, mib),
                        'size': vol['size'],
                        'volume_group': k2_client.ref('volume_groups',
                                                      target_vg['id']),
                        'source': source}))
            _vg2, target = array.volume('copy-%d' % mib, 5)
            host_s, _r = bench.timed(lambda: bench.run(
                'qemu-img', 'convert', '-n', '--target-is-zero', '-f', 'raw',
                '-O', 'raw', array.map('volsnaps', volsnap['id']),
                array.map('volumes', target['id'])))
            out['%dMiB' % mib] = {
                'array_clone_ms': round(times['clone'] * 1000, 1),
                'array_from_snapshot_ms': round(
                    times['from_snapshot'] * 1000, 1),
                'host_copy_ms': round(host_s * 1000, 1)}
        first, last = ('%dMiB' % sizes[0]), ('%dMiB' % sizes[-1])
        for key, field in (('clone_growth', 'array_clone_ms'),
                           ('from_snapshot_growth', 'array_from_snapshot_ms'),
                           ('host_copy_growth', 'host_copy_ms')):
            out[key] = round(out[last][field] / max(out[first][field], 0.1),
                             2)
    finally:
        array.stop()
    return out


def _flows(drv, ctx, n_flows):
    objects, vtype = _objects(ctx)
    from cinder import objects as cinder_objects
    latencies = {'create': [], 'attach': [], 'detach': [], 'delete': []}
    errors = []

    def flow(n):
        vol = objects.volume(ctx, 1, vtype)
        vol.volume_attachment = cinder_objects.VolumeAttachmentList(
            objects=[])
        connector = _connector(n)
        try:
            for name, fn in (
                    ('create', lambda: vol.update(
                        drv.create_volume(vol) or {})),
                    ('attach', lambda: drv.initialize_connection(
                        vol, connector)),
                    ('detach', lambda: drv.terminate_connection(
                        vol, connector)),
                    ('delete', lambda: drv.delete_volume(vol))):
                started = time.perf_counter()
                fn()
                latencies[name].append(time.perf_counter() - started)
        except Exception as e:
            errors.append('%s: %s' % (type(e).__name__, e))

    # cinder-volume serves each RPC on a green thread of its executor pool.
    import eventlet
    pool = eventlet.GreenPool(64)
    started = time.perf_counter()
    for n in range(n_flows):
        pool.spawn_n(flow, n)
    pool.waitall()
    wall = time.perf_counter() - started
    every = sorted(x for values in latencies.values() for x in values)
    result = {'flows': n_flows, 'wall_s': round(wall, 2),
              'ops_per_s': round(len(every) / wall, 1),
              'errors': len(errors), 'first_error': errors[:1]}
    if every:
        result['p50_ms'] = round(statistics.median(every) * 1000, 1)
        result['p99_ms'] = round(every[min(len(every) - 1,
                                           int(len(every) * 0.99))] * 1000, 1)
    return result


def bench_concurrency(args, tmp):
    ctx = _cinder()
    faults = os.path.join(tmp, 'latency.json')
    with open(faults, 'w') as f:
        json.dump([{'kind': 'latency', 'seconds': LATENCY_S,
                    'path': '^/(api|v1)'}], f)
    out = {}
    for name, make in (('ours', k2_ours), ('intree', k2_intree)):
        array = BenchArray(['--faults', faults])
        try:
            out[name] = _flows(make(array, ctx), ctx, CONCURRENT_FLOWS)
        finally:
            array.stop()
    out['throughput_ratio'] = round(out['ours']['ops_per_s'] /
                                    max(out['intree']['ops_per_s'], 0.01), 2)
    return out


SECTIONS = {'ops': bench_ops, 'growth': bench_growth,
            'concurrency': bench_concurrency}


def run_section(name, args, tmp):
    """One section in its own process.

    Cinder's eventlet patching and configuration stay out of the other
    benchmarks.
    """
    cmd = [sys.executable, '-m', 'tools.bench_drivers', name, '--scale',
           str(args.scale), '--tmp', tmp]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError('%s failed: %s' % (name, proc.stderr[-2000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    import argparse
    # Cinder's test package first: it monkey-patches as cinder-volume
    # does, before anything opens a socket.
    import cinder_driver.tests  # noqa: F401
    parser = argparse.ArgumentParser()
    parser.add_argument('section', choices=sorted(SECTIONS))
    parser.add_argument('--scale', type=float, default=1.0)
    parser.add_argument('--tmp', default=tempfile.gettempdir())
    args = parser.parse_args()
    print(json.dumps(SECTIONS[args.section](args, args.tmp)), flush=True)
    return 0


def markdown(results):
    lines = []
    ops = results.get('ops')
    if ops:
        lines += ['', '| operation | K2 ours: calls / ms | K2 in-tree: calls '
                  '/ ms | LINSTOR ours: calls / ms | LINSTOR in-tree: calls '
                  '/ ms |', '|---|---|---|---|---|']

        def cell(row):
            if row['ok'] is not True:
                return 'n/a (%s)' % row['ok'][:40]
            return '%d / %.0f' % (row['calls'], row['ms'])
        for op in ops['k2_ours']:
            lines.append('| %s | %s |' % (op, ' | '.join(
                cell(ops[d][op]) for d in ('k2_ours', 'k2_intree',
                                           'linstor_ours',
                                           'linstor_intree'))))
    g = results.get('growth')
    if g:
        lines += ['', '| source written | array clone ms | array volume '
                  'from snapshot ms | host copy ms |', '|---|---|---|---|']
        for key, row in g.items():
            if isinstance(row, dict):
                lines.append('| %s | %s | %s | %s |' % (
                    key, row['array_clone_ms'],
                    row['array_from_snapshot_ms'], row['host_copy_ms']))
        lines.append('| growth, largest / smallest | %.2fx | %.2fx | '
                     '%.2fx |' % (g['clone_growth'],
                                  g['from_snapshot_growth'],
                                  g['host_copy_growth']))
    c = results.get('concurrency')
    if c:
        lines += ['', '| %d flows, %d ms per call | ops/s | p50 ms | p99 ms '
                  '| errors |' % (CONCURRENT_FLOWS, LATENCY_S * 1000),
                  '|---|---|---|---|---|']
        for name in ('ours', 'intree'):
            row = c[name]
            lines.append('| K2 %s | %s | %s | %s | %s |' % (
                name, row['ops_per_s'], row.get('p50_ms'),
                row.get('p99_ms'), row['errors']))
        lines.append('| throughput ratio | %.2fx | | | |' %
                     c['throughput_ratio'])
    return '\n'.join(lines)


if __name__ == '__main__':
    sys.exit(main())
