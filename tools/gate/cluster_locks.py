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

"""Lock waits, read from the services' logs.

Cinder logs every coordination lock it takes (``cinder.coordination``,
debug): 'Lock "NAME" acquired by "FUNC" :: waited 0.012s' and
'Lock "NAME" released by ...'. From the dead service's log we learn
which locks it held when it died; from the survivors' logs, when each
of them got such a lock again. The gap after the death must not exceed
the coordinator's lease.
"""

import collections
import datetime
import os
import re

# Cinder's coordination module, and the driver's bounded host lock
# (cinder_driver.common.locks), which logs the same shapes.
LINE = re.compile(r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (\d+) \w+ '
                  r'(?:cinder\.coordination|cinder_driver\.common\.locks) '
                  r'.*?Lock "([^"]+)" '
                  r'(acquired|released) by "([^"]+)"(?: :: waited '
                  r'([\d.]+)s)?')
STAMP = re.compile(r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (\d+) ')
FAILED = re.compile(r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (\d+) .*Failed '
                    r'to release lock "([^"]+)"')
# tooz's own warnings when a holder's renewals come late: a heartbeat
# pass (one renewal per held lock, one after another) that outran its
# interval, and a renewal that found the lease already run out.
SLOW_BEAT = re.compile(r'Heartbeating took too long to execute \(it ran '
                       r'for ([\d.]+) seconds')
LOST_LEASE = 'Unable to heartbeat lock'
# A release is logged once it has returned, so a scheduling delay late;
# another process may log taking the lock just before that.
HANDOVER_SLACK = 0.5


def _when(stamp):
    return datetime.datetime.strptime(
        stamp, '%Y-%m-%d %H:%M:%S.%f').timestamp()


def _lock_lines(path):
    """(time, pid, lock, 'acquired'|'released'|'release-failed', waited)
    of one log's lock lines.
    """
    if not os.path.exists(path):
        return
    with open(path, errors='replace') as f:
        for line in f:
            if 'ock "' not in line:
                continue
            match = LINE.match(line)
            if match:
                stamp, pid, name, what, _func, waited = match.groups()
                yield _when(stamp), pid, name, what, float(waited or 0)
                continue
            match = FAILED.match(line)
            if match:
                yield (_when(match.group(1)), match.group(2),
                       match.group(3), 'release-failed', 0.0)


def events(path, since=None, until=None):
    """(time, lock, 'acquired'|'released', waited) from one log."""
    return [(when, name, what, waited)
            for when, _pid, name, what, waited in _lock_lines(path)
            if (since is None or when >= since) and (
                until is None or when <= until)]


def _last_lines(path):
    """{pid: time of its last line} of one log: when a process that
    never released a lock stopped (a killed one).
    """
    last = {}
    with open(path, errors='replace') as f:
        for line in f:
            match = STAMP.match(line)
            if match:
                last[match.group(2)] = match.group(1)
    return {pid: _when(stamp) for pid, stamp in last.items()}


def holds(paths):
    """{lock: [(from, to, holder)]}: every time a process held a lock,
    in the order taken; ``holder`` is (log, pid); a hold never released
    ends with the process's last line.
    """
    found = collections.defaultdict(list)
    for path in paths:
        if not os.path.exists(path):
            continue
        taken = collections.defaultdict(list)
        for when, pid, name, what, _waited in _lock_lines(path):
            if what == 'acquired':
                taken[pid, name].append(when)
            elif taken[pid, name]:
                found[name].append((taken[pid, name].pop(0), when,
                                    (path, pid)))
        last = _last_lines(path)
        for (pid, name), starts in taken.items():
            found[name] += [(start, last[pid], (path, pid))
                            for start in starts]
    for rows in found.values():
        rows.sort()
    return found


def two_holders(paths, slack=HANDOVER_SLACK):
    """(problems, closest): a problem for each lock taken while another
    hold of it (by another process, or another thread of the same one)
    had not ended (beyond ``slack``), and the closest handover in
    seconds (None: none).
    """
    problems, closest = [], None
    for name, rows in holds(paths).items():
        for held, taken in zip(rows, rows[1:]):
            gap = taken[0] - held[1]
            closest = gap if closest is None else min(closest, gap)
            if gap < -slack:
                problems.append(
                    'lock %s taken by pid %s of %s %.1f s before pid %s of '
                    '%s released it' % (
                        name, taken[2][1], os.path.basename(taken[2][0]),
                        -gap, held[2][1], os.path.basename(held[2][0])))
    return problems, closest


def late_renewals(paths, since=None):
    """(leases that ran out under a live holder, longest heartbeat pass
    in seconds) from tooz's warnings in the logs.
    """
    lost, longest = 0, 0.0
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path, errors='replace') as f:
            for line in f:
                if 'eartbeat' not in line:
                    continue
                match = STAMP.match(line)
                if not match or (since is not None and
                                 _when(match.group(1)) < since):
                    continue
                if LOST_LEASE in line:
                    lost += 1
                slow = SLOW_BEAT.search(line)
                if slow:
                    longest = max(longest, float(slow.group(1)))
    return lost, longest


