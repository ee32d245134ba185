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
  and friends: the series of Cinder 29), kept between runs.
- libvirtd and QEMU (TCG) from Debian, apart from the host's libvirt
  (``libvirtd.py``).
- Volumes reach the hypervisor through ``brick.py``: nova-compute and
  cinder-volume start with it in place of os-brick's iSCSI connector.
- The provider network lives on a veth pair and a namespace the bed makes
  and removes (``network.py``); guests are configured by config drive.
- The guest image is built once from Debian packages (``image.py``) and
  uploaded to Glance.

``down`` destroys every domain, detaches every LUN, stops every process
and removes the network; what it cannot remove is an error.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

from tools.gate import bed as bed_mod
from tools.gate.compute import conf
from tools.gate.compute import image
from tools.gate.compute import libvirtd
from tools.gate.compute import network
from tools import iscsi_loop

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = bed_mod.ROOT
CVENV = os.path.join(ROOT, '.gate-cvenv')
CVENV_PACKAGES = ('nova==34.0.0', 'neutron==29.0.0', 'glance==33.0.0',
                  'openstack-placement==16.0.0', 'os-brick==7.1.1',
                  'libvirt-python', 'gunicorn', 'PyMySQL')
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


def ensure_cvenv():
    """The compute services' virtualenv, made once and kept."""
    if os.path.exists(os.path.join(CVENV, 'bin', 'nova-compute')):
        return
    missing = [pkg for tool, pkg in (('pkg-config', 'pkg-config'),)
               if shutil.which(tool) is None]
    if missing or not os.path.exists('/usr/include/libvirt/libvirt.h'):
        raise bed_mod.BedError('libvirt-python builds against Debian\'s '
                               'libvirt-dev and pkg-config: install them')
    log('installing Nova 34, Neutron 29, Glance 33 and Placement 16 into '
        '%s (once)' % CVENV)
    subprocess.run([sys.executable, '-m', 'venv', CVENV], check=True)
    subprocess.run([os.path.join(CVENV, 'bin', 'pip'), 'install', '-q',
                    '-c', os.path.join(HERE, 'constraints.txt')] +
                   list(CVENV_PACKAGES), check=True)


class ComputeBed(bed_mod.Bed):

    def ports(self):
        return dict(super().ports(), **conf.PORTS)

    def __init__(self, state_dir):
        super().__init__(state_dir)
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
        ensure_cvenv()
        try:
            self.image_path = image.ensure()
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
        self._register_services()
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
        result = subprocess.run([sys.executable, '-c', script],
                                env=self.admin_env(), capture_output=True,
                                text=True, timeout=timeout)
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
        result = subprocess.run(cmd, capture_output=True, text=True,
                                env=self.env, timeout=timeout)
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
        path = self._write('placement/placement.conf', conf.placement(
            self.ctx))
        env = {'OS_PLACEMENT_CONFIG_DIR': os.path.dirname(path)}
        self._manage('placement-manage db sync', [
            self.cvenv_bin('placement-manage'), '--config-file', path, 'db',
            'sync'])
        self._gunicorn('placement', 'placement.wsgi.api',
                       conf.PORTS['placement'], env)
        log('Placement up')

    def _glance(self):
        for sub in ('images', 'staging', 'tasks', 'lock'):
            os.makedirs(os.path.join(self.dir, 'glance', sub))
        path = self._write('glance/glance-api.conf', conf.glance(self.ctx))
        self._manage('glance-manage db_sync', [
            self.cvenv_bin('glance-manage'), '--config-file', path,
            'db_sync'])
        self._gunicorn('glance-api', 'glance.wsgi.api', conf.PORTS['glance'],
                       {'OS_GLANCE_CONFIG_DIR': os.path.dirname(path)})
        log('Glance up (file store)')

    def _neutron(self):
        for sub in ('state', 'lock'):
            os.makedirs(os.path.join(self.dir, 'neutron', sub))
        main = self._write('neutron/neutron.conf', conf.neutron(self.ctx))
        ml2 = self._write('neutron/plugins/ml2/ml2_conf.ini',
                          conf.ml2(self.ctx))
        agent = self._write('neutron/macvtap_agent.ini',
                            conf.macvtap_agent(self.ctx))
        both = ['--config-file', main, '--config-file', ml2]
        self._manage('neutron-db-manage upgrade heads', [
            self.cvenv_bin('neutron-db-manage')] + both + ['upgrade',
                                                           'heads'])
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
        result = subprocess.run([os.path.join(bed_mod.BIN, 'openstack')] +
                                list(args), env=self.admin_env(),
                                capture_output=True, text=True, timeout=120)
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
        for sub in ('state', 'instances', 'lock'):
            os.makedirs(os.path.join(self.dir, 'nova', sub))
        path = self._write('nova/nova.conf', conf.nova(self.ctx))
        shutil.copy(self.ctx.etc('nova', 'api-paste.ini'),
                    os.path.join(self.dir, 'nova', 'api-paste.ini'))
        manage = [self.cvenv_bin('nova-manage'), '--config-file', path]
        self._manage('nova-manage api_db sync', manage + ['api_db', 'sync'])
        self._manage('nova-manage cell_v2 map_cell0', manage + [
            'cell_v2', 'map_cell0', '--database_connection',
            '%s/nova_cell0?charset=utf8' % self.db_url])
        self._manage('nova-manage cell_v2 create_cell', manage + [
            'cell_v2', 'create_cell', '--name', 'cell1'])
        self._manage('nova-manage db sync', manage + ['db', 'sync'])
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
