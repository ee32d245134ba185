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

"""An iSCSI LUN as a local block device, without a kernel initiator.

Our machines' kernels have no iSCSI initiator, NBD or device-mapper.
qemu-storage-daemon logs in from user space (libiscsi) and exports the LUN
as a file through FUSE; a loop device on that file is the block device.

The loop device is always buffered. ``losetup --direct-io=on`` over a
qemu-storage-daemon 7.2 FUSE export lost or misplaced concurrent O_DIRECT
writes (190 of 400) and corrupted a guest's ext4; buffered it lost none.

Each attachment keeps its state in a directory of its own (daemon PID,
export file, loop device, QMP socket, CHAP secret readable by root only),
so that another process can detach it, and ``detach_all`` can remove what
a crashed service left behind.
"""

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time

QSD = 'qemu-storage-daemon'
NODE = 'lun'


class AttachError(Exception):
    pass


class Target(object):
    """Where a LUN is and who logs in to it."""

    def __init__(self, portal, iqn, lun, initiator, chap=None):
        host, _sep, port = portal.rpartition(':')
        if not host or not port.isdigit():
            raise AttachError('iSCSI portal %r is not host:port' % (portal,))
        if not iqn or not initiator:
            raise AttachError('an iSCSI target and an initiator name are '
                              'both needed (target %r, initiator %r)' % (
                                  iqn, initiator))
        self.portal, self.iqn, self.lun = portal, iqn, int(lun)
        self.initiator = initiator
        self.chap = chap

    @property
    def key(self):
        raw = '%s|%s|%d|%s' % (self.portal, self.iqn, self.lun,
                               self.initiator)
        return 'lun%d-%s' % (self.lun, hashlib.sha256(
            raw.encode()).hexdigest()[:12])

    def blockdev(self, secret_id=None):
        """qemu's blockdev options for the LUN."""
        opts = {'driver': 'iscsi', 'node-name': NODE, 'transport': 'tcp',
                'portal': self.portal, 'target': self.iqn, 'lun': self.lun,
                'initiator-name': self.initiator}
        if self.chap:
            opts.update(user=self.chap[0], **{'password-secret': secret_id})
        return opts


def _run(cmd, timeout, check=True):
    try:
        result = subprocess.run(cmd, capture_output=True, text=True,
                                timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AttachError('%s did not finish in %ss' % (' '.join(cmd[:2]),
                                                        timeout))
    if check and result.returncode != 0:
        raise AttachError('%s failed (%d): %s' % (
            ' '.join(cmd[:2]), result.returncode,
            (result.stderr or result.stdout).strip()[-800:]))
    return result


def _tail(path, lines=15):
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-lines:]).strip()
    except OSError:
        return ''


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mounted(path):
    path = os.path.realpath(path)
    with open('/proc/self/mountinfo') as f:
        return any(line.split()[4] == path for line in f)


