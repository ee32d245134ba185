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

"""Isolation of K2 views, by checksums over iSCSI."""

import os
import tempfile

from tools.hostile import array
from tools.hostile import k2_rest
from tools.hostile import qemu

MiB = array.MiB


def probe_isolation(res):
    """A view's writes stay in the view: for a snapshot created exposable
    and for one patched to it after a clone was made from it.
    """
    for patched in (False, True):
        with array.Array() as arr:
            _isolation(res, arr, patched)


def _isolation(res, arr, patched):
    label = 'patched exposable' if patched else 'exposable at creation'
    k2 = k2_rest.K2(arr)
    ini = array.INITIATOR % 'isolation'
    host = k2.host('isolation', ini)
    group, vol = k2.volume('iso-src', 1)
    lun = k2.map(host, '/volumes/%d' % vol['id'])
    src = qemu.iscsi_url(arr, lun, ini)
    with tempfile.TemporaryDirectory() as tmp:
        a = os.path.join(tmp, 'a')
        with open(a, 'wb') as f:
            f.write(os.urandom(4 * MiB))
        qemu.write_file(src, a)
    before = qemu.read_digest(src, 0, 4 * MiB)
    snap = k2.create('snapshots', {
        'short_name': 'iso-snap', 'source': {
            'ref': '/volume_groups/%d' % group['id']},
        'retention_policy': {'ref': '/retention_policies/1'},
        'is_exposable': not patched})
    volsnap = k2.search('volsnaps', **{
        'snapshot.ref': '/snapshots/%d' % snap['id']})[0]
    # A clone made from the snapshot before anything is written to it.
    clone = k2.create('volumes', {
        'name': 'iso-clone', 'size': 1024 * 1024,
        'volume_group': {'ref': '/volume_groups/%d' % k2.create(
            'volume_groups', {'name': 'iso-clone-vg', 'is_dedup': True,
                              'quota': 0})['id']},
        'source': {'ref': '/volsnaps/%d' % volsnap['id']}})
    if patched:
        status, reply = arr.k2('PATCH', '/snapshots/%d' % snap['id'],
                               {'is_exposable': True})
        k2._ok(status, reply, 'PATCH is_exposable')
    # Mapped as Cinder's in-tree driver maps a view: by the snapshot ref.
    status, reply = arr.k2('POST', '/mappings', {
        'host': {'ref': '/hosts/%d' % host['id']},
        'volume': {'ref': '/snapshots/%d' % snap['id']}})
    res.add('isolation', 'mapping a view by its snapshot ref (%s)' % label,
            status, '2xx', 200 <= status < 300, str(reply)[:200])
    if not 200 <= status < 300:
        return
    view = qemu.iscsi_url(arr, reply['lun'], ini)
    w = qemu.qemu_io(view, 'write -P 0xa5 0 1M')
    res.add('isolation', 'write to the view accepted (%s)' % label,
            w.returncode == 0, True, w.returncode == 0,
            w.stderr.strip()[-200:])
    written = qemu.read_digest(view, 0, 4 * MiB)
    clun = k2.map(host, '/volumes/%d' % clone['id'])
    for name, url in (('source', src),
                      ('clone', qemu.iscsi_url(arr, clun, ini))):
        digest = qemu.read_digest(url, 0, 4 * MiB)
        res.add('isolation', '%s checksum unchanged by view writes (%s)' % (
            name, label), digest == before, True, digest == before,
            'before %s after %s' % (before, digest))
    res.add('isolation', 'the view reads its own writes (%s)' % label,
            written != before, True, written != before)
