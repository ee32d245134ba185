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

"""The cluster soak's figures: the io-pause of each kill round and the
summary printed at the end (tools/cluster_soak.py).

The io-pause of a round runs from the death of a member to the end of
each operation that was in flight at that moment, counted by operation
and by who had taken it (the dead member, if its log names one of the
operation's request ids, else the survivor).
"""

import collections
import statistics

from tools.gate import cluster_locks
from tools.gate import coordinator as coordinator_mod

# Operations Cinder tracks in its workers table (finished or rolled back
# by the cleanup); the others have no record of who took them.
TRACKED = ('create', 'clone', 'snapshot', 'delete')


def say(msg):
    print('[cluster] %s' % msg, flush=True)


def inflight_figures(figures, number, inflight, death, log):
    """io-pause: from the death to the end of what was in flight."""
    lines = cluster_locks.lines_since(log, min(
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
        figures['end_after_death_' + key].append(rec.end - death)
        pauses['%s by the %s' % (rec.name, 'dead member' if taken
                                 else 'survivor')].append(
            rec.end - death)
        if rec.failed_at is not None:
            # The failed first answer, before the caller's retry.
            figures['first_answer_after_death_' + key].append(
                rec.failed_at - death)
        if rec.name == 'attach' and taken:
            figures['dead_attach'].append({
                'round': number, 'end': rec.end - death,
                'outcome': rec.outcome, 'first_answer': None if
                rec.failed_at is None else rec.failed_at - death,
                'connected': None if rec.connected_at is None
                else rec.connected_at - death})
        figures['outcomes'].append('%s %s: %s %s' % (
            rec.name, 'dead' if taken else 'survivor', rec.outcome,
            rec.detail[:120]))
    # The io-pause of this round, per operation and who had taken it.
    figures['pause_per_round'].append(max(
        [v for vs in pauses.values() for v in vs] or [0.0]))
    for what, values in sorted(pauses.items()):
        say('  io-pause: %d %s ended %s s after the death' % (
            len(values), what, ', '.join(
                '%.1f' % v for v in sorted(values))))


def report(soak, resets):
    """The soak's figures, one line each, for the end of the run."""
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
        lines.append('kills in the middle of an operation (open in the '
                     "member's log, or a lock of one held): %d of %d" % (
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