def qmp(sock_path, command, arguments=None, timeout=30):
    """One QMP command on the daemon's monitor; returns its reply."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(sock_path)
        stream = s.makefile('rwb')

        def call(name, args=None):
            msg = {'execute': name}
            if args:
                msg['arguments'] = args
            stream.write(json.dumps(msg).encode() + b'\n')
            stream.flush()
            while True:
                line = stream.readline()
                if not line:
                    raise AttachError('QMP connection closed during %s' %
                                      name)
                reply = json.loads(line)
                if 'error' in reply:
                    raise AttachError('QMP %s: %s' % (
                        name, reply['error'].get('desc')))
                if 'return' in reply:
                    return reply['return']
                # Events arrive in between; they are not replies.

        stream.readline()           # the greeting
        call('qmp_capabilities')
        return call(command, arguments)


class Attachment(object):

    def __init__(self, base_dir, target):
        self.target = target
        self.dir = os.path.join(base_dir, target.key)
        self.export = os.path.join(self.dir, 'lun')
        self.pidfile = os.path.join(self.dir, 'qsd.pid')
        self.monitor = os.path.join(self.dir, 'qmp.sock')
        self.secret = os.path.join(self.dir, 'chap.secret')
        self.loopfile = os.path.join(self.dir, 'loop')
        self.logfile = os.path.join(self.dir, 'qsd.log')

    # -- state ---------------------------------------------------------------
    @property
    def pid(self):
        try:
            with open(self.pidfile) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    @property
    def loop(self):
        try:
            with open(self.loopfile) as f:
                return f.read().strip() or None
        except OSError:
            return None

    def _loop_backing(self, loop):
        name = os.path.basename(loop)
        try:
            with open('/sys/block/%s/loop/backing_file' % name) as f:
                return f.read().strip()
        except OSError:
            return None

    def _bound_here(self, loop):
        """Whether ``loop`` is bound to this attachment's export."""
        return self._loop_backing(loop) == os.path.realpath(self.export)

    def attached(self):
        """The loop device if this LUN is attached and served, else None."""
        loop, pid = self.loop, self.pid
        if loop and pid and _alive(pid) and self._bound_here(loop):
            return loop
        return None

    # -- attach --------------------------------------------------------------
    def attach(self, timeout=90):
        """Log in, export, bind a buffered loop device; returns its path."""
        existing = self.attached()
        if existing:
            return existing
        # What a failed earlier attempt left goes first.
        self.detach(timeout=timeout, force=True)
        os.makedirs(self.dir, mode=0o700)
        try:
            self._start_daemon(timeout)
            loop = _run(['losetup', '--find', '--show', '--direct-io=off',
                         self.export], timeout).stdout.strip()
            with open(self.loopfile, 'w') as f:
                f.write(loop)
            self._check_buffered(loop)
            return loop
        except BaseException:
            self.detach(timeout=timeout, force=True)
            raise

    def _start_daemon(self, timeout):
        open(self.export, 'w').close()
        cmd = [QSD, '--daemonize', '--pidfile', self.pidfile]
        secret_id = None
        if self.target.chap:
            secret_id = 'chap'
            fd = os.open(self.secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                         0o600)
            with os.fdopen(fd, 'w') as f:
                f.write(self.target.chap[1])
            cmd += ['--object', 'secret,id=%s,file=%s' % (secret_id,
                                                          self.secret)]
        cmd += ['--blockdev', json.dumps(self.target.blockdev(secret_id)),
                '--export', 'type=fuse,id=export,node-name=%s,mountpoint=%s,'
                'writable=on' % (NODE, self.export),
                '--chardev', 'socket,id=qmp,path=%s,server=on,wait=off' %
                self.monitor, '--monitor', 'chardev=qmp']
        with open(self.logfile, 'w') as log:
            try:
                # --daemonize: the parent exits once the export is up.
                result = subprocess.run(cmd, stdout=log,
                                        stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL,
                                        timeout=timeout)
            except subprocess.TimeoutExpired:
                raise AttachError('qemu-storage-daemon did not log in to '
                                  '%s LUN %d at %s in %ss' % (
                                      self.target.iqn, self.target.lun,
                                      self.target.portal, timeout))
        if result.returncode != 0 or not self.pid:
            raise AttachError('qemu-storage-daemon could not attach %s LUN '
                              '%d at %s: %s' % (
                                  self.target.iqn, self.target.lun,
                                  self.target.portal, _tail(self.logfile)))
        if os.path.getsize(self.export) == 0:
            raise AttachError('the FUSE export of %s LUN %d is empty' % (
                self.target.iqn, self.target.lun))

    def _check_buffered(self, loop):
        name = os.path.basename(loop)
        with open('/sys/block/%s/loop/dio' % name) as f:
            if f.read().strip() != '0':
                raise AttachError('%s came up with direct I/O; only a '
                                  'buffered loop device is safe on a FUSE '
                                  'export' % loop)

    # -- resize --------------------------------------------------------------
    def lun_size(self, timeout=60):
        """The LUN's size as the target reports it now (a second login)."""
        cmd = ['qemu-img', 'info', '--output=json']
        secret_id = None
        if self.target.chap:
            secret_id = 'chap'
            cmd += ['--object', 'secret,id=chap,file=%s' % self.secret]
        opts = self.target.blockdev(secret_id)
        del opts['node-name']
        cmd += ['--image-opts', ','.join('%s=%s' % kv for kv in opts.items())]
        return int(json.loads(_run(cmd, timeout).stdout)['virtual-size'])

    def resize(self, timeout=60):
        """Follow a LUN that grew; returns the block device's new size."""
        loop = self.attached()
        if loop is None:
            raise AttachError('%s LUN %d is not attached here' % (
                self.target.iqn, self.target.lun))
        size = self.lun_size(timeout)
        qmp(self.monitor, 'block_resize', {'node-name': NODE, 'size': size},
            timeout=timeout)
        deadline = time.monotonic() + timeout
        while True:
            # The kernel caches the FUSE file's size for a moment.
            _run(['losetup', '--set-capacity', loop], timeout)
            now = int(_run(['blockdev', '--getsize64', loop],
                           timeout).stdout)
            if now == size:
                return size
            if time.monotonic() > deadline:
                raise AttachError('%s stayed at %d bytes; the LUN has %d' % (
                    loop, now, size))
            time.sleep(0.5)

    # -- detach --------------------------------------------------------------
    def detach(self, timeout=60, force=False):
        """Unbind the loop device, stop the daemon, remove the state.

        Without ``force`` a loop device still in use is an error and the
        daemon keeps serving it; with it the daemon goes regardless.
        """
        if not os.path.isdir(self.dir):
            return
        loop = self.loop
        if loop and self._bound_here(loop):
            _run(['blockdev', '--flushbufs', loop], timeout, check=False)
            _run(['losetup', '--detach', loop], timeout, check=False)
            deadline = time.monotonic() + timeout
            # The kernel unbinds a busy device once its last user closes
            # it. The moment it is free, another process's
            # ``losetup --find`` may take it for a file of its own (the
            # compute bed builds its guest image that way), so the wait
            # is over when the device no longer serves this export, not
            # when it serves nothing.
            while self._bound_here(loop):
                if time.monotonic() > deadline:
                    if not force:
                        raise AttachError('%s is still in use after %ss' % (
                            loop, timeout))
                    break
                time.sleep(0.1)
        self._stop_daemon(timeout)
        if _mounted(self.export):
            _run(['fusermount3', '-u', '-z', self.export], timeout,
                 check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def _stop_daemon(self, timeout):
        pid = self.pid
        if not pid:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + timeout / 2
            while time.monotonic() < deadline:
                try:
                    # Reap it if it is our child.
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
                if not _alive(pid):
                    return
                time.sleep(0.1)


def detach_all(base_dir, timeout=60):
    """Remove every attachment under ``base_dir``; returns their names."""
    removed = []
    if not os.path.isdir(base_dir):
        return removed
    for name in sorted(os.listdir(base_dir)):
        state = os.path.join(base_dir, name)
        if not os.path.isdir(state):
            continue
        Attachment(base_dir, _Named(name)).detach(timeout=timeout,
                                                  force=True)
        removed.append(name)
    return removed


class _Named(object):
    """A target known only by its state directory's name."""

    def __init__(self, key):
        self.key = key
