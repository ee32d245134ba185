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

"""Does the array agree with Cinder? Read both sides, compare exactly.

Cinder's side comes from its database (what its API shows, plus the
connectors of attachments and the ``workers`` table); the array's from
its K2 and LINSTOR REST APIs. Names follow cinder_driver.common.naming:
``cv-``/``cvg-``/``cs-`` on K2, ``volume-``/``snapshot-`` on LINSTOR.
Every problem is one line; no line means agreement.
"""

import collections
import json
import os
import re
import urllib.parse

import pymysql

from cinder_driver.common import http as rest_http
from cinder_driver.k2 import rest as k2_rest
from cinder_driver.linstor import attach
from tools.gate import cluster

UUID = r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
K2_BACKENDS = ('k2-iscsi', 'k2-fc')
LINSTOR_BACKEND = 'linstor-drbd'
# Statuses that only an operation in progress may hold.
TRANSITIONAL = {
    'volume': {'creating', 'deleting', 'extending', 'attaching', 'detaching',
               'reserved', 'downloading', 'uploading', 'retyping',
               'maintenance', 'backing-up', 'restoring-backup',
               'awaiting-transfer'},
    'snapshot': {'creating', 'deleting', 'updating', 'backing-up',
                 'unmanaging'},
    'attachment': {'attaching', 'detaching', 'reserved'},
}
# Error statuses Cinder leaves for a user to delete: the array may or
# may not hold something for them, either is agreement.
EITHER = {'error', 'error_deleting', 'creating', 'deleting'}


class CinderState(object):
    """Cinder's live objects, read from its database."""

    def __init__(self, bed):
        conn = pymysql.connect(host='127.0.0.1', user='os',
                               password=bed.passwords['db'],
                               database='cinder', connect_timeout=10,
                               read_timeout=60)
        try:
            with conn.cursor(pymysql.cursors.DictCursor) as cur:
                cur.execute('SELECT id, _name_id, status, host, size, '
                            'attach_status FROM volumes WHERE deleted = 0')
                self.volumes = {r['id']: r for r in cur.fetchall()}
                cur.execute('SELECT id, volume_id, status FROM snapshots '
                            'WHERE deleted = 0')
                self.snapshots = {r['id']: r for r in cur.fetchall()}
                cur.execute('SELECT id, volume_id, attach_status, connector,'
                            ' attached_host, deleted FROM volume_attachment')
                rows = cur.fetchall()
                # Cinder's schema migration leaves a SENTINEL row.
                cur.execute('SELECT resource_type, resource_id, status, '
                            'service_id FROM workers WHERE deleted = 0 AND '
                            "resource_type != 'SENTINEL'")
                self.workers = cur.fetchall()
        finally:
            conn.close()
        self.attachments = {}
        self.connectors_ever = []
        for row in rows:
            row['connector'] = json.loads(row['connector'] or 'null') or {}
            if row['connector']:
                self.connectors_ever.append(row['connector'])
            if not row['deleted']:
                self.attachments[row['id']] = row

    def name_id(self, vid):
        return self.volumes[vid]['_name_id'] or vid

    def backend(self, vid):
        host = self.volumes[vid]['host'] or ''
        return host.split('@', 1)[1].split('#')[0] if '@' in host else None

    def live_attachments(self, vid):
        return [a for a in self.attachments.values()
                if a['volume_id'] == vid and a['connector'] and
                a['attach_status'] in ('attached', 'attaching')]


class ArrayState(object):
    """The objects of the bed's array, K2 and LINSTOR dialects, read
    through the drivers' own REST clients (their paging, and their
    retries of what the array dropped or answered busy).
    """

    def __init__(self, info):
        k2 = urllib.parse.urlsplit(info['k2'])
        self.k2_rest = k2_rest.K2Rest(
            k2.hostname, info['user'], info['password'], port=k2.port,
            verify=info['ca_cert'], connect_timeout=5, read_timeout=60,
            backoff=0.5)
        self.linstor_rest = rest_http.RestSession(
            info['linstor'], verify=info['ca_cert'], connect_timeout=5,
            read_timeout=60, backoff=0.5, array_name='LINSTOR (audit)')

    def k2(self, resource):
        return self.k2_rest.search(resource)

    def linstor(self, path):
        return self.linstor_rest.request('GET', path)[1]


def _ref_id(ref):
    return int(ref['ref'].rsplit('/', 1)[1])


def _port(name):
    return name.replace(':', '').lower()


def _ports(connector):
    """The initiator ports a connector names (iSCSI IQN, FC WWPNs)."""
    ports = {_port(w) for w in connector.get('wwpns') or []}
    if connector.get('initiator'):
        ports.add(_port(connector['initiator']))
    return ports


def _named(objs, key, prefix):
    """{uuid: obj} for objects named prefix + uuid."""
    pattern = re.compile('^%s(%s)$' % (re.escape(prefix), UUID))
    found = {}
    for obj in objs:
        match = pattern.match(obj.get(key) or '')
        if match:
            found[match.group(1)] = obj
    return found


