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

"""The compute bed's guest image, built from Debian packages.

Debian 12 (debootstrap, minbase) with the cloud kernel, OpenSSH, sudo,
Python 3 and pymongo. No cloud-init and no systemd: busybox init runs
``guest/guest-boot`` (drivers, a host key, then the config drive: host
name, SSH keys, static address), then keeps sshd running. FerretDB
stands in for mongod (``guest/mongod``). One ext4 partition booted by
extlinux on a 1 GiB disk, so that a 1 GiB volume holds the image;
stored as compressed qcow2.

Built once and kept in ~/.cache/cinder-flash/guest/ (with the downloaded
packages, for the next build) under a name made of a digest of the recipe
(its values and build steps here, ``guest/``, the FerretDB version):
changing any of them builds a new image. Never committed.

``ensure(server=False)`` builds the same guest without FerretDB (the
``-base`` image): what CI's small version boots; it needs no Go toolchain.
"""

import argparse
import fcntl
import glob
import hashlib
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, ROOT)

from tools import ferretdb  # noqa: E402

GUEST_FILES = os.path.join(HERE, 'guest')
CACHE = os.path.join(ferretdb.CACHE, 'guest')
RELEASE = 'bookworm'
PACKAGES = ('openssh-server', 'sudo', 'python3', 'python3-pymongo',
            'iproute2', 'linux-image-cloud-amd64', 'initramfs-tools',
            'busybox', 'procps', 'e2fsprogs')
USER = 'debian'
DISK_MIB = 1024
PART_START_SECTOR = 2048
# The initramfs holds only what finds the root disk: smaller, and quicker
# to unpack on an emulated CPU.
# (ext4 is built into the cloud kernel.)
INITRAMFS_MODULES = ('virtio_pci', 'virtio_blk', 'virtio_scsi')
# The console on the serial port: Nova keeps it as the console log.
KERNEL_ARGS = 'ro console=tty0 console=ttyS0,115200 quiet net.ifnames=0'
MBR = '/usr/lib/syslinux/mbr/mbr.bin'
HOST_TOOLS = {'debootstrap': 'debootstrap', 'extlinux': 'extlinux',
              'sfdisk': 'fdisk', 'qemu-img': 'qemu-utils',
              'mkfs.ext4': 'e2fsprogs', MBR: 'syslinux-common'}
# Where the image goes in Glance, and what it needs from a flavor.
PROPERTIES = {'hw_disk_bus': 'virtio', 'hw_vif_model': 'virtio',
              'os_distro': 'debian', 'os_version': '12'}
MIN_RAM_MIB = 384


class ImageError(Exception):
    pass


def log(msg):
    print('[image] %s' % msg, flush=True)


# A build step that runs past this is stuck (a mirror that stopped
# answering): the build fails naming the step rather than hanging CI.
STEP_TIMEOUT = 1800


def _run(*cmd, **kw):
    kw.setdefault('timeout', STEP_TIMEOUT)
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    except subprocess.TimeoutExpired:
        raise ImageError('%s: no end after %.0f s' % (
            ' '.join(cmd[:4]), kw['timeout']))
    if result.returncode != 0:
        raise ImageError('%s failed (%d): %s' % (
            ' '.join(cmd[:4]), result.returncode,
            (result.stderr or result.stdout)[-1500:]))
    return result.stdout


def digest(server=True):
    """A digest of everything the image is made of.

    The recipe's values, the steps that build it, the guest's files,
    FerretDB's version (when the image has it).
    """
    h = hashlib.sha256()
    recipe = (RELEASE, PACKAGES, USER, DISK_MIB, PART_START_SECTOR,
              INITRAMFS_MODULES, KERNEL_ARGS)
    h.update(repr(recipe).encode())
    for step in (build, _customise, _assemble):
        h.update(inspect.getsource(step).encode())
    for name in sorted(os.listdir(GUEST_FILES)):
        h.update(name.encode())
        with open(os.path.join(GUEST_FILES, name), 'rb') as f:
            h.update(f.read())
    h.update(ferretdb.VERSION.encode() if server else b'no server')
    return h.hexdigest()[:12]


def _prefix(server):
    return 'debian12-guest-' if server else 'debian12-guest-base-'


def path(server=True):
    return os.path.join(CACHE, '%s%s.qcow2' % (_prefix(server),
                                               digest(server)))


def missing_host_tools():
    return sorted({pkg for tool, pkg in HOST_TOOLS.items()
                   if not (os.path.exists(tool) if tool.startswith('/')
                           else shutil.which(tool))})


