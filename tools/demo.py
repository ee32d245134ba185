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


def step(text):
    print('\n== %s' % text, flush=True)


class Tour(object):

    def __init__(self, bed):
        self.env = bed.admin_env()

    def openstack(self, *args):
        cmd = [os.path.join(BIN, 'openstack')] + list(args)
        print('$ openstack %s' % ' '.join(args), flush=True)
        result = subprocess.run(cmd, env=self.env, capture_output=True,
                                text=True)
        if result.returncode != 0:
            raise SystemExit('failed: %s' % result.stderr.strip())
        return result.stdout

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
        step('extend and retype')
        self.openstack('volume', 'set', '--size', '3', 'demo-nodedup')
        self.openstack('volume', 'set', '--type', 'dedup',
                       '--retype-policy', 'never', 'demo-clone')
        time.sleep(2)
        print(self.openstack('volume', 'list', '--long'))
        step('pool stats (as the scheduler sees them)')
        cinder = os.path.join(BIN, 'cinder')
        pools = subprocess.run([cinder, 'get-pools', '--detail'],
                               env=self.env, capture_output=True, text=True)
        keys = ('name', 'total_capacity_gb', 'free_capacity_gb',
                'provisioned_capacity_gb', 'data_reduction_ratio',
                'read_iops', 'write_iops', 'latency_usec', 'backend_state',
                'vendor_name')
        for line in pools.stdout.splitlines():
            if any(' %s ' % k in line for k in keys):
                print(line)


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
