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

"""Cluster soak: two cinder-volume services, one killed mid-flight.

``tox -e soak -- --cluster [--rounds 6] [--seconds 60] [--workers 6]
[--faults kill,kill,coordinator] [--targets attach,create,...]
[--coordinator redis|etcd]`` brings up the gate bed in cluster mode (on
the gate's fixed ports: one bed at a time) and drives concurrent volume
work through the Cinder API at both services (tools.gate.cluster_load),
most attaches to one host. Each round injects one fault in the middle of
the load:

kill      kill -9 of one cinder-volume (the two take turns); the cleanup
          watcher asks Cinder to clean up the dead one's work as soon as
          Cinder reports it down; the member is started again after the
          round's checks, and checked again
coordinator
          the coordinator stopped for 20 s, then started again

After every round: the array and Cinder agree exactly, nothing is left
in a transitional status, no volume is mapped to a host without an
attachment there, no volume twice to one host, and no lock the dead
service held stayed out of a survivor's reach longer than the lease.
Exits non-zero on any problem.

``--bench``: operations per second of one service vs the cluster under
the same load, side by side, and the io-pause of kill rounds, printed
and written to cluster-bench.json (``tox -e bench-cluster``).
"""

import argparse
import collections
import json
import os
import statistics
import sys
import threading
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

from tools.gate import bed as bed_mod  # noqa: E402
from tools.gate import cinder_api  # noqa: E402
from tools.gate import cluster as cluster_mod  # noqa: E402
from tools.gate import cluster_audit  # noqa: E402
from tools.gate import cluster_load  # noqa: E402
from tools.gate import cluster_locks  # noqa: E402
from tools.gate import coordinator as coordinator_mod  # noqa: E402

TYPES = ('dedup', 'linstor')
SETTLE_TIMEOUT = 180
COORDINATOR_OUTAGE = 20
# Operations Cinder tracks in its workers table (finished or rolled back
# by the cleanup); the others have no record of who took them.
TRACKED = ('create', 'clone', 'snapshot', 'delete')
# What each kill round's member is caught in the middle of, in turn:
# attaches most, for the io-pause of an attach the dead member had taken.
KILL_TARGETS = ('attach', 'create', 'attach', 'delete', 'attach', 'detach')
# Seconds to wait for the round's marker in the member's log, then for
# any marker; a member with nothing in flight by then is not killed.
MARKER_WAIT = 30


def say(msg):
    print('[cluster] %s' % msg, flush=True)


