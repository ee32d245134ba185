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

"""The compute bed: the gate's bed plus Placement, Glance, Neutron, Nova
and libvirt, so that instances boot from cinder-flash volumes.

- Placement, Glance (file store), the Neutron API and the Nova API run
  under gunicorn on 127.0.0.1; neutron-rpc-server, neutron-periodic-workers,
  the macvtap agent, nova-conductor, nova-scheduler and nova-compute as
  processes; all from a virtualenv of their own (``.gate-cvenv``, Nova 34
  and friends: the series of Cinder 29), kept between runs
  (``prepare.py``).
- libvirtd and QEMU (TCG) from Debian, apart from the host's libvirt
  (``libvirtd.py``).
- Volumes reach the hypervisor through ``brick.py``: nova-compute and
  cinder-volume start with it in place of os-brick's iSCSI connector.
- The provider network lives on a veth pair and a namespace the bed makes
  and removes (``network.py``); guests are configured by config drive.
- The guest image is built once from Debian packages (``image.py``) and
  uploaded to Glance; without FerretDB for CI's small version.

``down`` destroys every domain, detaches every LUN, stops every process
and removes the network; what it cannot remove is an error.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time

from tools.gate import bed as bed_mod
from tools.gate.compute import conf
from tools.gate.compute import image
from tools.gate.compute import libvirtd
from tools.gate.compute import network
from tools.gate.compute import prepare
from tools.gate import processes
from tools import iscsi_loop

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = bed_mod.ROOT
CVENV = prepare.CVENV
APT = {'qemu-system-x86_64': 'qemu-system-x86',
       'libvirtd': 'libvirt-daemon-system',
       'virsh': 'libvirt-clients', 'genisoimage': 'genisoimage',
       'qemu-storage-daemon': 'qemu-system-common',
       'fusermount3': 'fuse3', 'pkg-config': 'pkg-config'}
INITIATORS = {'nova-compute': 'iqn.2026-11.io.cinder-flash:bed-compute',
              'cinder-volume': 'iqn.2026-11.io.cinder-flash:bed-volume'}
NETWORK_NAME = 'provider'
FLAVOR = {'name': 'cf.guest', 'vcpus': 1, 'ram': 512, 'disk': 2}
FLAVOR_ALT = {'name': 'cf.guest.alt', 'vcpus': 1, 'ram': 640, 'disk': 2}
IMAGE_NAME = 'debian12-guest'


def log(msg):
    print('[compute-bed] %s' % msg, flush=True)


class ComputeBed(bed_mod.Bed):

    def ports(self):
        return dict(super().ports(), **conf.PORTS)

    def __init__(self, state_dir, server_image=True):
        super().__init__(state_dir)
        # False: the guest image without FerretDB (CI's small version).
        self.server_image = server_image
        self.libvirt = libvirtd.Libvirtd(self.dir, self.logs)
        self.attach_dir = os.path.join(self.dir, 'attachments')
        self.cloud_file = os.path.join(self.dir, 'cloud.json')
        self.ctx = conf.Context(
            self.dir, self.logs, CVENV, None, None, self.libvirt.uri,
            'rabbit://guest:guest@127.0.0.1:%d/' % bed_mod.PORTS['rabbit'])

    def cvenv_bin(self, name):
        return os.path.join(CVENV, 'bin', name)

    @property
    def cloud(self):
        """IDs of what the bed made in the cloud (image, flavors, network)."""
        with open(self.cloud_file) as f:
            return json.load(f)

    # -- hooks ---------------------------------------------------------------
    def _before_up(self):
        if os.geteuid() != 0:
            raise bed_mod.BedError('the compute bed needs root (libvirtd, '
                                   'loop devices, FUSE, namespaces)')
        missing = sorted({pkg for tool, pkg in APT.items()
                          if shutil.which(tool) is None} |
                         set(image.missing_host_tools()))
        if missing:
            raise bed_mod.BedError('the compute bed needs the Debian '
                                   'packages %s' % ', '.join(missing))
        left = network.leftovers()
        if left:
            raise bed_mod.BedError('%s exist(s): another compute bed is up '
                                   'or was not brought down' %
                                   ', '.join(left))
        try:
            prepare.ensure_cvenv()
            self.image_path = image.ensure(server=self.server_image,
                                           timeout=prepare.IMAGE_TIMEOUT)
        except prepare.PrepareError as e:
            raise bed_mod.BedError('compute virtualenv: %s' % e)
        except image.ImageError as e:
            raise bed_mod.BedError('guest image: %s' % e)
        self.ctx.db_url = self.db_url
        self.ctx.service_password = self.passwords['service']

    def _cinder_extra_conf(self):
        return conf.cinder_extra(self.ctx, self.cinder_conf_path(),
                                 os.path.join(bed_mod.BIN, 'privsep-helper'))

    def _cinder_command(self, service, conf_path):
        if service != 'volume':
            return super()._cinder_command(service, conf_path)
        # Image-to-volume copies attach on this host: the same connector.
        return ([sys.executable, '-m', 'tools.gate.compute.launch',
                 '--iscsi-connector', 'cinder.cmd.volume:main',
                 '--config-file', conf_path],
                self._brick_env('cinder-volume'))

    def _brick_env(self, service):
        return dict(self.env, PYTHONPATH=ROOT,
                    CINDER_FLASH_INITIATOR=INITIATORS[service],
                    CINDER_FLASH_ATTACH_DIR=os.path.join(self.attach_dir,
                                                         service))

    def _after_cinder(self):
        started = time.monotonic()
        self._databases()
        self.confs = self._write_confs()
        self._schemas()
        self._placement()
        self._glance()
        self._neutron()
        self._libvirtd()
        self._nova()
        self._cloud_objects()
        log('compute services up in %.0f s' % (time.monotonic() - started))

    def _before_down(self):
        if os.path.exists(os.path.join(self.libvirt.dir, 'sock',
                                       'libvirt-sock')):
            names = self.libvirt.destroy_all()
            if names:
                log('destroyed %d leftover domain(s)' % len(names))
        self._detach_all()
        self._stop_services()

    def _stop_services(self):
        """Stop the OpenStack services side by side, not one by one.

        Each takes seconds to half a minute to finish on SIGTERM; in turn
        they took over three minutes. MariaDB and RabbitMQ, which the
        others talk to while they stop, are left to the bed's own down.
        """
        started = time.monotonic()
        pids = [pid for name, pid in self._pids().items()
                if name not in ('mariadb', 'rabbit')]
        _side_by_side([(processes.stop_group, pid) for pid in pids])
        log('%d services stopped in %.0f s' % (len(pids),
                                               time.monotonic() - started))

    def _after_down(self):
        # Anything a service attached while it was being stopped.
        self._detach_all()
        for pid in self.libvirt.qemu_pids():
            libvirtd._kill(pid)
        network.down()

    def _detach_all(self):
        for service in INITIATORS:
            removed = iscsi_loop.detach_all(os.path.join(self.attach_dir,
                                                         service))
            if removed:
                log('detached %d leftover LUN(s) of %s' % (len(removed),
                                                           service))

    # -- services ------------------------------------------------------------
    def _mysql(self, sql):
        subprocess.run(['mariadb', '-S', self.sock, '-uroot', '-e', sql],
                       check=True)

    def _databases(self):
        self._mysql(' '.join('CREATE DATABASE %s;' % db
                             for db in conf.DATABASES))

    def _write_confs(self):
        for service, subs in (('glance', ('images', 'staging', 'tasks',
                                          'lock')),
                              ('neutron', ('state', 'lock')),
                              ('nova', ('state', 'instances', 'lock'))):
            for sub in subs:
                os.makedirs(os.path.join(self.dir, service, sub))
        shutil.copy(self.ctx.etc('nova', 'api-paste.ini'),
                    os.path.join(self.dir, 'nova', 'api-paste.ini'))
        return {
            'placement': self._write('placement/placement.conf',
                                     conf.placement(self.ctx)),
            'glance': self._write('glance/glance-api.conf',
                                  conf.glance(self.ctx)),
            'neutron': self._write('neutron/neutron.conf',
                                   conf.neutron(self.ctx)),
            'ml2': self._write('neutron/plugins/ml2/ml2_conf.ini',
                               conf.ml2(self.ctx)),
            'agent': self._write('neutron/macvtap_agent.ini',
                                 conf.macvtap_agent(self.ctx)),
            'nova': self._write('nova/nova.conf', conf.nova(self.ctx))}

    def _schemas(self):
        """Database schemas and Keystone entries, side by side.

        Each service has databases of its own, so the schema migrations
        (Nova's four steps in turn) do not wait for one another; one after
        the other they took some four minutes of the bed's start.
        """
        started = time.monotonic()
        c = self.confs
        nova = [self.cvenv_bin('nova-manage'), '--config-file', c['nova']]
        neutron = ['--config-file', c['neutron'], '--config-file', c['ml2']]
        chains = [
            [self._register_services],
            [('placement-manage db sync', [
                self.cvenv_bin('placement-manage'), '--config-file',
                c['placement'], 'db', 'sync'])],
            [('glance-manage db_sync', [
                self.cvenv_bin('glance-manage'), '--config-file',
                c['glance'], 'db_sync'])],
            [('neutron-db-manage upgrade heads', [
                self.cvenv_bin('neutron-db-manage')] + neutron +
                ['upgrade', 'heads'])],
            [('nova-manage api_db sync', nova + ['api_db', 'sync']),
             ('nova-manage cell_v2 map_cell0', nova + [
                 'cell_v2', 'map_cell0', '--database_connection',
                 '%s/nova_cell0?charset=utf8' % self.db_url]),
             ('nova-manage cell_v2 create_cell', nova + [
                 'cell_v2', 'create_cell', '--name', 'cell1']),
             ('nova-manage db sync', nova + ['db', 'sync'])]]

        def run(chain):
            for step in chain:
                if callable(step):
                    step()
                else:
                    self._manage(*step)

        _side_by_side([(run, chain) for chain in chains])
        log('schemas and Keystone entries made in %.0f s' % (
            time.monotonic() - started))

    def _register_services(self):
        script = textwrap.dedent('''
            import openstack
            idn = openstack.connect().identity
            proj = idn.find_project('service', domain_id='default')
            roles = [idn.find_role(r) for r in ('admin', 'service')]
            for name in %(users)r:
                user = idn.create_user(name=name, password=%(pw)r,
                                       domain_id='default')
                for role in roles:
                    idn.assign_project_role_to_user(proj, user, role)
            for name, stype, url in %(endpoints)r:
                svc = idn.create_service(name=name, type=stype)
                for i in ('public', 'internal', 'admin'):
                    idn.create_endpoint(service_id=svc.id, interface=i,
                                        url=url, region_id='RegionOne')
            ''') % {'users': conf.SERVICE_USERS,
                    'pw': self.passwords['service'],
                    'endpoints': conf.ENDPOINTS}
        self._python(script, 'registering Nova, Neutron, Glance and '
                             'Placement in Keystone')

    def _python(self, script, what, timeout=300):
        started = time.monotonic()
        result = _bounded(what, [sys.executable, '-c', script],
                          env=self.admin_env(), timeout=timeout)
        log('%s: %.0f s' % (what, time.monotonic() - started))
        if result.returncode != 0:
            raise bed_mod.BedError('%s failed:\n%s' % (
                what, result.stderr[-3000:]))
        return result.stdout

    def _write(self, rel, text):
        path = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write(text)
        return path

    def _manage(self, what, cmd, timeout=600):
        started = time.monotonic()
        result = _bounded(what, cmd, env=self.env, timeout=timeout)
        log('%s: %.0f s' % (what, time.monotonic() - started))
        if result.returncode != 0:
            raise bed_mod.BedError('%s failed:\n%s' % (
                what, (result.stderr or result.stdout)[-3000:]))
        return result.stdout

    def _gunicorn(self, name, module, port, env):
        """A WSGI application under gunicorn, without gunicorn's argv.

        The applications parse sys.argv at import; gunicorn's own options
        must not reach them.
        """
        shim_dir = os.path.join(self.dir, 'wsgi')
        os.makedirs(shim_dir, exist_ok=True)
        shim = name.replace('-', '_') + '_wsgi'
        with open(os.path.join(shim_dir, shim + '.py'), 'w') as f:
            f.write('import sys\nsys.argv = sys.argv[:1]\n'
                    'from %s import application  # noqa\n' % module)
        self._spawn(name, [self.cvenv_bin('gunicorn'), '--chdir', shim_dir,
                           '-b', '127.0.0.1:%d' % port, '-w', '1',
                           '--timeout', '300', shim + ':application'],
                    env=dict(self.env, **env))
        self._wait(name, lambda: bed_mod._http_ok(
            'http://127.0.0.1:%d/' % port), 180, name)

    def _placement(self):
        path = self.confs['placement']
        env = {'OS_PLACEMENT_CONFIG_DIR': os.path.dirname(path)}
        self._gunicorn('placement', 'placement.wsgi.api',
                       conf.PORTS['placement'], env)
        log('Placement up')

    def _glance(self):
        path = self.confs['glance']
        self._gunicorn('glance-api', 'glance.wsgi.api', conf.PORTS['glance'],
                       {'OS_GLANCE_CONFIG_DIR': os.path.dirname(path)})
        log('Glance up (file store)')

    def _neutron(self):
        main, ml2, agent = (self.confs[k]
                            for k in ('neutron', 'ml2', 'agent'))
        both = ['--config-file', main, '--config-file', ml2]
        self._gunicorn('neutron-api', 'neutron.wsgi.api',
                       conf.PORTS['neutron'],
                       {'OS_NEUTRON_CONFIG_DIR': os.path.dirname(main)})
        for name in ('neutron-rpc-server', 'neutron-periodic-workers'):
            self._spawn(name, [self.cvenv_bin(name)] + both)
        network.up()
        self._spawn('neutron-macvtap-agent', [
            self.cvenv_bin('python'), '-m', 'tools.gate.compute.launch',
            '--privsep-in-process',
            'neutron.cmd.plugins.macvtap_neutron_agent:main',
            '--config-file', main, '--config-file', agent],
            env=dict(self.env, PYTHONPATH=ROOT), cwd=ROOT)
        # Its first report waits for RPC and a scan of the interfaces;
        # on a loaded 2-core machine that has taken over 3 minutes.
        self._wait('the macvtap agent reporting to Neutron',
                   lambda: self._agent_alive('macvtap'), 480,
                   'neutron-macvtap-agent')
        log('Neutron up (ML2/macvtap on %s)' % network.PHYS)

    def _agent_alive(self, kind):
        out = self._openstack('network', 'agent', 'list', '-f', 'json')
        return any(kind in a.get('Binary', '') and
                   a.get('Alive') in (True, ':-)') for a in json.loads(
                       out or '[]'))

    def _openstack(self, *args, check=False):
        result = _bounded('openstack %s' % ' '.join(args[:3]),
                          [os.path.join(bed_mod.BIN, 'openstack')] +
                          list(args), env=self.admin_env(), timeout=120)
        if check and result.returncode != 0:
            raise bed_mod.BedError('openstack %s failed:\n%s' % (
                ' '.join(args[:3]), result.stderr[-2000:]))
        return result.stdout if result.returncode == 0 else None

    def _libvirtd(self):
        self.libvirt.prepare()
        self._spawn('libvirtd', self.libvirt.command())
        self._wait('libvirtd answering on %s' % self.libvirt.uri,
                   self.libvirt.ready, 120, 'libvirtd')
        log('libvirtd up (QEMU, TCG)')

    def _nova(self):
        path = self.confs['nova']
        manage = [self.cvenv_bin('nova-manage'), '--config-file', path]
        for name in ('nova-conductor', 'nova-scheduler'):
            self._spawn(name, [self.cvenv_bin(name), '--config-file', path])
        self._spawn('nova-compute', [
            self.cvenv_bin('python'), '-m', 'tools.gate.compute.launch',
            '--iscsi-connector', 'nova.cmd.compute:main', '--config-file',
            path],
            env=self._brick_env('nova-compute'), cwd=ROOT)
        self._gunicorn('nova-api', 'nova.wsgi.osapi_compute',
                       conf.PORTS['nova-api'],
                       {'OS_NOVA_CONFIG_DIR': os.path.dirname(path)})
        self._wait('nova-compute registering %s as a hypervisor' %
                   conf.COMPUTE_HOST, self._hypervisor_up, 300,
                   'nova-compute')
        # Mapped to cell1 now rather than at the scheduler's next look.
        self._manage('nova-manage cell_v2 discover_hosts',
                     manage + ['cell_v2', 'discover_hosts'])
        log('Nova up (libvirt, virt_type=qemu)')

    def _hypervisor_up(self):
        out = self._openstack('hypervisor', 'list', '-f', 'json')
        return bool(out and any(h.get('State') == 'up'
                                for h in json.loads(out)))

    def _cloud_objects(self):
        script = textwrap.dedent('''
            import json
            import openstack
            c = openstack.connect()
            flavors = [c.compute.create_flavor(**spec).id
                       for spec in (%(flavor)r, %(flavor_alt)r)]
            image = c.image.create_image(
                name=%(image)r, filename=%(path)r, disk_format='qcow2',
                container_format='bare', visibility='public',
                min_ram=%(min_ram)d, wait=True, timeout=600,
                validate_checksum=False, **%(props)r)
            net = c.network.create_network(
                name=%(net)r, shared=True, provider_network_type='flat',
                provider_physical_network=%(physnet)r)
            c.network.create_subnet(
                network_id=net.id, ip_version=4, cidr=%(cidr)r,
                gateway_ip=%(gw)r, enable_dhcp=False,
                allocation_pools=[{'start': %(start)r, 'end': %(end)r}])
            print(json.dumps({'flavor': flavors[0], 'flavor_alt': flavors[1],
                              'image': image.id, 'network': net.id,
                              'network_name': net.name}))
            ''') % {'flavor': FLAVOR, 'flavor_alt': FLAVOR_ALT,
                    'image': IMAGE_NAME, 'path': self.image_path,
                    'min_ram': image.MIN_RAM_MIB, 'props': image.PROPERTIES,
                    'net': NETWORK_NAME, 'physnet': network.PHYSNET,
                    'cidr': str(network.CIDR), 'gw': network.HOST_IP,
                    'start': network.POOL[0], 'end': network.POOL[1]}
        out = self._python(script, 'creating flavors, the image and the '
                                   'provider network', timeout=900)
        with open(self.cloud_file, 'w') as f:
            f.write(out.strip().splitlines()[-1])
        log('image %s, flavor %s, network %s (%s)' % (
            self.cloud['image'], FLAVOR['name'], NETWORK_NAME,
            network.CIDR))


def _bounded(what, cmd, env, timeout):
    """Run a command; one that outlasts its time limit is a BedError."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise bed_mod.BedError('%s: no end after %d s' % (what, timeout))


def _side_by_side(calls):
    """Run (function, argument) pairs in threads; wait for every one.

    The first error is raised once all have ended, so that nothing is
    still running when the bed goes down.
    """
    errors = []

    def call(fn, arg):
        try:
            fn(arg)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=call, args=pair) for pair in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
