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

"""Fault soak: mixed operations through the K2 driver under array faults.

``tox -e soak [-- --operations 1000 --seed 3 --crash-rounds 20]``. A
reference array injects busy answers, 503 and 500 replies, dropped
connections and latency beyond the driver's read timeout on a fraction
of calls, while a K2ISCSIDriver runs creates, clones, snapshots,
attaches, detaches, extends, retypes and deletes. The soak keeps the
model Cinder would keep (what succeeded) and, once the faults stop,
compares it with the array: no array object Cinder does not know, no
Cinder object missing on the array, no mapping to a host that did not
ask for it. It prints the counts and exits non-zero on any mismatch.
With replication (the default), ``--group-rounds`` rounds of group
replication follow (``tools/soak_groups.py``). Then it kills the array
with SIGKILL under iSCSI writes ``--crash-rounds`` times
(``tools/crash.py``) and checks that every write acknowledged as durable
reads back.
"""

import argparse
import collections
import os
import random
import sys
import tempfile
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

FAULTS = [
    {'path': '^/api/v2/(volumes|volume_groups|snapshots|volsnaps|mappings|'
             'hosts|host_iqns)', 'kind': kind, 'fraction': fraction, **extra}
    for kind, fraction, extra in (
        ('busy', 0.03, {}), ('status', 0.02, {'status': 503}),
        ('status', 0.02, {'status': 500}), ('drop', 0.02, {}),
        ('latency', 0.01, {'seconds': 1.5}),
        ('restart', 0.003, {'seconds': 0.5}))]
HOSTS = [{'host': 'soak-%d' % n, 'initiator':
          'iqn.2026-11.io.cinder-flash:soak-%d' % n} for n in range(3)]


