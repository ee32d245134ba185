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

"""Cluster mode of the gate bed: two cinder-volume services in one
Cinder cluster, locking through a coordinator the bed starts.

Every backend of the bed is clustered: both services run the same
backend sections with their own ``host`` and one ``cluster`` name, as an
operator would run them on two machines. The API, the scheduler and
both volume services share the coordinator (cinder-api takes locks as
well, for attachment updates).

Cinder notices a dead service by its missing heartbeat, so the services
report every 2 s and count as down after 10 s (6 s counted a live member
down while a burst of deletes kept it from reporting on this two-core
machine, and its work was then cleaned up under it); the cleanup of what
a dead service left in flight is the operator's call (see
:class:`CleanupWatcher`). An attach or a detach the dead member had taken
is lost with it: cinder-api answers it as failed after
``rpc_response_timeout``, 10 s here (Cinder's default is 60 s), and the
caller tries again. An attach waits at most ``flash_lock_wait`` (8 s) for
its host's lock, which covers the lease of a lock the dead member held
(tools.gate.coordinator.LEASE, 6 s), and fails untouched past it, before
cinder-api's answer, so that nothing is mapped after cinder-api has given
up on it (a coordinator outage, say).
"""

import contextlib
import os
import signal
import textwrap
import threading
import time

from tools.gate import coordinator as coordinator_mod
from tools.gate import processes

CLUSTER = 'flash'
MEMBERS = ('gate-a', 'gate-b')
REPORT_INTERVAL = 2
SERVICE_DOWN_TIME = 10
RPC_RESPONSE_TIMEOUT = 10
LOCK_WAIT = 8
TOKEN_CACHE_TIME = 3600


def service_name(member):
    return 'cinder-volume-' + member


def reported(log, offset, members, backends):
    """Whether the scheduler's log, from ``offset`` on, shows a stats
    report of every backend from one of ``members``.
    """
    wanted = set(backends)
    with open(log, errors='replace') as f:
        f.seek(offset)
        for line in f:
            if 'Received volume service update from' not in line:
                continue
            for member in members:
                for backend in list(wanted):
                    if ' %s@%s:' % (member, backend) in line:
                        wanted.discard(backend)
    return not wanted


