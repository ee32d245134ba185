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

"""Which LINSTOR properties the reference array accepts, and their values.

LINSTOR 1.33 accepts a key only if it is whitelisted for the kind of
object it is set on: the free-form ``Aux/`` namespace, the DRBD options it
knows (``DrbdOptions/...``) and its own plain keys. Anything else, a key
with a leading space included, is refused as "not whitelisted" (LINSTOR
also refuses deleting such a key). Values of known keys are checked too.
A refused property is FAIL_INVLD_PROP.
"""

import re

YES_NO = ('yes', 'no')
ON_OFF_BOOL = ('true', 'false', 'yes', 'no')
# option -> allowed values (tuple), a (low, high) integer range, or None.
DRBD_OPTIONS = {
    'Net/protocol': ('A', 'B', 'C'),
    'Net/allow-two-primaries': YES_NO,
    'Net/allow-remote-read': YES_NO,
    'Net/always-asbp': YES_NO,
    'Net/tcp-cork': YES_NO,
    'Net/use-rle': YES_NO,
    'Net/csums-after-crash-only': YES_NO,
    'Net/max-buffers': (32, 131072),
    'Net/max-epoch-size': (1, 20000),
    'Net/ko-count': (0, 200),
    'Net/timeout': (1, 600),
    'Net/connect-int': (1, 120),
    'Net/ping-int': (1, 120),
    'Net/ping-timeout': (1, 300),
    'Net/socket-check-timeout': (0, 300),
    'Net/sndbuf-size': (0, 10485760),
    'Net/rcvbuf-size': (0, 10485760),
    'Net/congestion-fill': (0, 20971520),
    'Net/congestion-extents': (67, 65534),
    'Net/on-congestion': ('block', 'pull-ahead', 'disconnect'),
    'Net/fencing': ('dont-care', 'resource-only', 'resource-and-stonith'),
    'Net/rr-conflict': ('disconnect', 'call-pri-lost', 'violently',
                        'retry-connect', 'auto-discard'),
    'Net/after-sb-0pri': None, 'Net/after-sb-1pri': None,
    'Net/after-sb-2pri': None,
    'Net/cram-hmac-alg': None, 'Net/csums-alg': None,
    'Net/data-integrity-alg': None, 'Net/shared-secret': None,
    'Net/transport': None, 'Net/verify-alg': None,
    'Disk/disk-flushes': YES_NO,
    'Disk/md-flushes': YES_NO,
    'Disk/disk-barrier': YES_NO,
    'Disk/disk-drain': YES_NO,
    'Disk/al-updates': YES_NO,
    'Disk/disable-write-same': YES_NO,
    'Disk/discard-zeroes-if-aligned': YES_NO,
    'Disk/al-extents': (67, 65534),
    'Disk/disk-timeout': (0, 6000),
    'Disk/on-io-error': ('pass_on', 'call-local-io-error', 'detach'),
    'Disk/read-balancing': ('prefer-local', 'prefer-remote', 'round-robin',
                            'least-pending', 'when-congested-remote',
                            '32K-striping', '64K-striping', '128K-striping',
                            '256K-striping', '512K-striping',
                            '1M-striping'),
    'Disk/resync-after': None,
    'Disk/rs-discard-granularity': (0, 1048576),
    'PeerDevice/bitmap': YES_NO,
    'PeerDevice/c-delay-target': (1, 100),
    'PeerDevice/c-fill-target': (0, 1048576),
    'PeerDevice/c-max-rate': (250, 4194304),
    'PeerDevice/c-min-rate': (0, 4194304),
    'PeerDevice/c-plan-ahead': (0, 300),
    'PeerDevice/resync-rate': (1, 8388608),
    'Resource/auto-promote': YES_NO,
    'Resource/auto-promote-timeout': (0, 600),
    'Resource/cpu-mask': None,
    'Resource/max-io-depth': (4, 4294967295),
    'Resource/on-no-data-accessible': ('io-error', 'suspend-io'),
    'Resource/on-no-quorum': ('io-error', 'suspend-io'),
    'Resource/peer-ack-delay': (1, 10000),
    'Resource/peer-ack-window': (2048, 204800),
    'Resource/quorum': ('off', 'majority', 'all') + tuple(
        str(n) for n in range(1, 33)),
    'Resource/quorum-minimum-redundancy': ('off', 'majority', 'all') + tuple(
        str(n) for n in range(1, 33)),
    'Resource/twopc-retry-timeout': (1, 50),
    'Resource/twopc-timeout': (50, 600),
    'auto-add-quorum-tiebreaker': ON_OFF_BOOL,
    'auto-quorum': ('io-error', 'suspend-io', 'disabled'),
    'auto-diskful': (0, 1000000),
    'auto-diskful-allow-cleanup': ON_OFF_BOOL,
    'AutoEvictAfterTime': (0, 1000000),
    'AutoEvictAllowEviction': ON_OFF_BOOL,
    'AutoEvictMaxDisconnectedNodes': (0, 100),
    'AutoEvictMinReplicaCount': (1, 32),
}
HANDLERS = re.compile(r'^Handlers/[a-z-]+$')
PROXY = re.compile(r'^(Proxy|ProxyCompression)/[a-z-]+$')
FREE = 'Aux/'
NAME = re.compile(r'[a-zA-Z0-9_][a-zA-Z0-9_-]{2,47}')
TRUE_FALSE = ('true', 'false')
LONG = (-2**63, 2**63 - 1)
SYMLINK_OR_NAME = re.compile(r'|\.internal|[a-zA-Z0-9_][a-zA-Z0-9_-]{2,47}')
# Kinds of objects (the wire's object names) a key may be set on.
CTRL, NODE, POOL = 'ctrl_conf', 'node', 'stor_pool'
GROUP, DFN, RSC = 'rsc_grp', 'rsc_dfn', 'rsc'
VGRP, VDFN = 'vlm_grp', 'vlm_dfn'
VOLUMES = (CTRL, GROUP, DFN, VGRP, VDFN)
RESOURCES = (CTRL, NODE, GROUP, DFN, RSC)
ALL = (CTRL, NODE, POOL, GROUP, DFN, RSC, VGRP, VDFN)
# LINSTOR's plain keys (a subset of its whitelist: those a Cinder
# deployment meets): key -> (kinds, rule); rules as in DRBD_OPTIONS, plus
# a compiled pattern the whole value must match, or 'float'.
KEYS = {
    'StorPoolName': (ALL, NAME),
    'StorPoolNameDrbdMeta': ((NODE, GROUP, DFN, RSC, VGRP, VDFN),
                             SYMLINK_OR_NAME),
    'PeerSlotsNewResource': ((CTRL, GROUP, DFN), (1, 31)),
    'PeerSlots': ((RSC,), (1, 31)),
    'AutoplaceTarget': ((CTRL, NODE), TRUE_FALSE),
    'Site': ((CTRL, NODE), None),
    'PrefNic': (RESOURCES, NAME),
    'FileSystem/Type': ((GROUP, DFN, RSC, VGRP, VDFN), ('ext4', 'xfs')),
    'FileSystem/User': ((GROUP, DFN, RSC, VGRP, VDFN), None),
    'FileSystem/Group': ((GROUP, DFN, RSC, VGRP, VDFN), None),
    'FileSystem/MkfsParams': ((GROUP, DFN, RSC, VGRP, VDFN), None),
    'StorDriver/LvcreateType': (VOLUMES, (
        'linear', 'striped', 'mirror', 'raid0', 'raid1', 'raid4', 'raid5',
        'raid6', 'raid10', 'lzma', 'lz4')),
    'StorDriver/LvcreateOptions': (ALL, None),
    'StorDriver/LvcreateSnapshotOptions': (ALL, None),
    'StorDriver/StorPoolName': ((POOL,), re.compile(r'[a-zA-Z0-9_/-]+')),
    'DrbdCurrentGi': ((VDFN,), re.compile(r'[a-fA-F0-9]{16}')),
    'MaxOversubscriptionRatio': ((CTRL, POOL), 'float'),
    'MaxFreeCapacityOversubscriptionRatio': ((CTRL, POOL), 'float'),
    'MaxTotalCapacityOversubscriptionRatio': ((CTRL, POOL), 'float'),
    'Autoplacer/Weights/MaxFreeSpace': ((CTRL,), 'float'),
    'Autoplacer/Weights/MinReservedSpace': ((CTRL,), 'float'),
    'Autoplacer/Weights/MinRscCount': ((CTRL,), 'float'),
    'Autoplacer/Weights/MaxThroughput': ((CTRL,), 'float'),
    'UseZFSClone': ((CTRL, GROUP, DFN), TRUE_FALSE),
    'DrbdOptions/ExactSize': ((GROUP, DFN), TRUE_FALSE),
    'DrbdOptions/SkipDisk': ((CTRL, NODE, POOL, GROUP, DFN, RSC), ('True',)),
    'NVMe/TRType': ((CTRL, GROUP, DFN), ('rdma', 'tcp')),
    'NVMe/Port': ((CTRL, GROUP, DFN), (1, 65535)),
    'Writecache/Options/LowWatermark': (VOLUMES, LONG),
    'Writecache/Options/HighWatermark': (VOLUMES, LONG),
    'Writecache/Options/AutocommitBlocks': (VOLUMES, LONG),
    'Writecache/Options/AutocommitTime': (VOLUMES, LONG),
}
for _io in ('read', 'write', 'read_iops', 'write_iops'):
    KEYS['sys/fs/blkio_throttle_' + _io] = (ALL, LONG)


