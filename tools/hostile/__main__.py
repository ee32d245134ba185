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

"""Hostile probes of the reference array, over its wire protocols only.

``tox -e hostile [-- --only NAME ...] [--json PATH]`` (``python -m
tools.hostile`` from the source tree). Each probe starts
its own array on 127.0.0.1 (ephemeral ports, a temporary data directory),
does what an adversary or a broken peer on the same machine could do, and
measures what the array let through or what it cost:

========== ==============================================================
reach      requests without credentials that succeed (wanted: 0)
pdu-alloc  bytes the array reserves for one unauthenticated 48-byte
           SCSI WRITE PDU from an initiator that has no LUN (bounded)
bodies     array memory after 30 unauthenticated 16 MiB request bodies
iscsi-keys login keys out of range or out of order: a clean reject, the
           array still serves, one log line each (no traceback)
iscsi-hold connections, login time and command buffers one local process
           can make the target hold (bounded)
rest-edge  REST input no parser foresaw: a 4xx, one log line each
rest-hold  more connections than a REST port serves at once, silent or
           sending one byte: a client with credentials is still answered
isolation  checksums over iSCSI: writes to an exposable snapshot (a view)
           never reach its source volume or clones made from it
disk-full  a 64 MiB tmpfs filled over iSCSI: SCSI errors (not dropped
           connections), REST keeps answering, capacity bounded by the
           filesystem, the array starts again
unmap      one UNMAP of the largest range the array advertises, and the
           latency of I/O to another LUN meanwhile
linstor-   a LINSTOR node's devices over iSCSI: reads and writes without
chap       the node's CHAP secret, or with a wrong one (wanted: 0)
========== ==============================================================

The probes talk only to the array's ports (K2 REST, LINSTOR REST, iSCSI)
and read its process status and log, so they hold whatever the array's
inside looks like. Every probe is bounded in time and memory on our side.
One module per kind of probe: ``rest``, ``iscsi_target``, ``isolation``,
``disk_full``, ``unmap``, ``linstor_exports``; ``array``, ``initiator``,
``qemu``, ``k2_rest`` and ``results`` are what they share.
"""

import argparse
import json
import sys
import time

from tools.hostile import disk_full
from tools.hostile import iscsi_target
from tools.hostile import isolation
from tools.hostile import linstor_exports
from tools.hostile import rest
from tools.hostile import results
from tools.hostile import unmap

PROBES = {
    'reach': rest.probe_reach, 'pdu-alloc': iscsi_target.probe_pdu_alloc,
    'bodies': rest.probe_bodies, 'iscsi-keys': iscsi_target.probe_iscsi_keys,
    'iscsi-hold': iscsi_target.probe_iscsi_hold,
    'rest-edge': rest.probe_rest_edge, 'rest-hold': rest.probe_rest_hold,
    'isolation': isolation.probe_isolation,
    'disk-full': disk_full.probe_disk_full, 'unmap': unmap.probe_unmap,
    'linstor-chap': linstor_exports.probe_linstor_chap,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--only', action='append', choices=sorted(PROBES))
    parser.add_argument('--json', help='write the rows here')
    args = parser.parse_args(argv)
    res = results.Result()
    for name in args.only or list(PROBES):
        started = time.monotonic()
        try:
            PROBES[name](res)
        except Exception as e:
            res.add(name, 'probe ran', '%s: %s' % (type(e).__name__, e),
                    'ran', False)
        print('%-12s %5.1fs' % (name, time.monotonic() - started),
              file=sys.stderr)
    width = max(len(r['measure']) for r in res.rows)
    for r in res.rows:
        print('%-4s %-12s %-*s %-22s wanted %s%s' % (
            'ok' if r['ok'] else 'FAIL', r['probe'], width, r['measure'],
            r['value'], r['wanted'],
            ('  (%s)' % r['detail']) if r['detail'] and not r['ok'] else ''))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(res.rows, f, indent=1)
    print('%d probes, %d failed' % (len(res.rows), len(res.failed)))
    return 1 if res.failed else 0


if __name__ == '__main__':
    sys.exit(main())