class Soak(object):

    def __init__(self, driver, ctx, seed, replicated=False):
        from cinder.tests.unit import fake_snapshot
        from cinder.tests.unit import fake_volume
        self.fake_volume, self.fake_snapshot = fake_volume, fake_snapshot
        self.driver, self.ctx = driver, ctx
        self.rnd = random.Random(seed)
        self.volumes, self.snapshots, self.attached = {}, {}, set()
        # Volumes Cinder marks in error at a failover (they stay on the
        # lost array) are left alone until the failback.
        self.stranded = set()
        # What Cinder would hold in an error state, to clean up later as
        # a user or Nova would: errored volumes and snapshots are deleted,
        # failed deletes are retried, failed attaches are detached.
        self.errored = []
        self.counts = collections.Counter()
        kinds = {'dedup': {'k2:dedup': 'true'},
                 'nodedup': {'k2:dedup': 'false'}}
        if replicated:
            kinds['replicated'] = {'k2:dedup': 'true',
                                   'replication_enabled': '<is> True'}
        self.types = {name: fake_volume.fake_volume_type_obj(
            ctx, id=self._uuid(), extra_specs=specs)
            for name, specs in kinds.items()}

    def _uuid(self):
        return '%08x-0000-4000-8000-%012x' % (self.rnd.getrandbits(32),
                                              self.rnd.getrandbits(48))

    def _volume(self, size):
        vol = self.fake_volume.fake_volume_obj(
            self.ctx, id=self._uuid(), size=size, provider_id=None)
        vol.volume_type = self.types[self.rnd.choice(sorted(self.types))]
        return vol

    def _usable(self, vid):
        return vid not in self.stranded

    def _pick(self, pool, where=lambda item: True):
        choices = [k for k in sorted(pool) if where(k) and self._usable(
            k[0] if isinstance(k, tuple) else k)]
        return self.rnd.choice(choices) if choices else None

    def _busy(self, vid):
        # As in Cinder, a snapshot in error still holds its volume.
        return (any(v == vid for v, _h in self.attached) or
                any(s[1] == vid for s in self.snapshots.values()) or
                any(action == 'delete_snapshot' and obj.volume_id == vid
                    for action, obj in self.errored))

    # -- operations: each changes the model only when it succeeded --------
    def op_create(self):
        vol = self._volume(self.rnd.randint(1, 3))
        self.errored.append(('delete', vol))
        vol.update(self.driver.create_volume(vol))
        self.errored.pop()
        self.volumes[vol.id] = vol

    def op_clone(self):
        src = self._pick(self.volumes)
        if src is None:
            return self.op_create()
        vol = self._volume(self.volumes[src].size + self.rnd.randint(0, 1))
        self.errored.append(('delete', vol))
        vol.update(self.driver.create_cloned_volume(vol, self.volumes[src]))
        self.errored.pop()
        self.volumes[vol.id] = vol

    def op_snapshot(self):
        vid = self._pick(self.volumes)
        if vid is None:
            return
        snap = self.fake_snapshot.fake_snapshot_obj(
            self.ctx, id=self._uuid(), volume_id=vid, provider_id=None)
        snap.volume = self.volumes[vid]
        self.errored.append(('delete_snapshot', snap))
        snap.update(self.driver.create_snapshot(snap))
        self.errored.pop()
        self.snapshots[snap.id] = (snap, vid)

    def op_delete_snapshot(self):
        sid = self._pick(self.snapshots)
        if sid is not None:
            snap = self.snapshots.pop(sid)
            self.errored.append(('delete_snapshot', snap[0]))
            self.driver.delete_snapshot(snap[0])
            self.errored.pop()

    def op_attach(self):
        vid = self._pick(self.volumes)
        host = self.rnd.choice(HOSTS)
        if vid is not None:
            self.errored.append(('detach', (self.volumes[vid], host)))
            self.driver.initialize_connection(self.volumes[vid], host)
            self.errored.pop()
            self.attached.add((vid, host['host']))

    def op_detach(self):
        pair = self._pick(self.attached)
        if pair is not None:
            host = next(h for h in HOSTS if h['host'] == pair[1])
            self.driver.terminate_connection(self.volumes[pair[0]], host)
            self.attached.discard(pair)

    def op_extend(self):
        vid = self._pick(self.volumes)
        if vid is not None:
            vol = self.volumes[vid]
            self.driver.extend_volume(vol, vol.size + 1)
            vol.size += 1

    def op_retype(self):
        vid = self._pick(self.volumes, lambda v: not self._busy(v))
        if vid is None:
            return
        vol = self.volumes[vid]
        new = self.rnd.choice([t for _n, t in sorted(self.types.items())
                               if t is not vol.volume_type])
        retyped, update = self.driver.retype(self.ctx, vol, new, {}, {})
        if retyped:
            vol.update(update or {})
            vol.volume_type = new

    def op_delete(self):
        vid = self._pick(self.volumes, lambda v: not self._busy(v))
        if vid is not None:
            vol = self.volumes.pop(vid)
            self.errored.append(('delete', vol))
            self.driver.delete_volume(vol)
            self.errored.pop()

    def settle(self):
        """Cinder's own follow-ups for what ended in an error state."""
        errored, self.errored = self.errored, []
        for action, obj in errored:
            try:
                if action == 'delete':
                    self.driver.delete_volume(obj)
                elif action == 'delete_snapshot':
                    self.driver.delete_snapshot(obj)
                else:
                    vol, host = obj
                    if (vol.id, host['host']) not in self.attached:
                        self.driver.terminate_connection(vol, host)
                self.counts['follow-up ' + action + ' ok'] += 1
            except Exception:
                self.counts['follow-up ' + action + ' failed'] += 1

    OPS = (('create', 4), ('clone', 2), ('snapshot', 2),
           ('delete_snapshot', 2), ('attach', 3), ('detach', 3),
           ('extend', 1), ('retype', 1), ('delete', 3))

    def run(self, operations, only=None):
        names = [n for n, w in self.OPS for _i in range(w)
                 if only is None or n in only]
        for _n in range(operations):
            name = self.rnd.choice(names)
            try:
                getattr(self, 'op_' + name)()
                self.counts[name + ' ok'] += 1
            except Exception as e:
                self.counts[name + ' failed'] += 1
                self.counts['error: ' + type(e).__name__] += 1

    def _apply(self, updates):
        for item in updates:
            vol = self.volumes.get(item['volume_id'])
            if vol is not None:
                vol.update({k: v for k, v in item['updates'].items()
                            if k != 'status'})
                if item['updates'].get('status') == 'error':
                    self.stranded.add(vol.id)
                else:
                    self.stranded.discard(vol.id)

    def _detach_all(self):
        for vid, host in sorted(self.attached):
            if vid not in self.stranded:
                self.driver.terminate_connection(
                    self.volumes[vid],
                    next(h for h in HOSTS if h['host'] == host))
                self.attached.discard((vid, host))

    def failover(self):
        # A planned failover: errors are cleaned up and hosts let go of
        # their LUNs first.
        self.settle()
        self._detach_all()
        _active, updates, _g = self.driver.failover_host(
            self.ctx, list(self.volumes.values()), 'secondary')
        self._apply(updates)
        self.counts['failover: volumes moved'] += sum(
            1 for u in updates if u['updates'].get('replication_status') ==
            'failed-over')
        self.counts['failover: volumes left in error'] += len(self.stranded)

    def failback(self):
        # Likewise before a failback.
        self.settle()
        self._detach_all()
        _active, updates, _g = self.driver.failover_host(
            self.ctx, list(self.volumes.values()), 'default')
        self._apply(updates)
        errored = sorted(self.stranded)
        self.counts['failback: volumes back'] += len(updates) - len(errored)
        # What failed back in error is deleted, as a user would.
        for vid in errored:
            self.errored.append(('delete', self.volumes.pop(vid)))
            self.stranded.discard(vid)
            self.attached = {a for a in self.attached if a[0] != vid}
            for sid in [s for s, (_snap, v) in self.snapshots.items()
                        if v == vid]:
                self.errored.append(('delete_snapshot',
                                     self.snapshots.pop(sid)[0]))

    def reconcile_replicas(self, k2):
        """The secondary holds exactly the copies of replicated volumes."""
        from cinder_driver.common import naming
        want = [v for v in self.volumes.values()
                if v.replication_status == 'enabled']
        problems = []
        for resource, key, names in (
                ('volumes', 'name', {naming.volume_name(v) for v in want}),
                ('volume_groups', 'name',
                 {naming.group_name(v) for v in want}),
                ('replication/sessions', 'name',
                 {'crs-' + v.name_id for v in want})):
            have = {o[key] for o in k2.search(resource)
                    if o.get(key) != 'CTRL'}
            problems += ['orphan %s on the secondary: %s' % (resource, n)
                         for n in sorted(have - names)]
            problems += ['missing %s on the secondary: %s' % (resource, n)
                         for n in sorted(names - have)]
        names = {v['id']: v['name'] for v in k2.search('volumes')}
        for m in k2.search('mappings'):
            vid = int(m['volume']['ref'].rsplit('/', 1)[1])
            problems.append('mapping left on the secondary: %s on %s' % (
                names.get(vid, vid), m['host']['ref']))
        return problems

    def reconcile(self, k2):
        """Differences between the model and the array (empty: none).

        Objects are matched by provider_id, the array ids Cinder keeps.
        """
        from cinder_driver.k2 import provider_id
        problems = []
        ids = {v.id: provider_id.ProviderId.parse(v.provider_id).ids
               for v in self.volumes.values()}
        volumes = {v['id']: v for v in k2.search('volumes')
                   if v['name'] != 'CTRL'}
        groups = {g['id']: g for g in k2.search('volume_groups')}
        wanted_vols = {vol for _grp, vol in ids.values()}
        wanted_groups = {grp for grp, _vol in ids.values()}
        problems += ['orphan volume %s' % volumes[v]['name']
                     for v in sorted(set(volumes) - wanted_vols)]
        problems += ['missing volume %d' % v
                     for v in sorted(wanted_vols - set(volumes))]
        problems += ['orphan volume group %s' % groups[g]['name']
                     for g in sorted(set(groups) - wanted_groups)]
        problems += ['missing volume group %d' % g
                     for g in sorted(wanted_groups - set(groups))]
        snaps = {int(s.provider_id.split('/')[0])
                 for s, _v in self.snapshots.values()}
        have = {s['id']: s['short_name'] for s in k2.search('snapshots')}
        problems += ['orphan snapshot %s' % have[s]
                     for s in sorted(set(have) - snaps)]
        problems += ['missing snapshot %d' % s
                     for s in sorted(snaps - set(have))]
        hosts = {h['id']: h['name'] for h in k2.search('hosts')}
        mapped = {(int(m['volume']['ref'].rsplit('/', 1)[1]),
                   hosts.get(int(m['host']['ref'].rsplit('/', 1)[1])))
                  for m in k2.search('mappings')}
        wanted = {(ids[v][1], h) for v, h in self.attached}
        problems += ['mapping nobody asked for: volume %s on %s' % m
                     for m in sorted(mapped - wanted, key=str)]
        problems += ['missing mapping: volume %s on %s' % m
                     for m in sorted(wanted - mapped, key=str)]
        return problems