def _rule_refuses(rule, value):
    """Why ``value`` breaks ``rule``, or None."""
    if rule is None:
        return None
    if rule == 'float':
        try:
            float(value)
        except ValueError:
            return 'expected a number'
        return None
    if hasattr(rule, 'fullmatch'):
        return None if rule.fullmatch(value) else \
            'this value has to match %s' % rule.pattern
    if rule and isinstance(rule[0], int):
        try:
            number = int(value)
        except ValueError:
            return 'expected an integer from %d to %d' % rule
        if not rule[0] <= number <= rule[1]:
            return 'expected an integer from %d to %d' % rule
        return None
    if value.lower() not in [r.lower() for r in rule]:
        return 'expected one of %s' % ', '.join(rule)
    return None


def _rule(key, kind):
    """(True, rule) for a key whitelisted on ``kind``; (False, None) if not."""
    if key.startswith(FREE):
        return True, None
    if key in KEYS:
        kinds, rule = KEYS[key]
        return kind is None or kind in kinds, rule
    if key.startswith('DrbdOptions/') and kind not in (NODE, POOL):
        option = key[len('DrbdOptions/'):]
        if HANDLERS.match(option) or PROXY.match(option):
            return True, None
        if option in DRBD_OPTIONS:
            return True, DRBD_OPTIONS[option]
    return False, None


def key_refused(key, kind=None):
    """The reason LINSTOR refuses ``key`` on ``kind``, or None."""
    if not isinstance(key, str) or not key:
        return 'property keys are non-empty strings'
    known, _rule_of = _rule(key, kind)
    return None if known else "The key '%s' is not whitelisted." % key


def check(key, value, kind=None):
    """None if ``key=value`` may be set on ``kind``, else the reason."""
    why = key_refused(key, kind)
    if why:
        return why
    if not isinstance(value, str):
        return 'property values are strings'
    _known, rule = _rule(key, kind)
    why = _rule_refuses(rule, value)
    if why:
        return "The value '%s' is not valid for the key '%s': %s" % (
            value, key, why)
    return None
