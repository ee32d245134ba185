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

"""Quick start: a one-machine cloud with cinder-flash, and a short tour.

``tox -e demo`` brings up the reference array, MariaDB, RabbitMQ, Keystone
and Cinder with a K2 iSCSI backend, then drives it with the ``openstack``
CLI: volumes of the dedup and nodedup types, snapshot, volume from
snapshot, clone, extend, retype and the pool stats. The cloud stays up;
``source .demo/openrc`` to go on by hand, ``tox -e demo -- stop`` to end it.
"""

import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tools.gate import bed as bed_mod  # noqa: E402

BIN = os.path.dirname(sys.executable)
STATE = os.path.join(ROOT, '.demo')
DEMO_INITIATOR = 'iqn.2026-11.io.cinder-flash:demo-client'


def _table(text):
    """Property/Value rows of the cinder CLI's tables, as a dict."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split('|')]
        if len(cells) == 4 and cells[1] not in ('', 'Property'):
            rows[cells[1]] = cells[2]
    return rows


def _make_dataset(path, mib=64):
    """JSON documents that compress and repeat, like a database's pages."""
    import random
    rnd = random.Random(7)
    states = ['state-%02d' % n for n in range(57)]
    block = bytearray()
    while len(block) < 4 << 20:
        block += ('{"mNumber": %d, "state": "%s", "payload": "%s"}\n' % (
            rnd.randrange(10 ** 9), rnd.choice(states),
            ''.join(rnd.choice('abcdef0123456789') for _ in range(64)))
        ).encode()
    with open(path, 'wb') as f:
        for _n in range(mib // 4):
            f.write(block[:4 << 20])


def step(text):
    print('\n== %s' % text, flush=True)


class Tour(object):

    def __init__(self, bed):
        self.env = bed.admin_env()

    def _cli(self, program, options, args):
        print('$ %s %s' % (program, ' '.join(args)), flush=True)
        result = subprocess.run(
            [os.path.join(BIN, program)] + options + list(args),
            env=self.env, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit('failed: %s' % result.stderr.strip())
        return result.stdout

    def openstack(self, *args):
        return self._cli('openstack', [], args)

    def cinder(self, *args):
        # The attachment API (connect without Nova) needs microversion 3.54.
        return self._cli('cinder', ['--os-volume-api-version', '3.54'], args)

    def show(self, kind, name):
        return json.loads(self.openstack(kind, 'show', name, '-f', 'json'))

    def wait(self, kind, name, status='available', timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            current = self.show(kind, name)['status']
            if current == status:
                return
            if current.startswith('error'):
                raise SystemExit('%s %s went to %s' % (kind, name, current))
            time.sleep(1)
        raise SystemExit('%s %s not %s after %ss' % (kind, name, status,
                                                     timeout))

    def write_through_iscsi(self):
        """Attach as a compute host would, and write with an initiator."""
        step('attach demo-dedup to a host and write data through iSCSI')
        volume_id = self.show('volume', 'demo-dedup')['id']
        out = self.cinder('attachment-create', '--connect', 'True',
                          '--initiator', DEMO_INITIATOR, '--ip',
                          '127.0.0.1', '--host', 'demo-client', '--mode',
                          'rw', volume_id)
        data = _table(out)
        print('connection: %s LUN %s on %s' % (
            data['target_iqn'], data['target_lun'], data['target_portal']))
        dataset = os.path.join(STATE, 'dataset.raw')
        _make_dataset(dataset)
        target = 'json:' + json.dumps({
            'file.driver': 'iscsi', 'file.transport': 'tcp',
            'file.portal': data['target_portal'],
            'file.target': data['target_iqn'],
            'file.lun': data['target_lun'],
            'file.initiator-name': DEMO_INITIATOR})
        print('$ qemu-img convert -n -O raw %s iscsi://...' % dataset)
        started = time.monotonic()
        result = subprocess.run(['qemu-img', 'convert', '-n', '-f', 'raw',
                                 '-O', 'raw', dataset, target],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit('write failed: %s' % result.stderr)
        print('wrote %d MiB in %.1f s' % (
            os.path.getsize(dataset) >> 20, time.monotonic() - started))
        self.cinder('attachment-delete', data['attachment_id'])

    def run(self):
        step('volume types')
        print(self.openstack('volume', 'type', 'list', '--long'))
        step('a dedup and a nodedup volume')
        self.openstack('volume', 'create', '--size', '1', '--type', 'dedup',
                       'demo-dedup', '-f', 'value', '-c', 'id')
        self.openstack('volume', 'create', '--size', '1', '--type',
                       'nodedup', 'demo-nodedup', '-f', 'value', '-c', 'id')
        for name in ('demo-dedup', 'demo-nodedup'):
            self.wait('volume', name)
        step('snapshot, volume from snapshot (larger), clone')
        self.openstack('volume', 'snapshot', 'create', '--volume',
                       'demo-dedup', 'demo-snap', '-f', 'value', '-c', 'id')
        self.wait('volume snapshot', 'demo-snap')
        self.openstack('volume', 'create', '--snapshot', 'demo-snap',
                       '--size', '2', 'demo-from-snap', '-f', 'value',
                       '-c', 'id')
        self.openstack('volume', 'create', '--source', 'demo-dedup',
                       'demo-clone', '-f', 'value', '-c', 'id')
        for name in ('demo-from-snap', 'demo-clone'):
            self.wait('volume', name)
        self.write_through_iscsi()
        step('extend and retype')
        self.openstack('volume', 'set', '--size', '3', 'demo-nodedup')
        # A change of deduplication, done on the array without migration.
        self.openstack('volume', 'set', '--type', 'nodedup',
                       '--migration-policy', 'never', 'demo-clone')
        self.wait('volume', 'demo-clone')
        print(self.openstack('volume', 'list', '--long'))
        step('pool stats (as the scheduler sees them)')
        keys = ('name', 'total_capacity_gb', 'free_capacity_gb',
                'provisioned_capacity_gb', 'data_reduction_ratio',
                'logical_used_gb', 'physical_used_gb', 'read_iops',
                'write_iops', 'latency_usec', 'backend_state', 'vendor_name')
        # cinder-volume reports every 10 s: wait for a report that counts
        # the data written above.
        deadline = time.monotonic() + 60
        while True:
            pool = self.pool_stats()
            if float(pool.get('logical_used_gb', 0)) > 0 or \
                    time.monotonic() > deadline:
                break
            time.sleep(1)
        for key in keys:
            if key in pool:
                print('  %-26s %s' % (key, pool[key]))
        self.linstor()

    def linstor(self):
        step('LINSTOR: a volume type is a resource group; two replicas')
        self.openstack('volume', 'create', '--size', '1', '--type',
                       'linstor', 'demo-linstor')
        self.wait('volume', 'demo-linstor')
        self.openstack('volume', 'snapshot', 'create', '--volume',
                       'demo-linstor', 'demo-linstor-snap')
        self.wait('volume snapshot', 'demo-linstor-snap')
        self.openstack('volume', 'create', '--source', 'demo-linstor',
                       '--type', 'linstor', 'demo-linstor-clone')
        self.wait('volume', 'demo-linstor-clone')
        self.openstack('volume', 'set', '--size', '2', 'demo-linstor')
        print(self.openstack('volume', 'list', '--long'))
        pool = self.pool_stats('#DfltStorPool')
        for key in ('name', 'total_capacity_gb', 'free_capacity_gb',
                    'provisioned_capacity_gb', 'thin_provisioning_support',
                    'data_reduction_ratio', 'linstor_replicas',
                    'backend_state', 'storage_protocol'):
            if key in pool:
                print('  %-26s %s' % (key, pool[key]))

    def pool_stats(self, suffix='#k2-iscsi'):
        """A pool's stats, from cinder get-pools --detail."""
        out = subprocess.run([os.path.join(BIN, 'cinder'), 'get-pools',
                              '--detail'], env=self.env,
                             capture_output=True, text=True).stdout
        # One table per pool, each starting with its name row.
        pools, current = {}, None
        for line in out.splitlines():
            cells = [c.strip() for c in line.split('|')]
            if len(cells) < 4 or cells[1] in ('Property', ''):
                continue
            if cells[1] == 'name':
                current = pools.setdefault(cells[2], {})
            if current is not None:
                current[cells[1]] = cells[2]
        for name, pool in pools.items():
            if name.endswith(suffix):
                return pool
        return {}


def main():
    stop = len(sys.argv) > 1 and sys.argv[1] == 'stop'
    bed = bed_mod.Bed(STATE)
    try:
        if stop:
            bed.down()
            return 0
        step('bringing up the cloud (state and logs in %s)' % STATE)
        bed.up()
        Tour(bed).run()
    except bed_mod.BedError as e:
        print('quick start FAILED: %s' % e, file=sys.stderr)
        return 1
    step('the cloud is running')
    print('source %s/openrc   # then: openstack volume list' % STATE)
    print('tox -e demo -- stop   # stops everything')
    return 0


if __name__ == '__main__':
    sys.exit(main())
