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

"""A LINSTOR node's devices over iSCSI, without the node's CHAP secret.

The array serves each node's DRBD devices as LUNs of its target for the
node's own initiator name, which anyone can guess. A local process that
logs in under that name without the node's CHAP secret, or with a wrong
one, must read and write nothing. The probe holds the right secret only
to show that the same device is there for its node; it reads it where the
node's root would, from the array's private configuration.
"""

from reference_array.linstor import exporter
from tools.hostile import array
from tools.hostile import initiator
from tools.hostile import qemu

RD = 'probe-chap'


def _placed(arr):
    """(node, LUN) of a 64 MiB resource the LINSTOR REST port placed."""
    for method, path, body in (
            ('POST', '/v1/resource-definitions',
             {'resource_definition': {'name': RD}}),
            ('POST', '/v1/resource-definitions/%s/volume-definitions' % RD,
             {'volume_definition': {'size_kib': 64 * 1024}}),
            ('POST', '/v1/resource-definitions/%s/autoplace' % RD,
             {'select_filter': {'place_count': 1}})):
        status, reply = arr.linstor(method, path, body)
        if not 200 <= status < 300:
            raise RuntimeError('%s %s: %s %s' % (method, path, status,
                                                 str(reply)[:200]))
    _s, rows = arr.linstor('GET', '/v1/view/resources?resources=' + RD)
    _s, vds = arr.linstor(
        'GET', '/v1/resource-definitions/%s/volume-definitions' % RD)
    minor = [d['data']['minor_number'] for d in vds[0]['layer_data']
             if d['type'] == 'DRBD'][0]
    return rows[0]['node_name'], minor - 1000


def probe_linstor_chap(res):
    with array.Array() as arr:
        node, lun = _placed(arr)
        name = exporter.node_initiator(node)
        chap = exporter.node_chap_from(arr.data_dir, node)
        _s, nodes = arr.linstor('GET', '/v1/nodes')
        others = [n['name'] for n in nodes if n['name'] != node]
        other = exporter.node_chap_from(arr.data_dir, others[0])
        tries = {'no CHAP': None,
                 'a wrong secret': (chap[0], 'not-the-node-secret'),
                 "another node's CHAP": other,
                 "the node's user, another node's secret": (chap[0],
                                                            other[1])}
        hits = []
        for what, creds in tries.items():
            target = qemu.iscsi_url(arr, lun, name, creds)
            for command in ('read 0 4k', 'write -P 0xee 0 4k'):
                if qemu.qemu_io(target, command).returncode == 0:
                    hits.append('%s: %s' % (what, command))
        # A raw login that offers no authentication at all.
        ini = initiator.RawInitiator(arr.portal, name)
        try:
            status = ini.login(arr.info['iqn'])
        finally:
            ini.close()
        if status == 0:
            hits.append('raw login with AuthMethod=None')
        res.add('linstor-chap', "node device I/O without the node's CHAP",
                len(hits), 0, not hits, '; '.join(hits))
        res.add('linstor-chap', 'raw login without CHAP: status class',
                status, 2, status == 2)
        good = qemu.qemu_io(qemu.iscsi_url(arr, lun, name, chap),
                            'write -P 0x5c 0 4k', 'read -P 0x5c 0 4k')
        ok = good.returncode == 0 and 'verification failed' not in \
            good.stdout
        res.add('linstor-chap', "the node's own CHAP writes and reads back",
                ok, True, ok, (good.stdout + good.stderr).strip()[-200:])
        leaked = [path for path in ('/v1/nodes', '/v1/view/resources')
                  if chap[1] in str(arr.linstor('GET', path)[1])]
        if chap[1] in arr.log():
            leaked.append('array.log')
        res.add('linstor-chap', 'node secret in replies or the log',
                len(leaked), 0, not leaked, ', '.join(leaked))
