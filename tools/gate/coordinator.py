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

"""The cluster's coordinator: Redis (the default) or etcd, as Debian
packages them, for Cinder's tooz locks.

Redis is the default because of how tooz 9.1 behaves when the
coordinator goes away: its redis driver forgets a lock whose release
failed and lets the lease run out, while its etcd3gw driver keeps such
a lock in its heartbeat set and renews its lease for as long as the
service lives, so one release during an outage blocks that volume or
host for good. ``tools/cluster_soak.py --coordinator etcd`` shows it.

Redis keeps its keys in an append-only file, so a restart keeps the
locks held across it; it asks for a password.
"""

import os
import signal
import subprocess
import textwrap
import time

from tools.gate import processes

REDIS_PORT = 6379
ETCD_PORTS = (2379, 2380)
# Seconds a lock of a dead service outlives it. Below the attach's lock
# wait (tools.gate.cluster.LOCK_WAIT), so that a survivor's attach waiting
# for a lock the dead member held still gets it.
LEASE = 6
# tooz's redis and etcd3gw drivers renew held locks in a heartbeat pass
# about every min(lock_timeout, membership_timeout) / 2 seconds plus the
# pass itself, which renews one lock after another and grows with the
# locks held on a saturated machine (the soak reports its longest).
HEARTBEAT = LEASE // 2


class Coordinator(object):
    """One coordinator process in the bed's state directory."""

    name = None
    ports = ()

    def __init__(self, bed):
        self.bed = bed
        self.dir = os.path.join(bed.dir, self.name)

    @property
    def log_name(self):
        return self.name

    def command(self):
        raise NotImplementedError

    def prepare(self):
        os.makedirs(self.dir, exist_ok=True)

    def backend_url(self):
        raise NotImplementedError

    def start(self):
        self.prepare()
        self.bed._spawn(self.name, self.command())
        self.bed._wait(self.name, self.ready, 60, self.log_name)

    def ready(self):
        return processes.port_open(self.ports[0])

    def pid(self):
        return self.bed._pids().get(self.name)

    def stop(self):
        """Stop the coordinator (SIGTERM, as a service manager would)."""
        from tools.gate import bed as bed_mod
        pid = self.pid()
        if pid is not None:
            processes.stop_group(pid)
        deadline = time.monotonic() + 30
        while any(processes.port_open(p) for p in self.ports):
            if time.monotonic() > deadline:
                raise bed_mod.BedError('%s did not stop' % self.name)
            time.sleep(0.2)

    def kill(self):
        pid = self.pid()
        if pid is not None:
            os.killpg(pid, signal.SIGKILL)


class Redis(Coordinator):

    name = 'redis'
    ports = (REDIS_PORT,)

    @property
    def password(self):
        return self.bed.passwords['coordinator']

    def prepare(self):
        super().prepare()
        conf = os.path.join(self.dir, 'redis.conf')
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(textwrap.dedent('''\
                bind 127.0.0.1
                port %d
                protected-mode yes
                daemonize no
                dir %s
                appendonly yes
                appendfsync everysec
                save ""
                requirepass %s
                ''') % (REDIS_PORT, self.dir, self.password))

    def command(self):
        return ['redis-server', os.path.join(self.dir, 'redis.conf')]

    def backend_url(self):
        return ('redis://:%s@127.0.0.1:%d?timeout=5&lock_timeout=%d'
                '&membership_timeout=%d' % (self.password, REDIS_PORT, LEASE,
                                            HEARTBEAT))

    def ready(self):
        result = subprocess.run(
            ['redis-cli', '-p', str(REDIS_PORT), 'ping'],
            capture_output=True, text=True,
            env=dict(self.bed.env, REDISCLI_AUTH=self.password))
        return result.stdout.strip() == 'PONG'

    def held_locks(self):
        """Names of the tooz locks the coordinator holds right now."""
        result = subprocess.run(
            ['redis-cli', '-p', str(REDIS_PORT), '--scan', '--pattern',
             '_tooz_cinder-*_lock'], capture_output=True, text=True,
            env=dict(self.bed.env, REDISCLI_AUTH=self.password))
        return sorted(line[len('_tooz_'):-len('_lock')]
                      for line in result.stdout.splitlines() if line)


class Etcd(Coordinator):

    name = 'etcd'
    ports = ETCD_PORTS

    def command(self):
        client, peer = ('http://127.0.0.1:%d' % p for p in ETCD_PORTS)
        return ['etcd', '--name', 'gate', '--data-dir',
                os.path.join(self.dir, 'data'),
                '--listen-client-urls', client,
                '--advertise-client-urls', client,
                '--listen-peer-urls', peer,
                '--initial-advertise-peer-urls', peer,
                '--initial-cluster', 'gate=' + peer]

    def backend_url(self):
        return ('etcd3+http://127.0.0.1:%d?timeout=5&lock_timeout=%d'
                '&membership_timeout=%d' % (ETCD_PORTS[0], LEASE, HEARTBEAT))

    def held_locks(self):
        import base64
        import json
        import urllib.request
        body = json.dumps({'key': base64.b64encode(b'/tooz/locks').decode(),
                           'range_end': base64.b64encode(
                               b'/tooz/locks\xff').decode(),
                           'keys_only': True}).encode()
        req = urllib.request.Request(
            'http://127.0.0.1:%d/v3/kv/range' % ETCD_PORTS[0], data=body,
            method='POST')
        with urllib.request.urlopen(req, timeout=5) as reply:
            kvs = json.load(reply).get('kvs', [])
        return sorted(base64.b64decode(kv['key']).decode()[len(
            '/tooz/locks'):] for kv in kvs)


KINDS = {'redis': Redis, 'etcd': Etcd}