def mirror():
    """The Debian mirror this machine's apt uses."""
    if os.environ.get('CINDER_FLASH_DEBIAN_MIRROR'):
        return os.environ['CINDER_FLASH_DEBIAN_MIRROR']
    sources = glob.glob('/etc/apt/sources.list.d/*.sources') + \
        ['/etc/apt/sources.list']
    for name in sources:
        try:
            with open(name) as f:
                for line in f:
                    words = line.split()
                    if words[:1] == ['URIs:'] and len(words) > 1 and \
                            'security' not in words[1]:
                        return words[1]
                    if words[:1] == ['deb'] and 'security' not in line:
                        url = [w for w in words[1:] if '://' in w]
                        if url:
                            return url[0]
        except OSError:
            continue
    return 'http://deb.debian.org/debian'


def ensure(rebuild=False, server=True, timeout=None):
    """The path of the cached image, built first if need be.

    ``timeout``: seconds to wait for another build of it to finish.
    """
    target = path(server)
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, '.lock'), 'w') as lock:
        # Another build waits for this one (they share the packages).
        _lock(lock, timeout)
        if os.path.exists(target) and not rebuild:
            return target
        build(target, server)
    return target


def _lock(lock, timeout):
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if deadline is not None and time.monotonic() > deadline:
                raise ImageError('another build of the guest image held '
                                 '%s for %.0f s' % (lock.name, timeout))
            time.sleep(2)


def build(target, server=True):
    missing = missing_host_tools()
    if missing:
        raise ImageError('building the guest image needs the Debian '
                         'packages %s' % ', '.join(missing))
    if os.geteuid() != 0:
        raise ImageError('building the guest image needs root '
                         '(debootstrap, a loop mount for extlinux)')
    started = time.monotonic()
    server = ferretdb.ensure(log) if server else None
    work = tempfile.mkdtemp(prefix='build-', dir=CACHE)
    try:
        root = os.path.join(work, 'root')
        log('debootstrap %s from %s (a few minutes, once per recipe)' % (
            RELEASE, mirror()))
        debs = os.path.join(CACHE, 'debs')
        os.makedirs(debs, exist_ok=True)
        _run('debootstrap', '--variant=minbase', '--cache-dir=' + debs,
             '--include=' + ','.join(PACKAGES), RELEASE, root, mirror())
        fs_uuid = str(uuid.uuid4())
        _customise(root, server, fs_uuid)
        disk = _assemble(work, root, fs_uuid)
        partial = target + '.partial'
        _run('qemu-img', 'convert', '-c', '-O', 'qcow2', disk, partial)
        os.rename(partial, target)
    finally:
        _unmount_under(work)
        shutil.rmtree(work, ignore_errors=True)
    # Older recipes of this kind of image; the other kind stays.
    for old in glob.glob(os.path.join(CACHE, _prefix(server is not None) +
                                      '?' * 12 + '.qcow2')):
        if old != target:
            os.unlink(old)
    log('built %s (%.0f MiB) in %.0f s' % (
        target, os.path.getsize(target) / 2 ** 20,
        time.monotonic() - started))


def _unmount_under(path, mounts='/proc/mounts'):
    """Whatever an interrupted build left mounted in its directory.

    debootstrap mounts /proc (and more) in the tree it configures; a build
    stopped half-way leaves them, and removing the tree would walk into
    them. Deepest first.
    """
    prefix = os.path.realpath(path) + '/'
    with open(mounts) as f:
        points = [line.split()[1].replace('\\040', ' ') for line in f]
    for point in sorted((p for p in points if p.startswith(prefix)),
                        key=len, reverse=True):
        subprocess.run(['umount', '-l', point], capture_output=True)


def _write(root, rel, text, mode=0o644):
    dest = os.path.join(root, rel.lstrip('/'))
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, 'w') as f:
        f.write(text)
    os.chmod(dest, mode)


def _install(root, name, rel, mode=0o755):
    with open(os.path.join(GUEST_FILES, name)) as f:
        _write(root, rel, f.read(), mode)