def _sizes(cinder, vols, kib_by_name_id, where):
    """Cinder's size of each settled volume is the array's."""
    problems = []
    for vid, row in sorted(vols.items()):
        kib = kib_by_name_id.get(cinder.name_id(vid))
        if kib is None or row['status'] not in ('available', 'in-use'):
            continue
        if kib != row['size'] * 1024 * 1024:
            problems.append('volume %s is %d GiB in Cinder, %.2f GiB on %s'
                            % (vid, row['size'], kib / 1024.0 / 1024, where))
    return problems


def _compare(kind, on_array, cinder_ids, either_ids):
    problems = ['orphan %s on the array: %s' % (kind, i)
                for i in sorted(set(on_array) - cinder_ids - either_ids)]
    problems += ['%s missing on the array: %s' % (kind, i)
                 for i in sorted(cinder_ids - set(on_array))]
    return problems


def check_k2(cinder, array):
    problems = []
    vols = {v: r for v, r in cinder.volumes.items()
            if cinder.backend(v) in K2_BACKENDS}
    want = {cinder.name_id(v) for v, r in vols.items()
            if r['status'] not in EITHER}
    either = {cinder.name_id(v) for v, r in vols.items()
              if r['status'] in EITHER}
    k2_vols = _named(array.k2('volumes'), 'name', 'cv-')
    problems += _compare('K2 volume', k2_vols, want, either)
    problems += _sizes(cinder, vols, {
        n: obj['size'] for n, obj in k2_vols.items()}, 'K2')
    problems += _compare('K2 volume group', _named(
        array.k2('volume_groups'), 'name', 'cvg-'), want, either)
    snaps = {s for s, r in cinder.snapshots.items()
             if r['volume_id'] in vols}
    problems += _compare('K2 snapshot', _named(
        array.k2('snapshots'), 'short_name', 'cs-'),
        {s for s in snaps if cinder.snapshots[s]['status'] not in EITHER},
        {s for s in snaps if cinder.snapshots[s]['status'] in EITHER})

    hosts = {h['id']: h for h in array.k2('hosts')}
    iqns = collections.defaultdict(set)
    for resource, field in (('host_iqns', 'iqn'), ('host_fc_ports', 'pwwn')):
        for port in array.k2(resource):
            iqns[_ref_id(port['host'])].add(_port(port[field]))
    by_array_id = {obj['id']: name_id for name_id, obj in k2_vols.items()}
    by_name_id = {cinder.name_id(v): v for v in cinder.volumes}
    mapped = collections.Counter()
    luns = collections.Counter()
    for m in array.k2('mappings'):
        host_id, name_id = _ref_id(m['host']), by_array_id.get(
            _ref_id(m['volume']))
        mapped[(name_id, host_id)] += 1
        luns[(host_id, m['lun'])] += 1
        vid = by_name_id.get(name_id)
        if vid is None:
            problems.append('mapping of a volume Cinder does not have: '
                            'array volume %s on host %s' % (
                                _ref_id(m['volume']), host_id))
            continue
        asked = set()
        for att in cinder.live_attachments(vid):
            asked |= _ports(att['connector'])
        if not iqns[host_id] & asked:
            problems.append(
                'volume %s mapped to host %s (%s) with no attachment there%s'
                % (vid, hosts.get(host_id, {}).get('name'),
                   ','.join(sorted(iqns[host_id])),
                   ' (WRONG HOST: attached to %s)' % ','.join(sorted(
                       a for a in asked if a)) if asked else ''))
    problems += ['%d mappings of volume %s to host %s' % (n, v, h)
                 for (v, h), n in sorted(mapped.items(), key=str) if n > 1]
    problems += ['LUN %s used %d times on host %s' % (lun, n, h)
                 for (h, lun), n in sorted(luns.items(), key=str) if n > 1]
    # Attachments the array does not carry.
    host_of_iqn = {iqn: h for h, ports in iqns.items() for iqn in ports}
    for vid in vols:
        for att in cinder.live_attachments(vid):
            if att['attach_status'] != 'attached':
                continue
            if not any(mapped.get((cinder.name_id(vid), host_of_iqn.get(p)))
                       for p in _ports(att['connector'])):
                problems.append('attachment %s of volume %s has no mapping'
                                % (att['id'], vid))
    # Hosts: one per initiator, each named after a connector Cinder saw.
    owners = collections.Counter(iqn for ports in iqns.values()
                                 for iqn in ports)
    problems += ['initiator %s on %d hosts' % (i, n)
                 for i, n in sorted(owners.items()) if n > 1]
    problems += ['host %s has no initiator' % h['name']
                 for h_id, h in sorted(hosts.items()) if not iqns[h_id]]
    return problems


