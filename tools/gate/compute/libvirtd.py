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

"""libvirtd for the compute bed, apart from the host's libvirt.

libvirtd runs in a mount namespace of its own (with a private /run) in
which the bed's directories stand in for /etc/libvirt, /run/libvirt,
/var/lib/libvirt, /var/log/libvirt and /var/cache/libvirt: its
configuration, domain definitions, logs and state live in the bed's
directory, and nothing on the host changes. Its socket is in the bed's
directory too; Nova reaches it through ``connection_uri``.

QEMU runs guests as root, without a security driver, a mount namespace
or cgroups (the machine has no systemd), and writes their consoles to
files (no virtlogd).
"""

import glob
import os
import signal
import subprocess
import time

SYSTEM_DIRS = ('/etc/libvirt', '/run/libvirt', '/var/lib/libvirt',
               '/var/log/libvirt', '/var/cache/libvirt')
QEMU_CONF = '''\
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
stdio_handler = "file"
namespaces = [ ]
cgroup_controllers = [ ]
'''
LIBVIRTD_CONF = '''\
unix_sock_dir = "%(sock)s"
unix_sock_rw_perms = "0700"
unix_sock_ro_perms = "0700"
unix_sock_admin_perms = "0700"
auth_unix_ro = "none"
auth_unix_rw = "none"
log_outputs = "3:file:%(log)s"
'''


class LibvirtError(Exception):
    pass


class Libvirtd(object):

    def __init__(self, base_dir, logs_dir):
        self.dir = os.path.join(base_dir, 'libvirt')
        self.sock_dir = os.path.join(self.dir, 'sock')
        self.logs = logs_dir
        # (bed directory, the system directory it stands in for)
        self.binds = [
            (os.path.join(self.dir, d.strip('/').replace('/', '-')), d)
            for d in SYSTEM_DIRS]

    @property
    def uri(self):
        return 'qemu:///system?socket=%s/libvirt-sock' % self.sock_dir

    @property
    def conf(self):
        return os.path.join(self.dir, 'etc-libvirt', 'libvirtd.conf')

    def prepare(self):
        for src, _dst in self.binds:
            os.makedirs(src, exist_ok=True)
        os.makedirs(self.sock_dir, exist_ok=True)
        etc = os.path.join(self.dir, 'etc-libvirt')
        with open(os.path.join(etc, 'qemu.conf'), 'w') as f:
            f.write(QEMU_CONF)
        with open(self.conf, 'w') as f:
            f.write(LIBVIRTD_CONF % {
                'sock': self.sock_dir,
                'log': os.path.join(self.logs, 'libvirtd-debug.log')})

    def command(self):
        """libvirtd behind its bind mounts, in a mount namespace."""
        # The host has no /run/libvirt: a private /run holds one.
        script = ('set -e; mount -t tmpfs -o mode=0755 bed-run /run; '
                  'mkdir /run/libvirt; '
                  'while [ $# -gt 1 ] && [ "$1" != -- ]; do '
                  'mount --bind "$1" "$2"; shift 2; done; shift; '
                  'exec "$@"')
        args = []
        for src, dst in self.binds:
            args += [src, dst]
        return (['unshare', '--mount', '--propagation', 'private', 'sh',
                 '-c', script, 'libvirtd-bed'] + args +
                ['--', 'libvirtd', '--config', self.conf, '--pid-file',
                 os.path.join(self.dir, 'libvirtd.pid')])

    def virsh(self, *args, timeout=60):
        return subprocess.run(['virsh', '-c', self.uri] + list(args),
                              capture_output=True, text=True,
                              timeout=timeout)

    def ready(self):
        try:
            return self.virsh('version', timeout=20).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def domains(self):
        result = self.virsh('list', '--all', '--name', timeout=30)
        if result.returncode != 0:
            return None
        return [name for name in result.stdout.split() if name]

    def qemu_pids(self):
        """QEMU processes libvirtd started (from its own state files)."""
        pids = []
        state = [src for src, dst in self.binds if dst == '/run/libvirt'][0]
        for path in glob.glob(os.path.join(state, 'qemu', '*.pid')):
            try:
                with open(path) as f:
                    pids.append(int(f.read().strip()))
            except (OSError, ValueError):
                pass
        return pids

    def destroy_all(self):
        """Stop and undefine every domain; kill QEMUs libvirtd lost.

        Returns the names of the domains that were still there.
        """
        names = self.domains() or []
        for name in names:
            self.virsh('destroy', name, timeout=60)
            self.virsh('undefine', name, '--nvram', timeout=60)
        for pid in self.qemu_pids():
            _kill(pid)
        return names


def _kill(pid, timeout=20):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)