def make_driver(info, ctx, replica=None):
    from cinder.volume import configuration
    from cinder.volume import driver as volume_driver
    from oslo_config import cfg

    from cinder_driver.k2 import driver as k2_driver
    host, port = info['k2'][len('https://'):].rsplit(':', 1)
    group = 'soak'
    conf = configuration.Configuration(volume_driver.volume_opts,
                                       config_group=group)
    drv = k2_driver.K2ISCSIDriver(configuration=conf, host='soak@k2')
    options = [('san_ip', host), ('san_api_port', int(port)),
               ('san_login', info['user']),
               ('san_password', info['password']),
               ('driver_ssl_cert_path', info['ca_cert']),
               ('flash_rest_retries', 2),
               ('flash_rest_retry_backoff', 0.01),
               ('flash_rest_read_timeout', 1.0),
               ('k2_replication_timeout', 60)]
    if replica is not None:
        r_host, r_port = replica['k2'][len('https://'):].rsplit(':', 1)
        options.append(('replication_device', [{
            'backend_id': 'secondary', 'san_ip': r_host,
            'san_api_port': r_port, 'san_login': replica['user'],
            'san_password': replica['password'],
            'driver_ssl_cert_path': replica['ca_cert']}]))
    for key, value in options:
        cfg.CONF.set_override(key, value, group=group)
    drv.do_setup(ctx)
    drv.check_for_setup_error()
    return drv