def _customise(root, server, fs_uuid):
    _write(root, '/etc/fstab', 'UUID=%s / ext4 defaults 0 1\n' % fs_uuid)
    _write(root, '/etc/hostname', 'guest\n')
    _write(root, '/etc/hosts', '127.0.0.1 localhost\n')
    _run('chroot', root, 'useradd', '--create-home', '--shell', '/bin/bash',
         USER)
    _write(root, '/etc/sudoers.d/' + USER,
           '%s ALL=(ALL) NOPASSWD:ALL\n' % USER, 0o440)
    # Host keys are made on each instance's first boot, never shipped.
    for key in glob.glob(os.path.join(root, 'etc/ssh/ssh_host_*')):
        os.unlink(key)
    _write(root, '/etc/ssh/sshd_config.d/guest.conf',
           'HostKey /etc/ssh/ssh_host_ed25519_key\n'
           'PasswordAuthentication no\nKbdInteractiveAuthentication no\n'
           'PermitRootLogin prohibit-password\nUseDNS no\n')
    init = os.path.join(root, 'sbin', 'init')
    if os.path.lexists(init):
        os.unlink(init)
    os.symlink('/bin/busybox', init)
    _install(root, 'inittab', '/etc/inittab', 0o644)
    for name in ('guest-boot', 'guest-config-drive', 'guest-udhcpc'):
        _install(root, name, '/usr/local/sbin/' + name)
    if server:
        _install(root, 'mongod', '/usr/local/bin/mongod')
        shutil.copy(server, os.path.join(root, 'usr/local/bin/ferretdb'))
        os.chmod(os.path.join(root, 'usr/local/bin/ferretdb'), 0o755)
        _write(root, '/usr/local/share/ferretdb-version',
               ferretdb.VERSION + '\n')
    _write(root, '/etc/initramfs-tools/conf.d/guest', 'MODULES=list\n')
    _write(root, '/etc/initramfs-tools/modules',
           ''.join(m + '\n' for m in INITRAMFS_MODULES))
    _run('chroot', root, 'update-initramfs', '-u', '-k', 'all')
    _run('chroot', root, 'apt-get', 'clean')
    for pattern in ('var/lib/apt/lists/*', 'var/cache/apt/*.bin',
                    'var/log/*.log', 'usr/share/doc/*', 'usr/share/man/*'):
        for p in glob.glob(os.path.join(root, pattern)):
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)
            else:
                os.unlink(p)
    kernel = sorted(glob.glob(os.path.join(root, 'boot', 'vmlinuz-*')))
    initrd = sorted(glob.glob(os.path.join(root, 'boot', 'initrd.img-*')))
    if not kernel or not initrd:
        raise ImageError('no kernel or initramfs in %s/boot' % root)
    _write(root, '/boot/extlinux/extlinux.conf', (
        'DEFAULT guest\nTIMEOUT 0\nPROMPT 0\nLABEL guest\n'
        '  LINUX /boot/%s\n  INITRD /boot/%s\n'
        '  APPEND root=UUID=%s %s\n') % (
            os.path.basename(kernel[-1]), os.path.basename(initrd[-1]),
            fs_uuid, KERNEL_ARGS))


def _assemble(work, root, fs_uuid):
    """A raw disk: an MBR, one bootable ext4 partition with extlinux."""
    part = os.path.join(work, 'part.img')
    part_bytes = DISK_MIB * 2 ** 20 - PART_START_SECTOR * 512
    with open(part, 'wb') as f:
        f.truncate(part_bytes)
    # extlinux reads neither 64-bit ext4 nor metadata checksums.
    _run('mkfs.ext4', '-q', '-F', '-L', 'guest-root', '-U', fs_uuid, '-m',
         '1', '-O', '^64bit,^metadata_csum', '-d', root, part)
    mnt = os.path.join(work, 'mnt')
    os.makedirs(mnt)
    loop = _run('losetup', '--find', '--show', part).strip()
    try:
        _run('mount', loop, mnt)
        try:
            _run('extlinux', '--install',
                 os.path.join(mnt, 'boot', 'extlinux'))
        finally:
            _run('umount', mnt)
    finally:
        _run('losetup', '-d', loop)
    disk = os.path.join(work, 'disk.raw')
    with open(disk, 'wb') as f:
        f.truncate(DISK_MIB * 2 ** 20)
    _run('sfdisk', '--quiet', disk,
         input='label: dos\nstart=%d, type=83, bootable\n' %
         PART_START_SECTOR)
    _run('dd', 'if=' + part, 'of=' + disk, 'bs=1M',
         'seek=%d' % (PART_START_SECTOR * 512), 'oflag=seek_bytes',
         'conv=notrunc,sparse', 'status=none')
    _run('dd', 'if=' + MBR, 'of=' + disk, 'bs=440', 'count=1',
         'conv=notrunc', 'status=none')
    return disk


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rebuild', action='store_true')
    parser.add_argument('--base', action='store_true',
                        help='without FerretDB (CI\'s small version)')
    args = parser.parse_args()
    try:
        print(ensure(rebuild=args.rebuild, server=not args.base))
    except (ImageError, ferretdb.BuildError) as e:
        print('[image] FAILED: %s' % e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