def check_linstor(cinder, array):
    problems = []
    vols = {v: r for v, r in cinder.volumes.items()
            if cinder.backend(v) == LINSTOR_BACKEND}
    want = {cinder.name_id(v) for v, r in vols.items()
            if r['status'] not in EITHER}
    either = {cinder.name_id(v) for v, r in vols.items()
              if r['status'] in EITHER}
    rds = _named(array.linstor('/v1/resource-definitions?'
                               'with_volume_definitions=true'), 'name',
                 'volume-')
    problems += _compare('LINSTOR resource definition', rds, want, either)
    problems += _sizes(cinder, vols, {
        n: int(rd['volume_definitions'][0]['size_kib'])
        for n, rd in rds.items() if rd.get('volume_definitions')}, 'LINSTOR')
    snaps = {s for s, r in cinder.snapshots.items()
             if r['volume_id'] in vols}
    on_array = _named(array.linstor('/v1/view/snapshots'), 'name',
                      'snapshot-')
    problems += _compare(
        'LINSTOR snapshot', on_array,
        {s for s in snaps if cinder.snapshots[s]['status'] not in EITHER},
        {s for s in snaps if cinder.snapshots[s]['status'] in EITHER})
    by_name_id = {cinder.name_id(v): v for v in vols}
    for rsc in array.linstor('/v1/view/resources'):
        match = re.match('^volume-(%s)$' % UUID, rsc.get('name', ''))
        flags = rsc.get('flags') or []
        if not match or 'TIE_BREAKER' in flags or not (
                'DRBD_DISKLESS' in flags or 'DISKLESS' in flags):
            continue
        vid = by_name_id.get(match.group(1))
        node = rsc['node_name']
        owner = (rsc.get('props') or {}).get(attach.MANAGED_BY)
        intent = attach.intent_key(node)
        intended = attach.intents(rds.get(match.group(1))).get(intent)
        asked = {a['connector'].get('host')
                 for a in cinder.live_attachments(vid)} if vid else set()
        if node not in asked:
            problems.append(
                'diskless resource of %s on node %s%s%s with no attachment '
                'there%s' % (match.group(1), node,
                             '' if owner else ' (no owner property)',
                             ' (intent %s=%s on its definition)' % (
                                 intent, intended) if intended else '',
                             ' (WRONG HOST: attached to %s)' %
                             ','.join(sorted(asked)) if asked else ''))
    # An attach or detach that finished drops its intent; one left over
    # is a service that died in one and nobody finished after it.
    for name_id, rd in sorted(rds.items()):
        for key, owner in sorted(attach.intents(rd).items()):
            problems.append('attach intent %s=%s left on %s' % (
                key, owner, rd['name']))
    return problems


def check_stuck(cinder):
    problems = []
    for kind, rows, key in (('volume', cinder.volumes, 'status'),
                            ('snapshot', cinder.snapshots, 'status'),
                            ('attachment', cinder.attachments,
                             'attach_status')):
        for oid, row in sorted(rows.items()):
            if row[key] in TRANSITIONAL[kind]:
                problems.append('%s %s stuck in %s' % (kind, oid, row[key]))
    problems += ['workers row left: %(resource_type)s %(resource_id)s '
                 '%(status)s (service %(service_id)s)' % w
                 for w in cinder.workers]
    return problems


def check_cinder_attachments(cinder):
    """A volume connected twice to one host is a Cinder-side double."""
    seen = collections.Counter(
        (a['volume_id'], a['connector'].get('host'))
        for a in cinder.attachments.values()
        if a['connector'] and a['attach_status'] == 'attached')
    return ['%d attachments of volume %s to host %s' % (n, v, h)
            for (v, h), n in sorted(seen.items(), key=str) if n > 1]


def audit(bed, stuck=True):
    with open(os.path.join(bed.dir, 'array.json')) as f:
        info = json.load(f)
    cinder = CinderState(bed)
    array = ArrayState(info)
    problems = check_k2(cinder, array) + check_linstor(cinder, array)
    problems += check_cinder_attachments(cinder)
    if stuck:
        problems += check_stuck(cinder)
    return problems, cinder


# Problems that are wrong at every moment, not only once things settle:
# in the middle of an attach or a detach a mapping may exist without its
# attachment, but never on a host other than the attachment's, nor twice.
ALWAYS_WRONG = ('WRONG HOST', 'mappings of volume', 'LUN ',
                'attachments of volume')


class Sampler(cluster.Periodic):
    """Audits every ``interval`` seconds while the load runs; keeps the
    problems that are wrong at any moment (wrong host, double mapping).
    """

    def __init__(self, bed, interval=3.0):
        super().__init__(interval)
        self.bed = bed
        self.samples, self.problems = 0, []

    def tick(self):
        try:
            problems, _state = audit(self.bed, stuck=False)
        except Exception:  # the array or MariaDB busy: next sample
            return
        self.samples += 1
        self.problems += [p for p in problems
                          if any(k in p for k in ALWAYS_WRONG) and
                          p not in self.problems]