class _Faults(object):
    """The fault rules of one array (its /_admin/faults endpoint)."""

    def __init__(self, info):
        import requests
        self.url = 'https://%s/_admin/faults' % info['k2'][len('https://'):]
        self.session = requests.Session()
        self.session.auth = (info['user'], info['password'])
        # verify per call: REQUESTS_CA_BUNDLE would override a session's.
        self.tls = {'verify': info['ca_cert'], 'timeout': 10}
        self.fired = []

    def on(self):
        self.session.post(self.url, json=FAULTS,
                          **self.tls).raise_for_status()

    def off(self):
        self.fired += self.session.get(self.url, **self.tls).json()
        self.session.delete(self.url, **self.tls).raise_for_status()


def _client(info):
    from cinder_driver.k2 import rest
    host, port = info['k2'][len('https://'):].rsplit(':', 1)
    return rest.K2Rest(host, info['user'], info['password'],
                       port=int(port), verify=info['ca_cert'])


def run_soak(info, operations, seed, replica=None, group_rounds=0):
    """Run against started arrays; returns (counts, problems, faults).

    With ``replica`` (a paired second array) a third of the volumes are
    replicated, and halfway the backend fails over to it, runs attaches,
    detaches, extends and deletes there under faults, and fails back;
    then ``group_rounds`` rounds of group replication run under faults
    on both arrays (tools/soak_groups).
    """
    from cinder import context

    ctx = context.get_admin_context()
    driver = make_driver(info, ctx, replica)
    faults = _Faults(info)
    soak = Soak(driver, ctx, seed, replicated=replica is not None)
    if replica is None:
        faults.on()
        soak.run(operations)
        faults.off()
    else:
        secondary = _Faults(replica)
        faults.on()
        soak.run(operations // 2)
        faults.off()
        soak.failover()
        secondary.on()
        soak.run(operations // 5, only=('attach', 'detach', 'extend',
                                        'delete'))
        secondary.off()
        soak.failback()
        faults.on()
        soak.run(operations - operations // 2 - operations // 5)
        rounds = None
        if group_rounds:
            from tools import soak_groups
            rounds = soak_groups.GroupRounds(soak)
            secondary.on()
            rounds.run(group_rounds)
            secondary.off()
        faults.off()
        faults.fired += secondary.fired
    soak.settle()
    # Cinder's periodic task asks for stats every minute; cleanups the
    # array did not let through are finished then.
    driver.get_volume_stats(refresh=True)
    problems = []
    if replica is not None and rounds is not None:
        rounds.settle()
        problems += rounds.reconcile(_client(info), _client(replica))
        rounds.delete_all()
        problems += ['left after every group went: %s on the %s array' % (
            item, role) for k2, role in ((info, 'primary'),
                                         (replica, 'secondary'))
            for item in rounds.leftovers(_client(k2))]
    problems += soak.reconcile(_client(info))
    if replica is not None:
        problems += soak.reconcile_replicas(_client(replica))
    return soak.counts, problems, faults.fired


def _start_array(tmp, name, seed):
    from reference_array import launch
    array = launch.ArrayProcess(
        os.path.join(tmp, name), ['--iscsi-port', '0', '--fault-injection',
                                  '--fault-seed', str(seed)],
        os.path.join(tmp, name + '.log'))
    return array, array.start()


def main():
    if '--cluster' in sys.argv[1:]:
        # Two cinder-volume services on the gate bed: tools/cluster_soak.
        from tools import cluster_soak
        sys.argv.remove('--cluster')
        return cluster_soak.main()
    parser = argparse.ArgumentParser()
    parser.add_argument('--operations', type=int, default=1000)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--no-replication', dest='replication',
                        action='store_false',
                        help='one array, no failover/failback phase')
    parser.add_argument('--group-rounds', type=int, default=8,
                        help='group replication rounds (with replication)')
    parser.add_argument('--crash-rounds', type=int, default=20,
                        help='kill -9 rounds of the array under writes')
    args = parser.parse_args()
    import cinder.tests.unit  # noqa: F401,H306  (patching, objects first)
    from cinder import coordination  # noqa: H306
    from oslo_config import cfg

    with tempfile.TemporaryDirectory(prefix='soak-') as tmp:
        cfg.CONF([], project='cinder')
        cfg.CONF.set_override('backend_url', 'file://%s/locks' % tmp,
                              group='coordination')
        if args.replication and args.group_rounds:
            from tools import soak_groups
            soak_groups.setup_database(os.path.join(tmp, 'cinder.db'))
        coordination.COORDINATOR.start()
        procs = []
        try:
            proc, info = _start_array(tmp, 'array', args.seed)
            procs.append(proc)
            replica = None
            if args.replication:
                from reference_array import pairing
                proc, replica = _start_array(tmp, 'replica', args.seed)
                procs.append(proc)
                pairing.pair(info, replica, 'secondary')
                pairing.pair(replica, info, 'primary')
            counts, problems, fired = run_soak(
                info, args.operations, args.seed, replica,
                args.group_rounds if args.replication else 0)
        finally:
            for array in procs:
                array.stop()
            coordination.COORDINATOR.stop()
    print('operations: %d (seed %d)' % (args.operations, args.seed))
    for key in sorted(counts):
        print('  %-28s %d' % (key, counts[key]))
    print('faults injected: %d' % sum(r['hits'] for r in fired))
    for rule in fired:
        print('  %-8s %-5s %d' % (rule['kind'], rule.get('status', ''),
                                  rule['hits']))
    status = 0
    if problems:
        print('array and driver DISAGREE:')
        for p in problems:
            print('  ' + p)
        status = 1
    else:
        print('arrays and driver agree: no orphan, nothing missing, no '
              'stray mapping')
    if args.crash_rounds:
        from tools import crash
        with tempfile.TemporaryDirectory(prefix='crash-') as tmp:
            acked, errors = crash.run_rounds(tmp, args.crash_rounds,
                                             args.seed)
        print('crash rounds: %d kill -9 of the array under writes; %d '
              'writes acknowledged as durable' % (args.crash_rounds, acked))
        if errors:
            print('LOST acknowledged writes:')
            for e in errors:
                print('  ' + e)
            status = 1
        else:
            print('every acknowledged write read back after every restart')
    return status


if __name__ == '__main__':
    sys.exit(main())