def held_at(path, moment, pids=None):
    """Locks the service writing ``path`` held at ``moment`` (those of
    its processes ``pids`` only, if given: not those an earlier process
    of the service died with).
    """
    held = collections.Counter()
    for when, by, name, what, _w in _lock_lines(path):
        if when > moment or (pids is not None and by not in pids):
            continue
        if what == 'acquired':
            held[name] += 1
        elif held[name]:
            held[name] -= 1
    return sorted(name for name, n in held.items() if n > 0)


def after_death(dead_log, survivor_logs, death, lease, until=None):
    """How long each lock the dead service held kept a survivor waiting.

    Returns (rows, problems): one row per lock the dead one held, with
    the seconds a survivor waited for it after the death (from the death
    or from its own request, whichever came later, to the moment it got
    the lock; None if no survivor asked for it), and a problem for each
    survivor still kept waiting longer than the lease after the death
    (plus one second of polling): the lease should have freed the lock
    by then, however late the survivor asked.
    """
    held = held_at(dead_log, death)
    rows, problems = [], []
    blocked, freed = {}, {}
    for path in survivor_logs:
        for when, name, what, waited in events(path, since=death,
                                               until=until):
            if what == 'acquired' and name in held and name not in blocked:
                blocked[name] = when - max(death, when - waited)
                freed[name] = when - death
    for name in held:
        rows.append((name, blocked.get(name)))
        if blocked.get(name, 0) > 0.5 and freed[name] > lease + 1.0:
            problems.append('lock %s of the dead service kept a survivor '
                            'waiting %.1f s, until %.1f s after the death '
                            '(lease %d s)' % (name, blocked[name],
                                              freed[name], lease))
    return rows, problems


def waits(paths, since=None, until=None):
    """Every lock wait of the given logs: (waited, lock)."""
    found = []
    for path in paths:
        for _when_, name, what, waited in events(path, since, until):
            if what == 'acquired':
                found.append((waited, name))
    return sorted(found, reverse=True)


def lines_since(path, since):
    """(time, line) of a log's lines from ``since`` on."""
    found = []
    with open(path, errors='replace') as f:
        for line in f:
            match = STAMP.match(line)
            if match:
                when = _when(match.group(1))
                if when >= since:
                    found.append((when, line))
    return found


def release_failures(paths, since=None, until=None):
    return [(when, name) for path in paths
            for when, name, what, _w in events(path, since, until)
            if what == 'release-failed']


# Log lines that show a member in the middle of an operation: the kill
# comes right after one (the member then holds the operation's lock or
# runs its task). The attach lock's owner is the driver call
# (cinder_driver.common.locks).
MARKERS = {
    'attach': 'acquired by "initialize_connection"',
    'detach': 'acquired by "terminate_connection"',
    'delete': re.compile(r'flash-volume-[^"]*" acquired by "delete_volume"'),
    'create': re.compile(r"CreateVolumeFromSpecTask;volume:create'.*"
                         r"into state 'RUNNING'"),
}
TASK = re.compile(r"\(([0-9a-f-]{36})\) transitioned into state")


def ended_by(marker_line):
    """A test of whether a later log line ends what ``marker_line``
    began: the lock's release, or the task's last state.
    """
    m = re.search(r'Lock "([^"]+)" acquired', marker_line)
    if m:
        ends = ('Lock "%s" released' % m.group(1),
                'Failed to release lock "%s"' % m.group(1))
        return lambda line: any(e in line for e in ends)
    task = TASK.search(marker_line).group(1)
    return lambda line: task in line and (
        "into state 'SUCCESS'" in line or "into state 'FAILURE'" in line)


def in_flight_at_death(log, marker_line):
    """Whether the dead member's log ends with ``marker_line``'s
    operation still open (nothing after it ended it).
    """
    ended = ended_by(marker_line)
    with open(log, errors='replace') as f:
        lines = f.read().splitlines()
    try:
        after = lines[lines.index(marker_line.rstrip('\n')) + 1:]
    except ValueError:
        return False
    return not any(ended(line) for line in after)
