"""Which LINSTOR properties the reference array accepts, and their values.

LINSTOR checks the keys of its own namespaces (``DrbdOptions/...``) and
the values of the options it knows; other namespaces (``Aux/...``) are
free-form. A refused property is FAIL_INVLD_PROP naming key and value.
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


def check(key, value):
    """None if ``key=value`` is acceptable, else the reason it is not."""
    if not isinstance(key, str) or not key or not isinstance(value, str):
        return 'property keys and values are strings'
    if not key.startswith('DrbdOptions/'):
        return None
    option = key[len('DrbdOptions/'):]
    if HANDLERS.match(option) or PROXY.match(option):
        return None
    if option not in DRBD_OPTIONS:
        return 'unknown DRBD option %s' % option
    rule = DRBD_OPTIONS[option]
    if rule is None:
        return None
    if isinstance(rule, tuple) and rule and isinstance(rule[0], int):
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