def _pct(values, q):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class Soak(object):

    def __init__(self, bed, seed, workers):
        self.bed, self.cluster = bed, bed.cluster
        self.api = cinder_api.CinderApi(bed.admin_env(), service=(
            'cinder', bed.passwords['service'], 'service'))
        self.api.unlimited_quotas()
        self.load = cluster_load.Load(self.api, TYPES, seed)
        self.workers = workers
        self.cleanups = []
        self.watcher = cluster_mod.CleanupWatcher(
            self.api, on_cleanup=lambda hosts, s: self.cleanups.append(
                (time.time(), hosts)))
        self.problems = []
        # Wrong-host and double mappings are looked for during the load
        # as well, not only once it has settled.
        self.sampler = cluster_audit.Sampler(bed)
        self.figures = collections.defaultdict(list)
        # Differences older than the soak (unmanaged objects a test left
        # on the array, say) are reported once, not held against it.
        self.baseline = set(cluster_audit.audit(bed)[0])
        for line in sorted(self.baseline):
            say('before the load: ' + line)

    def log(self, member):
        return os.path.join(self.bed.logs, cluster_mod.service_name(member)
                            + '.log')

    def all_logs(self):
        return [self.log(m) for m in cluster_mod.MEMBERS] + [
            os.path.join(self.bed.logs, 'cinder-api.log')]

    # -- waiting -------------------------------------------------------------
    def _members_up(self, members):
        hosts = {'%s@%s' % (m, b) for m in members
                 for b in bed_mod.BACKENDS}
        up = {s['host'] for s in self.api.services('cinder-volume')
              if s['state'] == 'up'}
        return hosts <= up

    def wait_up(self, members, timeout=120):
        deadline = time.monotonic() + timeout
        while not self._members_up(members):
            if time.monotonic() > deadline:
                raise bed_mod.BedError('%s not up after %d s' % (
                    ', '.join(members), timeout))
            time.sleep(1)

    def wait_quiet(self, timeout=SETTLE_TIMEOUT):
        """Until nothing is in a transitional status (or the timeout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stuck = cluster_audit.check_stuck(
                cluster_audit.CinderState(self.bed))
            if not stuck:
                return []
            time.sleep(2)
        return stuck

    # -- one round -----------------------------------------------------------
    def _load_thread(self, seconds):
        thread = threading.Thread(target=self.load.run, kwargs={
            'seconds': seconds, 'workers': self.workers}, daemon=True)
        thread.start()
        return thread

    def _prepare(self, count):
        """Volumes to attach in the burst, so a burst always happens."""
        threads = [threading.Thread(target=self.load.run_one,
                                    args=('create', t))
                   for t in TYPES for _i in range(count // len(TYPES))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _wait_for(self, member, targets, timeout=MARKER_WAIT):
        """Until the member logs that it is in the middle of one of
        ``targets``; returns (target, line) or (None, None).
        """
        path = self.log(member)
        with open(path, errors='replace') as f:
            f.seek(0, os.SEEK_END)
            deadline = time.monotonic() + timeout
            partial = ''
            while time.monotonic() < deadline:
                line = f.readline()
                if not line:
                    time.sleep(0.01)
                    continue
                if not line.endswith('\n'):
                    partial += line
                    continue
                line, partial = partial + line, ''
                for target in targets:
                    marker = cluster_locks.MARKERS[target]
                    if (marker in line if isinstance(marker, str)
                            else marker.search(line)):
                        return target, line
        return None, None

    def _kill_in_flight(self, number, member, target):
        """kill -9 of ``member`` right after its log shows it in the
        middle of ``target`` (or, failing that, of any operation);
        returns (death, what it was doing, [problem]).
        """
        seen, line = self._wait_for(member, [target])
        if seen is None:
            if target == 'attach':
                self.burst_threads += self.load.burst(8)
            seen, line = self._wait_for(member, sorted(cluster_locks.MARKERS))
        if seen is None:
            return None, None, ['round %d: %s had nothing in flight for '
                                '%d s, not killed' % (number, member,
                                                      2 * MARKER_WAIT)]
        with self.load.lock:
            inflight = list(self.load.inflight.values())
        death = time.time()
        self.cluster.kill(member)
        problems = []
        if not cluster_locks.in_flight_at_death(self.log(member), line):
            problems.append('round %d: the %s %s was doing had ended '
                            'before the kill' % (number, seen, member))
        say('round %d: killed %s in the middle of: %s (%s), with %d '
            'operations in flight (%s)' % (
                number, member, seen, 'still open in its log' if not
                problems else 'ENDED before the kill', len(inflight),
                ', '.join(sorted(r.name for r in inflight))))
        self.figures['kills_in_flight'].append(not problems)
        return death, inflight, problems

    def kill_round(self, number, member, seconds, target='attach'):
        survivor = [m for m in cluster_mod.MEMBERS if m != member]
        self._prepare(8)
        self.sampler.start()
        load = self._load_thread(seconds)
        time.sleep(seconds / 4.0)
        self.burst_threads = (self.load.burst(8) if target == 'attach'
                              else [])
        death, inflight, problems = self._kill_in_flight(number, member,
                                                         target)
        for t in self.burst_threads:
            t.join()
        load.join()
        self.sampler.stop()
        if death is None:
            self.problems += problems
            for p in problems:
                say('  PROBLEM: ' + p)
            self._settle()
            return {'killed': False, 'operator resets': []}
        stuck = self.wait_quiet()
        cleanup_at = [t for t, _h in self.cleanups if t > death]
        self._inflight_figures(number, inflight, death, member)
        if cleanup_at:
            self.figures['detected_s'].append(cleanup_at[0] - death)
        outcome = {'cleanup requested': bool(cleanup_at),
                   'operator resets': self.operator_reset(stuck, death)}
        self._settle()
        outcome['after the kill'] = problems + self._check(
            number, 'after the kill of %s' % member, death, member,
            survivor)
        self.problems += problems
        self.cluster.start(member)
        self.wait_up(cluster_mod.MEMBERS)
        outcome['after the restart'] = self._check(
            number, 'after %s restarted' % member)
        return outcome

    def coordinator_round(self, number, seconds):
        self.sampler.start()
        load = self._load_thread(seconds)
        time.sleep(seconds / 3.0)
        coordinator = self.cluster.coordinator
        stopped = time.time()
        coordinator.stop()
        say('round %d: %s stopped' % (number, coordinator.name))
        time.sleep(COORDINATOR_OUTAGE)
        coordinator.start()
        say('round %d: %s back after %.0f s' % (
            number, coordinator.name, time.time() - stopped))
        load.join()
        self.sampler.stop()
        stuck = self.wait_quiet()
        outcome = {'operator resets': self.operator_reset(stuck, stopped)}
        # Before the callers ask again for what failed during the outage.
        early = [p for p in cluster_audit.audit(self.bed)[0]
                 if p not in self.baseline]
        self.figures['disagreements_before_retries'].append(len(early))
        say('round %d: before the callers try again, %s' % (
            number, '; '.join(early) if early else
            'array and Cinder agree'))
        self._settle()
        failures = cluster_locks.release_failures(self.all_logs(),
                                                  since=stopped)
        self.figures['release_failures'].append(len(failures))
        outcome['after the outage'] = self._check(
            number, 'after the %s outage' % coordinator.name)
        return outcome

    def idle_locks(self):
        """Locks the coordinator still holds once a lease has passed with
        no operation running (every lock should be free by then).
        """
        deadline = time.monotonic() + coordinator_mod.LEASE + 5
        while True:
            held = self.cluster.coordinator.held_locks()
            if not held or time.monotonic() > deadline:
                return held
            time.sleep(1)

    def _inflight_figures(self, number, inflight, death, member):
        """io-pause: from the death to the end of what was in flight."""
        lines = cluster_locks.lines_since(self.log(member), min(
            [r.start for r in inflight] or [death]))
        pauses = collections.defaultdict(list)
        for rec in inflight:
            if rec.end is None:
                continue
            ids = [i for i in rec.request_ids if i]
            taken = any(when >= rec.start - 1 and any(i in line for i in ids)
                        for when, line in lines)
            kind = 'tracked' if rec.name in TRACKED else 'untracked'
            key = '%s_%s' % (kind, 'dead' if taken else 'survivor')
            self.figures['end_after_death_' + key].append(rec.end - death)
            pauses['%s by the %s' % (rec.name, 'dead member' if taken
                                     else 'survivor')].append(
                rec.end - death)
            if rec.failed_at is not None:
                # The failed first answer, before the caller's retry.
                self.figures['first_answer_after_death_' + key].append(
                    rec.failed_at - death)
            if rec.name == 'attach' and taken:
                self.figures['dead_attach'].append({
                    'round': number, 'end': rec.end - death,
                    'outcome': rec.outcome, 'first_answer': None if
                    rec.failed_at is None else rec.failed_at - death,
                    'connected': None if rec.connected_at is None
                    else rec.connected_at - death})
            self.figures['outcomes'].append('%s %s: %s %s' % (
                rec.name, 'dead' if taken else 'survivor', rec.outcome,
                rec.detail[:120]))
        # The io-pause of this round, per operation and who had taken it.
        self.figures['pause_per_round'].append(max(
            [v for vs in pauses.values() for v in vs] or [0.0]))
        for what, values in sorted(pauses.items()):
            say('  io-pause: %d %s ended %s s after the death' % (
                len(values), what, ', '.join(
                    '%.1f' % v for v in sorted(values))))

    def operator_reset(self, stuck, since):
        """The operator's step for what Cinder's cleanup does not cover.

        A resource still in a transitional status once the cleanup ran
        and the load ended was taken by the dead service in a way Cinder
        does not track: reset it and let its owner retry.
        """
        done = []
        state = cluster_audit.CinderState(self.bed)
        for vid, row in state.volumes.items():
            status = row['status']
            if status not in cluster_audit.TRANSITIONAL['volume']:
                continue
            attached = any(a['volume_id'] == vid and
                           a['attach_status'] == 'attached'
                           for a in state.attachments.values())
            target = {'extending': 'available', 'creating': 'error',
                      'deleting': 'error'}.get(
                status, 'in-use' if attached else 'available')
            self.api.reset_volume(vid, target)
            self.load.followups.append(('volume', vid))
            done.append('volume %s %s -> %s' % (vid, status, target))
        for sid, row in state.snapshots.items():
            if row['status'] in cluster_audit.TRANSITIONAL['snapshot']:
                self.api.reset_snapshot(sid, 'error')
                self.load.followups.append(('snapshot', sid))
                done.append('snapshot %s %s -> error' % (sid, row['status']))
        for line in done:
            say('  operator reset: ' + line)
        return done

    def _settle(self):
        for key, n in sorted(self.load.settle().items()):
            say('  %s: %d' % (key, n))

    def _check(self, number, when, death=None, dead=None, survivors=()):
        self.wait_quiet(60)
        problems, state = cluster_audit.audit(self.bed)
        problems = [p for p in problems if p not in self.baseline]
        problems += ['lock %s still held with nothing running' % name
                     for name in self.idle_locks()]
        problems += ['during the load (%d samples so far): %s' % (
            self.sampler.samples, p) for p in self.sampler.problems]
        self.sampler.problems = []
        if death is not None:
            rows, lock_problems = cluster_locks.after_death(
                self.log(dead), [self.log(m) for m in survivors] + [
                    os.path.join(self.bed.logs, 'cinder-api.log')],
                death, coordinator_mod.LEASE)
            problems += lock_problems
            for name, gap in rows:
                say('  lock held by %s at its death: %s; %s' % (
                    dead, name, 'a survivor waited %.1f s for it' % gap
                    if gap is not None else 'no survivor asked for it'))
                if gap is not None:
                    self.figures['dead_lock_gap_s'].append(gap)
        say('round %d %s: %d volumes, %d snapshots, %d attachments; %s' % (
            number, when, len(state.volumes), len(state.snapshots),
            len(state.attachments), 'array and Cinder agree' if not problems
            else '%d PROBLEMS' % len(problems)))
        for p in problems:
            say('  PROBLEM: ' + p)
        self.problems += ['round %d %s: %s' % (number, when, p)
                          for p in problems]
        return problems

    # -- throughput ----------------------------------------------------------
    def throughput(self, operations, repeats):
        """ops/s with both services and with one, same load, alternated.

        Each phase counts the operations that found something to work
        on (tools.gate.cluster_load.Load.run); volumes made beforehand,
        outside the timing, give the first phase as much to work on as
        the later ones.
        """
        self._prepare(8)
        rates = collections.defaultdict(list)
        for n in range(repeats):
            for mode in ('cluster', 'single'):
                if mode == 'single':
                    self.cluster.stop(cluster_mod.MEMBERS[1])
                    self.wait_down(cluster_mod.MEMBERS[1])
                self.load.records = []
                started, ended = self.load.run(operations=operations,
                                               workers=self.workers)
                ok = sum(1 for r in self.load.records if r.outcome == 'ok')
                rates[mode].append(ok / (ended - started))
                say('throughput %s #%d: %d ok of %d in %.1f s = %.2f ops/s'
                    % (mode, n + 1, ok, len(self.load.records),
                       ended - started, rates[mode][-1]))
                self._settle()
                if mode == 'single':
                    self.cluster.start(cluster_mod.MEMBERS[1])
                    self.wait_up(cluster_mod.MEMBERS)
        return {m: statistics.median(v) for m, v in rates.items()}

    def wait_down(self, member, timeout=60):
        deadline = time.monotonic() + timeout
        while self._members_up([member]) or any(
                s['state'] == 'up' for s in self.api.services('cinder-volume')
                if s['host'].startswith(member + '@')):
            if time.monotonic() > deadline:
                raise bed_mod.BedError('%s still up' % member)
            time.sleep(1)


def report(soak, resets):
    f = soak.figures
    lines = []
    for key in sorted(k for k in f if k.startswith('end_after_death_')):
        values = f[key]
        lines.append('%-44s n=%-3d max %.1f s, median %.1f s' % (
            key[len('end_after_death_'):].replace('_', ' taken by ') +
            ' operations ended after the death', len(values), max(values),
            statistics.median(values)))
    for key in sorted(k for k in f
                      if k.startswith('first_answer_after_death_')):
        values = f[key]
        lines.append('%-44s n=%-3d max %.1f s (failed; then tried again)'
                     % (key[len('first_answer_after_death_'):].replace(
                         '_', ' taken by ') + ' first answered after the '
                        'death', len(values), max(values)))
    if f['dead_attach']:
        attaches = f['dead_attach']
        connected = [a['connected'] for a in attaches
                     if a['connected'] is not None]
        ends = [a['end'] for a in attaches]
        lines.append(
            'attaches the dead member had taken: n=%d, %d connected, %s; '
            'ended (os-complete done) %.1f to %.1f s after the death' % (
                len(attaches), len(connected), 'connection handed out '
                '%.1f to %.1f s after the death' % (
                    min(connected), max(connected)) if connected else
                'none connected', min(ends), max(ends)))
        for a in attaches:
            lines.append(
                '  round %d: %s; first answer %s; connected %s; ended '
                '%.1f s' % (a['round'], a['outcome'], 'ok' if
                            a['first_answer'] is None else 'failed at '
                            '%.1f s' % a['first_answer'], '-' if
                            a['connected'] is None else '%.1f s' %
                            a['connected'], a['end']))
    if f['pause_per_round']:
        lines.append('io-pause per kill round (the last operation in flight '
                     'at the death to end): %s s' % ', '.join(
                         '%.1f' % v for v in f['pause_per_round']))
    if f['kills_in_flight']:
        lines.append('kills with the operation still open in the '
                     "member's log: %d of %d" % (
                         sum(f['kills_in_flight']), len(f['kills_in_flight'])))
    if f['detected_s']:
        lines.append('cleanup requested after the death: max %.1f s' %
                     max(f['detected_s']))
    if f['dead_lock_gap_s']:
        lines.append("longest wait of a survivor for a dead service's "
                     "lock: %.1f s (lease %d s)" % (max(f['dead_lock_gap_s']),
                                                    coordinator_mod.LEASE))
    lines.append('resources reset by the operator step: %d' % sum(
        len(r['operator resets']) for r in resets))
    if f['disagreements_before_retries']:
        lines.append('differences between array and Cinder after a '
                     'coordinator outage, before the callers tried again: '
                     '%s' % f['disagreements_before_retries'])
    if f['release_failures']:
        lines.append('lock releases that failed during coordinator '
                     'outages: %s' % f['release_failures'])
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--rounds', type=int, default=6)
    parser.add_argument('--seconds', type=int, default=60,
                        help='load per round')
    parser.add_argument('--workers', type=int, default=6)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--targets', default=','.join(KILL_TARGETS),
                        help='what the kill rounds catch members in the '
                        'middle of, in turn (%(default)s)')
    parser.add_argument('--faults', default='kill,kill,coordinator',
                        help='the rounds\' faults, in turn (kill, '
                        'coordinator; %(default)s)')
    parser.add_argument('--coordinator', default='redis',
                        choices=sorted(coordinator_mod.KINDS))
    parser.add_argument('--rpc-timeout', type=int,
                        default=cluster_mod.RPC_RESPONSE_TIMEOUT,
                        help='rpc_response_timeout of every Cinder service '
                        "(the bed's: %(default)s s)")
    parser.add_argument('--bench', action='store_true')
    parser.add_argument('--operations', type=int, default=150,
                        help='--bench: operations per throughput phase')
    parser.add_argument('--repeats', type=int, default=2,
                        help='--bench: throughput phases of each kind')
    parser.add_argument('--state-dir', default=os.path.join(ROOT, '.gate'))
    args = parser.parse_args()
    if not set(args.faults.split(',')) <= {'kill', 'coordinator'}:
        parser.error('--faults: kill or coordinator, comma-separated')
    unknown = set(args.targets.split(',')) - set(cluster_locks.MARKERS)
    if unknown:
        parser.error('--targets: unknown %s (known: %s)' % (
            ', '.join(sorted(unknown)), ', '.join(sorted(
                cluster_locks.MARKERS))))
    bed = bed_mod.Bed(args.state_dir, cluster=args.coordinator)
    bed.cluster.rpc_timeout = args.rpc_timeout
    bed.up()
    try:
        return run(bed, args)
    finally:
        bed.down()


def run(bed, args):
    soak = Soak(bed, args.seed, args.workers)
    soak.watcher.start()
    results, resets = {}, []
    try:
        if args.bench:
            results['ops_per_s'] = soak.throughput(args.operations,
                                                   args.repeats)
        kinds = args.faults.split(',') * args.rounds
        targets = args.targets.split(',') * args.rounds
        for number in range(1, args.rounds + 1):
            kind = kinds[number - 1]
            if kind == 'kill':
                member = cluster_mod.MEMBERS[number % 2]
                resets.append(soak.kill_round(number, member, args.seconds,
                                              targets.pop(0)))
            else:
                resets.append(soak.coordinator_round(number, args.seconds))
        soak.load.teardown()
        soak._check(args.rounds + 1, 'after the teardown')
    finally:
        soak.watcher.stop()
    counts = collections.Counter(
        '%s %s' % (r.name, r.outcome) for r in soak.load.records)
    say('operations: ' + ', '.join('%s %d' % kv for kv in sorted(
        counts.items())))
    for key, n in sorted(soak.load.counts.items()):
        say('%s: %d' % (key, n))
    waits = cluster_locks.waits(soak.all_logs())
    say('array and Cinder sampled during the load %d times' %
        soak.sampler.samples)
    say('lock waits: %d acquisitions, longest %s' % (len(waits), ', '.join(
        '%.1f s (%s)' % w for w in waits[:3])))
    for line in report(soak, resets):
        say(line)
    if args.bench:
        rates = results['ops_per_s']
        say('ops/s: one service %.2f, cluster %.2f (ratio %.2f)' % (
            rates['single'], rates['cluster'],
            rates['cluster'] / rates['single']))
        results['figures'] = {k: v for k, v in soak.figures.items()
                              if k != 'outcomes'}
        results['load'] = os.getloadavg()
        with open(os.path.join(ROOT, 'cluster-bench.json'), 'w') as f:
            json.dump(results, f, indent=2)
    if soak.problems:
        say('FAILED: %d problems' % len(soak.problems))
        return 1
    say('every round: array and Cinder agree, nothing stuck, no wrong or '
        'double mapping, no lock of a dead service held past the lease')
    return 0


if __name__ == '__main__':
    sys.exit(main())
