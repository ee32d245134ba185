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

"""The cluster soak's rounds: a kill -9 of one cinder-volume, or the
coordinator stopped, in the middle of the load; and the checks after
every round (tools/cluster_soak.py).

A kill waits for the member's log to show it in the middle of the
round's operation, kills it, lets the watcher have Cinder clean up, and
checks that the array and Cinder agree, that nothing is stuck and that
no lock of the dead member blocked a survivor past the lease; then
starts the member again and checks once more.
"""

import collections
import os
import threading
import time

from tools.gate import bed as bed_mod
from tools.gate import cinder_api
from tools.gate import cluster as cluster_mod
from tools.gate import cluster_audit
from tools.gate import cluster_figures
from tools.gate.cluster_figures import say
from tools.gate import cluster_load
from tools.gate import cluster_locks
from tools.gate import coordinator as coordinator_mod

TYPES = ('dedup', 'linstor')
SETTLE_TIMEOUT = 180
COORDINATOR_OUTAGE = 20
# Seconds to wait for the round's marker in the member's log, then for
# any marker; a member with nothing in flight by then is not killed.
MARKER_WAIT = 30


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
        # Locks seen with two holders (reported in the round they show).
        self.double_holds = set()
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
    def members_up(self, members):
        hosts = {'%s@%s' % (m, b) for m in members
                 for b in bed_mod.BACKENDS}
        up = {s['host'] for s in self.api.services('cinder-volume')
              if s['state'] == 'up'}
        return hosts <= up

    def wait_up(self, members, timeout=120):
        deadline = time.monotonic() + timeout
        while not self.members_up(members):
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

    def prepare(self, count):
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

    def _catch(self, member, targets, pids, timeout=MARKER_WAIT):
        """Stop the member (SIGSTOP) right after its log shows it begin
        one of ``targets``, and keep it stopped if that operation is
        still open then, or another one holds a lock of the member's
        processes ``pids``; else let it go on and wait for the next.
        Returns (target, line, what is open), or Nones when nothing came
        in ``timeout`` seconds (the member running).
        """
        deadline = time.monotonic() + timeout
        log = self.log(member)
        while True:
            seen, line = self._wait_for(member, targets, max(
                deadline - time.monotonic(), 0))
            if seen is None:
                return None, None, None
            self.cluster.pause(member)
            try:
                if cluster_locks.in_flight_at_death(log, line):
                    return seen, line, 'still open in its log'
                held = cluster_locks.held_at(log, time.time(), pids)
            except BaseException:
                self.cluster.resume(member)
                raise
            if held:
                return seen, line, 'ended; holding %s' % ', '.join(held)
            self.cluster.resume(member)

    def _kill_in_flight(self, number, member, target):
        """kill -9 of ``member`` in the middle of ``target`` (or, failing
        that, of any operation), caught as ``_catch`` does; returns
        (death, what it was doing, [problem]).
        """
        pids = {str(pid) for pid in self.cluster.group_pids(member)}
        seen, line, state = self._catch(member, [target], pids)
        if seen is None:
            if target == 'attach':
                self.burst_threads += self.load.burst(8)
            seen, line, state = self._catch(
                member, sorted(cluster_locks.MARKERS), pids)
        if seen is None:
            return None, None, ['round %d: %s had nothing in flight for '
                                '%d s, not killed' % (number, member,
                                                      2 * MARKER_WAIT)]
        death = time.time()
        self.cluster.kill(member)
        with self.load.lock:
            inflight = list(self.load.inflight.values())
        say('round %d: killed %s in the middle of: %s (%s), with %d '
            'operations in flight (%s)' % (
                number, member, seen, state, len(inflight),
                ', '.join(sorted(r.name for r in inflight))))
        # The dead member's log as it ends must agree.
        log = self.log(member)
        problems = [] if (cluster_locks.in_flight_at_death(log, line) or
                          cluster_locks.held_at(log, death, pids)) else [
            'round %d: %s was killed with no operation open in its log' %
            (number, member)]
        self.figures['kills_in_flight'].append(not problems)
        return death, inflight, problems

    def kill_round(self, number, member, seconds, target='attach'):
        survivor = [m for m in cluster_mod.MEMBERS if m != member]
        self.prepare(8)
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
            self.settle()
            return {'killed': False, 'operator resets': []}
        stuck = self.wait_quiet()
        cleanup_at = [t for t, _h in self.cleanups if t > death]
        cluster_figures.inflight_figures(self.figures, number, inflight,
                                         death, self.log(member))
        if cleanup_at:
            self.figures['detected_s'].append(cleanup_at[0] - death)
        outcome = {'cleanup requested': bool(cleanup_at),
                   'operator resets': self.operator_reset(stuck, death)}
        self.settle()
        outcome['after the kill'] = problems + self.check(
            number, 'after the kill of %s' % member, death, member,
            survivor)
        self.problems += problems
        self.cluster.start(member)
        self.wait_up(cluster_mod.MEMBERS)
        outcome['after the restart'] = self.check(
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
        self.settle()
        failures = cluster_locks.release_failures(self.all_logs(),
                                                  since=stopped)
        self.figures['release_failures'].append(len(failures))
        outcome['after the outage'] = self.check(
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

    def settle(self):
        for key, n in sorted(self.load.settle().items()):
            say('  %s: %d' % (key, n))

    def check(self, number, when, death=None, dead=None, survivors=()):
        self.wait_quiet(60)
        problems, state = cluster_audit.audit(self.bed)
        problems = [p for p in problems if p not in self.baseline]
        problems += ['lock %s still held with nothing running' % name
                     for name in self.idle_locks()]
        problems += ['during the load (%d samples so far): %s' % (
            self.sampler.samples, p) for p in self.sampler.problems]
        self.sampler.problems = []
        # However late a holder's renewals came, no lock may have had
        # two holders.
        new = [p for p in cluster_locks.two_holders(self.all_logs())[0]
               if p not in self.double_holds]
        self.double_holds.update(new)
        problems += new
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
