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

"""Operations per second of the cluster and of one of its services, under
the same load, alternated (``tools/cluster_soak.py --bench``).
"""

import collections
import statistics
import time

from tools.gate import bed as bed_mod
from tools.gate import cluster as cluster_mod
from tools.gate.cluster_figures import say


def throughput(soak, operations, repeats):
    """ops/s with both services and with one, same load, alternated.

    Each phase counts the operations that found something to work
    on (tools.gate.cluster_load.Load.run); volumes made beforehand,
    outside the timing, give the first phase as much to work on as
    the later ones.
    """
    soak.prepare(8)
    rates = collections.defaultdict(list)
    for n in range(repeats):
        for mode in ('cluster', 'single'):
            if mode == 'single':
                soak.cluster.stop(cluster_mod.MEMBERS[1])
                wait_down(soak, cluster_mod.MEMBERS[1])
            soak.load.records = []
            started, ended = soak.load.run(operations=operations,
                                           workers=soak.workers)
            ok = sum(1 for r in soak.load.records if r.outcome == 'ok')
            rates[mode].append(ok / (ended - started))
            say('throughput %s #%d: %d ok of %d in %.1f s = %.2f ops/s'
                % (mode, n + 1, ok, len(soak.load.records),
                   ended - started, rates[mode][-1]))
            soak.settle()
            if mode == 'single':
                soak.cluster.start(cluster_mod.MEMBERS[1])
                soak.wait_up(cluster_mod.MEMBERS)
    return {m: statistics.median(v) for m, v in rates.items()}


def wait_down(soak, member, timeout=60):
    """Until Cinder reports every backend of ``member`` down."""
    deadline = time.monotonic() + timeout
    while soak.members_up([member]) or any(
            s['state'] == 'up' for s in soak.api.services('cinder-volume')
            if s['host'].startswith(member + '@')):
        if time.monotonic() > deadline:
            raise bed_mod.BedError('%s still up' % member)
        time.sleep(1)
