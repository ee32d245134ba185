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

"""Processes of the gate bed: is a port open, is a URL answering, the
last lines of a log, and stopping a process group (or Erlang's port
mapper, which RabbitMQ leaves behind).
"""

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

EPMD_PORT = 4369


def stat_fields(pid):
    """The fields of /proc/<pid>/stat after the command name (which may
    hold spaces and parentheses): [0] is the state, [2] the process
    group, [11]/[12] user and system clock ticks. None once it is gone.
    """
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_seconds(pid):
    """User plus system CPU seconds a process has used so far."""
    fields = stat_fields(pid)
    if fields is None:
        raise ProcessLookupError('no process %d' % pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def state(pid):
    """A process's state letter (T: stopped), None once it is gone."""
    fields = stat_fields(pid)
    return fields[0] if fields else None


def group_members(group):
    """The pids of every process in process group ``group``."""
    found = set()
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if fields and int(fields[2]) == group:
                found.add(int(entry))
    return found


def port_open(port):
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(('127.0.0.1', port)) == 0


def tail(path, lines=30):
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:])
    except OSError:
        return '(no log at %s)' % path


def http_ok(url):
    try:
        urllib.request.urlopen(url, timeout=2)
        return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def stop_group(pid, timeout=30):
    """SIGTERM a process group, SIGKILL it if it does not go."""
    try:
        os.killpg(pid, signal.SIGTERM)
        # A group a soak stopped (SIGSTOP) acts on SIGTERM only once
        # it runs again.
        os.killpg(pid, signal.SIGCONT)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            # Reap it if it is our child: a zombie still answers signal 0.
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:
            pass
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop_epmd():
    """rabbitmq-server leaves Erlang's port mapper behind."""
    result = subprocess.run(['ss', '-ltnpH', 'sport = :%d' % EPMD_PORT],
                            capture_output=True, text=True)
    for part in result.stdout.split('pid=')[1:]:
        pid = int(part.split(',')[0])
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while port_open(EPMD_PORT) and time.monotonic() < deadline:
        time.sleep(0.1)
