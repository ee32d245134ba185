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
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

from tools.gate import bed as bed_mod  # noqa: E402
from tools.gate import cluster as cluster_mod  # noqa: E402
from tools.gate import cluster_figures  # noqa: E402
from tools.gate.cluster_figures import say  # noqa: E402
from tools.gate import cluster_locks  # noqa: E402
from tools.gate import cluster_rounds  # noqa: E402
from tools.gate import cluster_throughput  # noqa: E402
from tools.gate import coordinator as coordinator_mod  # noqa: E402

# What each kill round's member is caught in the middle of, in turn:
# attaches most, for the io-pause of an attach the dead member had taken.
KILL_TARGETS = ('attach', 'create', 'attach', 'delete', 'attach', 'detach')


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
    soak = cluster_rounds.Soak(bed, args.seed, args.workers)
    soak.watcher.start()
    results, resets = {}, []
    try:
        if args.bench:
            results['ops_per_s'] = cluster_throughput.throughput(
                soak, args.operations, args.repeats)
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
        soak.check(args.rounds + 1, 'after the teardown')
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
    _two, closest = cluster_locks.two_holders(soak.all_logs())
    lost, longest = cluster_locks.late_renewals(soak.all_logs())
    say('locks: closest handover between two processes %s; leases that ran '
        'out under a live holder %d; longest heartbeat pass %.1f s (lease '
        '%d s)' % ('%.3f s' % closest if closest is not None else 'none',
                   lost, longest, coordinator_mod.LEASE))
    for line in cluster_figures.report(soak, resets):
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