class Cluster(object):

    members = MEMBERS

    def __init__(self, bed, coordinator='redis'):
        self.bed = bed
        self.coordinator = coordinator_mod.KINDS[coordinator](bed)
        # Seconds cinder-api waits for a volume service's answer (an
        # attach or a detach the dead member had taken fails after it).
        self.rpc_timeout = RPC_RESPONSE_TIMEOUT

    @property
    def ports(self):
        return {'%s-%d' % (self.coordinator.name, port): port
                for port in self.coordinator.ports}

    def _conf_dir(self):
        return os.path.join(self.bed.dir, 'cinder')

    def conf_path(self):
        return os.path.join(self._conf_dir(), 'cluster.conf')

    def member_conf_path(self, member):
        return os.path.join(self._conf_dir(), member + '.conf')

    def start_coordinator(self):
        from tools.gate import bed as bed_mod
        if 'coordinator' not in self.bed.passwords:
            self.bed.passwords['coordinator'] = bed_mod._password()
            self.bed._save_secrets()
        self.coordinator.start()
        bed_mod.log('%s up for the cluster' % self.coordinator.name)

    def write_conf(self):
        """The shared part (every service) and one file per member.

        cinder-api keeps a validated token for ``token_cache_time`` (300 s
        by default); with keystonemiddleware's in-process cache every
        request in flight when it lapses asks Keystone again on its own.
        All of the load's requests carry one token, so at that moment
        they all queue on the bed's two Keystone workers (5.2 s once,
        a soak round's retried attach among them): keeping it for the
        token's lifetime (an hour) leaves that out of the io-pause.
        """
        fd = os.open(self.conf_path(), os.O_WRONLY | os.O_CREAT |
                     os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(textwrap.dedent('''\
                [DEFAULT]
                report_interval = %d
                service_down_time = %d
                rpc_response_timeout = %d
                [backend_defaults]
                flash_lock_wait = %d
                [coordination]
                backend_url = %s
                [keystone_authtoken]
                token_cache_time = %d
                ''') % (REPORT_INTERVAL, SERVICE_DOWN_TIME, self.rpc_timeout,
                        LOCK_WAIT, self.coordinator.backend_url(),
                        TOKEN_CACHE_TIME))
        for member in MEMBERS:
            with open(self.member_conf_path(member), 'w') as f:
                f.write('[DEFAULT]\nhost = %s\ncluster = %s\n' % (
                    member, CLUSTER))

    def conf_args(self):
        return ['--config-file', self.conf_path()]

    def volume_services(self):
        """(process name, extra arguments) of each cinder-volume."""
        return [(service_name(m), self.conf_args() + [
            '--config-file', self.member_conf_path(m)]) for m in MEMBERS]

    # -- members -------------------------------------------------------------
    def member_pid(self, member):
        return self.bed._pids().get(service_name(member))

    def group_pids(self, member):
        """The pids of the member's process group (parent, workers)."""
        return processes.group_members(self.member_pid(member))

    def pause(self, member, timeout=1.0):
        """SIGSTOP of the member's process group: it stops where it is
        (a signal is delivered asynchronously: until every process of
        the group shows stopped, or ``timeout``).
        """
        os.killpg(self.member_pid(member), signal.SIGSTOP)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(processes.state(pid) in ('T', None)
                   for pid in self.group_pids(member)):
                return
            time.sleep(0.005)

    def resume(self, member):
        os.killpg(self.member_pid(member), signal.SIGCONT)

    def kill(self, member):
        """kill -9 of the member's whole process group (parent, workers)."""
        pid = self.member_pid(member)
        os.killpg(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass

    def stop(self, member):
        processes.stop_group(self.member_pid(member))

    def start(self, member):
        name = service_name(member)
        self.bed.start_volume_service(name, dict(self.volume_services())[
            name])

    @contextlib.contextmanager
    def one_member_stopped(self):
        """The cluster with its last member stopped, then started again.

        The scheduler gives a new volume of a cluster the host of the
        member it met first, and keeps it while any member is up, so the
        stopped member's name would still be written into new volumes:
        once Cinder counts the member down, the scheduler starts again
        (it then meets only the survivors) and is waited for until every
        backend has reported to it.
        """
        from tools.gate import bed as bed_mod
        member = MEMBERS[-1]
        log = os.path.join(self.bed.logs, 'cinder-scheduler.log')
        self.stop(member)
        time.sleep(SERVICE_DOWN_TIME + 1)
        offset = os.path.getsize(log)
        self.bed.restart_cinder_service('scheduler')
        self.bed._wait('a report of every backend from %s' % ', '.join(
            MEMBERS[:-1]), lambda: reported(
                log, offset, MEMBERS[:-1], bed_mod.BACKENDS), 120,
            'cinder-scheduler')
        try:
            yield member
        finally:
            self.start(member)
            self.bed._wait('%s back' % member, self.bed._backends_up, 120,
                           service_name(member))


class Periodic(object):
    """``tick()`` every ``interval`` seconds in a thread, until stopped."""

    def __init__(self, interval):
        self.interval = interval
        self._stop = threading.Event()
        self._thread = None

    def _run(self):
        while not self._stop.wait(self.interval):
            self.tick()

    def tick(self):
        raise NotImplementedError

    def start(self):
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(60)


class CleanupWatcher(Periodic):
    """What an operator runs beside a cluster: when Cinder reports a
    cinder-volume service down, ask for the cleanup of its work.

    Cinder's cleanup (``POST /v3/workers/cleanup``, microversion 3.24,
    ``cinder work-cleanup``) only acts on services Cinder already sees
    down; the scheduler hands each one to its cluster, where a live
    member claims the dead one's rows of the ``workers`` table and
    finishes or rolls back each: a volume left ``deleting`` is deleted
    again, one left ``creating`` and a snapshot left ``creating`` go to
    ``error``. Nothing else is cleaned unless the dead service itself
    starts again (its own ``init_host`` runs the same cleanup).

    Calls ``on_cleanup(services, seconds)`` for each request it sends.
    """

    def __init__(self, api, interval=1.0, on_cleanup=None):
        super().__init__(interval)
        self.api = api
        self.on_cleanup = on_cleanup
        self.requests = []
        self._handled = set()

    def _down(self):
        return {s['host'] for s in self.api.services('cinder-volume')
                if s.get('cluster') and s['state'] == 'down'}

    def poll(self):
        """One round: a cleanup request if a clustered service is down."""
        down = self._down()
        if not down:
            return None
        started = time.monotonic()
        reply = self.api.workers_cleanup(binary='cinder-volume',
                                         is_up=False)
        cleaning = sorted(s['host'] for s in reply.get('cleaning', []))
        self.requests.append((time.time(), cleaning))
        if self.on_cleanup is not None:
            self.on_cleanup(cleaning, time.monotonic() - started)
        return cleaning

    def tick(self):
        # One request per service going down: a service that starts again
        # cleans up after itself, and a second request could claim the
        # work it has started since (its rows look like a dead one's
        # until its first heartbeat).
        try:
            down = self._down()
            if down - self._handled:
                self.poll()
            self._handled = down
        except Exception as e:  # keep watching through API hiccups
            self.requests.append((time.time(), 'error: %s' % e))
