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

"""A one-machine cloud: reference array, MariaDB, RabbitMQ, Keystone and
Cinder 29 (api, scheduler, volume) with cinder-flash backends, as an
operator would configure them. Everything listens on 127.0.0.1.

State and logs live in one directory; the PIDs of what was started are
recorded there, so ``down`` works from another process.
"""

import json
import os
import secrets
import shutil
import subprocess
import sys
import textwrap
import time

from reference_array import launch
from reference_array import pairing
from tools.gate import cinder_conf
from tools.gate import processes

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.dirname(sys.executable)
SECRETS = ('admin', 'db', 'service')
PORTS = {'mariadb': 3306, 'rabbit': 5672, 'epmd': 4369, 'keystone': 5000,
         'cinder': 8776, 'iscsi': 3260, 'iscsi-dr': 3261}
# The K2 iSCSI backend replicates to a second array, its disaster-recovery
# site; the FC backend does not, so both kinds of pool are on the bed.
REPLICA_ID = 'dr'
BACKEND = cinder_conf.BACKEND
LINSTOR_BACKEND = cinder_conf.LINSTOR_BACKEND
BACKENDS = cinder_conf.BACKENDS
# The process helpers under the names the bed's users know.
port_open = processes.port_open
tail = processes.tail
_http_ok = processes.http_ok
_stop_group = processes.stop_group


def _password():
    # Never a leading "-": command lines would read it as an option.
    return 'p' + secrets.token_urlsafe(18)


class BedError(Exception):
    pass


def log(msg):
    print('[bed] %s' % msg, flush=True)


class Bed(object):
    """``cluster``: None for one cinder-volume, or the coordinator kind
    (``redis``, ``etcd``) for two in one cluster (tools.gate.cluster).
    Subclasses (the compute bed) add services through the hooks below.
    """

    def __init__(self, state_dir, cluster=None):
        self.dir = os.path.abspath(state_dir)
        self.logs = os.path.join(self.dir, 'logs')
        self.state_file = os.path.join(self.dir, 'pids.json')
        self.kvenv = os.path.join(ROOT, '.gate-kvenv')
        self.env = dict(os.environ)
        self.env.pop('OS_CLOUD', None)
        self.secrets_file = os.path.join(self.dir, 'secrets.json')
        self.passwords = self._load_secrets()
        self.cluster = None
        if cluster:
            from tools.gate import cluster as cluster_mod
            self.cluster = cluster_mod.Cluster(self, cluster)

    def _load_secrets(self):
        """This bed's passwords: made anew by up(), read back later."""
        try:
            with open(self.secrets_file) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {name: _password() for name in SECRETS}

    def _save_secrets(self):
        fd = os.open(self.secrets_file, os.O_WRONLY | os.O_CREAT |
                     os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            json.dump(self.passwords, f)

    @property
    def db_url(self):
        return 'mysql+pymysql://os:%s@127.0.0.1' % self.passwords['db']

    # -- bookkeeping ---------------------------------------------------------
    def _pids(self):
        try:
            with open(self.state_file) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def _record(self, name, pid):
        pids = self._pids()
        pids[name] = pid
        with open(self.state_file, 'w') as f:
            json.dump(pids, f)

    def _spawn(self, name, cmd, env=None, cwd=None):
        logfile = open(os.path.join(self.logs, name + '.log'), 'ab')
        proc = subprocess.Popen(cmd, stdout=logfile, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env or self.env,
                                cwd=cwd, start_new_session=True)
        logfile.close()
        self._record(name, proc.pid)
        return proc

    def _wait(self, what, check, timeout, logname):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            time.sleep(0.5)
        raise BedError('%s did not come up in %ss; last lines of its log:\n'
                       '%s' % (what, timeout, tail(os.path.join(
                           self.logs, logname + '.log'))))

    # -- up ------------------------------------------------------------------
    def up(self):
        if os.path.exists(self.state_file) and self._pids():
            raise BedError('a bed is already running from %s; run down '
                           'first' % self.dir)
        for name, port in self.ports().items():
            if port_open(port):
                raise BedError('port %d (%s) is already in use on '
                               '127.0.0.1' % (port, name))
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.logs)
        self.passwords = {name: _password() for name in SECRETS}
        self._save_secrets()
        started = time.monotonic()
        try:
            self._before_up()
            self._keystone_venv()
            self._array()
            self._mariadb()
            self._rabbit()
            if self.cluster:
                self.cluster.start_coordinator()
            self._keystone()
            self._register()
            self._cinder()
            self._volume_types()
            self._after_cinder()
            self._write_client_files()
        except BaseException:
            self.down()
            raise
        log('up in %.0f s; credentials in %s' % (
            time.monotonic() - started, os.path.join(self.dir, 'openrc')))

    def ports(self):
        ports = dict(PORTS)
        if self.cluster:
            ports.update(self.cluster.ports)
        return ports

    def _keystone_venv(self):
        """Keystone lives in a venv of its own, kept between runs."""
        if os.path.exists(os.path.join(self.kvenv, 'bin', 'keystone-manage')):
            return
        log('installing Keystone 30 into %s' % self.kvenv)
        subprocess.run([sys.executable, '-m', 'venv', self.kvenv], check=True)
        subprocess.run([os.path.join(self.kvenv, 'bin', 'pip'), 'install',
                        '-q', '-c', os.path.join(HERE,
                                                 'keystone-constraints.txt'),
                        'keystone==30.0.0', 'gunicorn', 'PyMySQL'],
                       check=True)

    def _start_array(self, name, extra):
        array = launch.ArrayProcess(
            os.path.join(self.dir, name),
            ['--capacity-gib', '2048', '--name', name] + extra,
            os.path.join(self.logs, name + '.log'), detach=True)
        try:
            info = array.start()
        except launch.ArrayProcessError as e:
            raise BedError('reference array %s: %s' % (name, e))
        finally:
            if array.proc is not None:
                self._record(name, array.pid)
        with open(os.path.join(self.dir, name + '.json'), 'w') as f:
            json.dump(info, f)
        log('reference array %s at %s' % (name, info['k2']))
        return info

    def _array(self):
        self.array = self._start_array('array', [])
        self.replica = self._start_array(
            'array-dr', ['--iscsi-port', str(PORTS['iscsi-dr'])])
        # Pairing is the array administrator's job, done once per pair.
        try:
            pairing.pair(self.array, self.replica, REPLICA_ID)
            pairing.pair(self.replica, self.array, 'primary')
        except pairing.PairingError as e:
            raise BedError(str(e))

    def _mariadb(self):
        data = os.path.join(self.dir, 'mysql')
        os.makedirs(data)
        subprocess.run(['mariadb-install-db', '--no-defaults',
                        '--datadir=' + data, '--user=root',
                        '--skip-test-db'], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.sock = os.path.join(data, 'sock')
        self._spawn('mariadb', [
            'mariadbd', '--no-defaults', '--datadir=' + data,
            '--socket=' + self.sock, '--port=%d' % PORTS['mariadb'],
            '--bind-address=127.0.0.1', '--user=root',
            '--pid-file=' + os.path.join(data, 'mysqld.pid'),
            '--skip-name-resolve', '--max-connections=1000',
            '--innodb-flush-log-at-trx-commit=2'])
        self._wait('MariaDB', lambda: port_open(PORTS['mariadb']), 60,
                   'mariadb')
        sql = ("CREATE DATABASE cinder; CREATE DATABASE keystone; "
               "CREATE USER 'os'@'127.0.0.1' IDENTIFIED BY '%s'; "
               "GRANT ALL ON *.* TO 'os'@'127.0.0.1';" % self.passwords['db'])
        subprocess.run(['mariadb', '-S', self.sock, '-uroot', '-e', sql],
                       check=True)
        log('MariaDB up')

    def _rabbit_env(self):
        base = os.path.join(self.dir, 'rabbit')
        env = dict(self.env, HOME=base, RABBITMQ_NODENAME='rabbit@localhost',
                   RABBITMQ_NODE_IP_ADDRESS='127.0.0.1',
                   ERL_EPMD_ADDRESS='127.0.0.1',
                   RABBITMQ_MNESIA_BASE=os.path.join(base, 'mnesia'),
                   RABBITMQ_LOG_BASE=os.path.join(base, 'log'),
                   RABBITMQ_PID_FILE=os.path.join(base, 'rabbit.pid'),
                   RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(
                       base, 'enabled_plugins'),
                   RABBITMQ_CONFIG_FILE=os.path.join(base, 'rabbitmq'),
                   RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=(
                       '-kernel inet_dist_use_interface {127,0,0,1}'))
        return base, env

    def _rabbit(self):
        base, env = self._rabbit_env()
        os.makedirs(base, exist_ok=True)
        with open(os.path.join(base, 'enabled_plugins'), 'w') as f:
            f.write('[].')
        with open(os.path.join(base, 'rabbitmq.conf'), 'w') as f:
            f.write('listeners.tcp.default = 127.0.0.1:%d\n' %
                    PORTS['rabbit'])
        self._spawn('rabbit', ['/usr/lib/rabbitmq/bin/rabbitmq-server'],
                    env=env)
        result = subprocess.run(
            ['/usr/lib/rabbitmq/bin/rabbitmqctl', 'wait',
             env['RABBITMQ_PID_FILE'], '--timeout', '90'], env=env,
            capture_output=True, text=True)
        if result.returncode != 0:
            raise BedError('RabbitMQ did not come up:\n%s\n%s' % (
                result.stdout[-2000:], tail(os.path.join(self.logs,
                                                         'rabbit.log'))))
        log('RabbitMQ up')

    def _keystone(self):
        kdir = os.path.join(self.dir, 'keystone')
        os.makedirs(kdir)
        conf = os.path.join(kdir, 'keystone.conf')
        with open(conf, 'w') as f:
            f.write(textwrap.dedent('''\
                [DEFAULT]
                log_file = %(logs)s/keystone-app.log
                [database]
                connection = %(dburl)s/keystone?charset=utf8
                [fernet_tokens]
                key_repository = %(k)s/fernet-keys
                [fernet_receipts]
                key_repository = %(k)s/fernet-keys
                [credential]
                key_repository = %(k)s/credential-keys
                [identity]
                password_hash_rounds = 4
                ''') % {'logs': self.logs, 'dburl': self.db_url, 'k': kdir})
        manage = [os.path.join(self.kvenv, 'bin', 'keystone-manage'),
                  '--config-file', conf]
        for args in (['db_sync'],
                     ['fernet_setup', '--keystone-user', 'root',
                      '--keystone-group', 'root'],
                     ['credential_setup', '--keystone-user', 'root',
                      '--keystone-group', 'root'],
                     ['bootstrap', '--bootstrap-password',
                      self.passwords['admin'],
                      '--bootstrap-region-id', 'RegionOne',
                      '--bootstrap-admin-url', 'http://127.0.0.1:5000/v3/',
                      '--bootstrap-public-url', 'http://127.0.0.1:5000/v3/',
                      '--bootstrap-internal-url',
                      'http://127.0.0.1:5000/v3/']):
            result = subprocess.run(manage + args, capture_output=True,
                                    text=True)
            if result.returncode != 0:
                raise BedError('keystone-manage %s failed:\n%s' % (
                    args[0], result.stderr[-3000:]))
        # gunicorn's own arguments must not reach Keystone's parser.
        with open(os.path.join(kdir, 'kwsgi.py'), 'w') as f:
            f.write('import sys\nsys.argv = sys.argv[:1]\n'
                    'from keystone.wsgi.api import application  # noqa\n')
        env = dict(self.env, OS_KEYSTONE_CONFIG_FILES=conf)
        self._spawn('keystone', [
            os.path.join(self.kvenv, 'bin', 'gunicorn'), '--chdir', kdir,
            '-b', '127.0.0.1:%d' % PORTS['keystone'], '-w', '2',
            'kwsgi:application'], env=env)
        self._wait('Keystone', lambda: processes.http_ok(
            'http://127.0.0.1:5000/v3'), 90, 'keystone')
        log('Keystone up')

    def admin_env(self):
        return dict(self.env, OS_AUTH_URL='http://127.0.0.1:5000/v3',
                    OS_USERNAME='admin', OS_PASSWORD=self.passwords['admin'],
                    OS_PROJECT_NAME='admin', OS_USER_DOMAIN_ID='default',
                    OS_PROJECT_DOMAIN_ID='default',
                    OS_IDENTITY_API_VERSION='3', OS_REGION_NAME='RegionOne',
                    OS_VOLUME_API_VERSION='3.70')

    def _register(self):
        script = textwrap.dedent('''
            import openstack
            idn = openstack.connect().identity
            proj = idn.create_project(name='service', domain_id='default')
            user = idn.create_user(name='cinder', password=%r,
                                   domain_id='default')
            for r in ('admin', 'service'):
                idn.assign_project_role_to_user(proj, user, idn.find_role(r))
            for name, stype, url in (
                    ('cinder', 'block-storage', 'http://127.0.0.1:8776/v3'),
                    ('cinderv3', 'volumev3',
                     'http://127.0.0.1:8776/v3/%%(project_id)s')):
                svc = idn.create_service(name=name, type=stype)
                for i in ('public', 'internal', 'admin'):
                    idn.create_endpoint(service_id=svc.id, interface=i,
                                        url=url, region_id='RegionOne')
            ''') % self.passwords['service']
        result = subprocess.run([sys.executable, '-c', script],
                                env=self.admin_env(), capture_output=True,
                                text=True)
        if result.returncode != 0:
            raise BedError('registering Cinder in Keystone failed:\n%s' %
                           result.stderr[-3000:])

    def cinder_conf_path(self):
        return os.path.join(self.dir, 'cinder', 'cinder.conf')

    def _cinder(self):
        cdir = os.path.join(self.dir, 'cinder')
        for sub in ('state', 'lock'):
            os.makedirs(os.path.join(cdir, sub))
        etc = os.path.join(os.path.dirname(BIN), 'etc', 'cinder')
        host, port = self.array['k2'][len('https://'):].rsplit(':', 1)
        with open(self.cinder_conf_path(), 'w') as f:
            f.write(cinder_conf.text(self, cdir, etc, host, port))
        conf = self.cinder_conf_path()
        if self.cluster:
            self.cluster.write_conf()
        result = subprocess.run([os.path.join(BIN, 'cinder-manage'),
                                 '--config-file', conf, 'db', 'sync'],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise BedError('cinder-manage db sync failed:\n%s' %
                           result.stderr[-3000:])
        # Volume first: the scheduler waits for its capabilities.
        volumes = (self.cluster.volume_services() if self.cluster else
                   [('cinder-volume', [])])
        for name, extra in volumes:
            self.start_volume_service(name, extra)
        for service in ('scheduler', 'api'):
            self.start_cinder_service(service)
        self._wait('cinder-api', lambda: processes.http_ok(
            'http://127.0.0.1:8776/'), 90, 'cinder-api')
        self._wait('cinder-volume (%s) reporting up' % ', '.join(BACKENDS),
                   self._backends_up, 120, volumes[0][0])
        log('Cinder up with backends %s%s' % (', '.join(BACKENDS), (
            ' on %s' % ', '.join(self.volume_hosts())) if self.cluster
            else ''))

    def start_cinder_service(self, service):
        """cinder-scheduler or cinder-api (``service``), as configured."""
        shared = self.cluster.conf_args() if self.cluster else []
        cmd, env = self._cinder_command(service, self.cinder_conf_path())
        self._spawn('cinder-' + service, cmd + shared, env)

    def restart_cinder_service(self, service):
        processes.stop_group(self._pids()['cinder-' + service])
        self.start_cinder_service(service)

    def start_volume_service(self, name, extra_args):
        cmd, env = self._cinder_command('volume', self.cinder_conf_path())
        self._spawn(name, cmd + list(extra_args), env)

    def volume_hosts(self):
        if self.cluster:
            from tools.gate import cluster as cluster_mod
            return list(cluster_mod.MEMBERS)
        return ['gate']

    def _replication_device(self):
        host, port = self.replica['k2'][len('https://'):].rsplit(':', 1)
        return ','.join('%s:%s' % item for item in (
            ('backend_id', REPLICA_ID), ('san_ip', host),
            ('san_api_port', port), ('san_login', self.replica['user']),
            ('san_password', self.replica['password']),
            ('driver_ssl_cert_path', self.replica['ca_cert'])))

    def _backends_up(self):
        result = subprocess.run(
            [os.path.join(BIN, 'cinder'), 'service-list', '--binary',
             'cinder-volume'], env=self.admin_env(), capture_output=True,
            text=True)
        up = [line for line in result.stdout.splitlines() if ' up ' in line]
        return all(any('%s@%s' % (h, b) in line for line in up)
                   for b in BACKENDS for h in self.volume_hosts())

    def cinder(self, *args):
        result = subprocess.run([os.path.join(BIN, 'cinder')] + list(args),
                                env=self.admin_env(), capture_output=True,
                                text=True)
        if result.returncode != 0:
            raise BedError('cinder %s failed:\n%s' % (' '.join(args),
                                                      result.stderr))
        return result.stdout

    def _volume_types(self):
        self.cinder('type-create', 'dedup')
        self.cinder('type-key', 'dedup', 'set',
                    'volume_backend_name=%s' % BACKEND)
        self.cinder('type-create', 'linstor')
        self.cinder('type-key', 'linstor', 'set',
                    'volume_backend_name=%s' % LINSTOR_BACKEND,
                    'linstor:property:DrbdOptions:Disk:disk-flushes=no',
                    'linstor:property:DrbdOptions:Disk:md-flushes=no')
        self.cinder('type-create', 'nodedup')
        self.cinder('type-key', 'nodedup', 'set',
                    'volume_backend_name=%s' % BACKEND,
                    'k2:dedup=<is> False')

    def _write_client_files(self):
        env = self.admin_env()
        keys = sorted(k for k in env if k.startswith('OS_'))
        path = os.path.join(self.dir, 'openrc')
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            for key in keys:
                f.write('export %s=%s\n' % (key, env[key]))

    # -- hooks ---------------------------------------------------------------
    def _before_up(self):
        """Checks and preparations before anything starts."""

    def _after_cinder(self):
        """More services, once Cinder and its volume types are up."""

    def _cinder_extra_conf(self):
        """More cinder.conf sections."""
        return ''

    def _cinder_command(self, service, conf):
        """(command, environment) of a Cinder service."""
        return [os.path.join(BIN, 'cinder-' + service), '--config-file',
                conf], None

    def _before_down(self):
        """Runs first in down(), while every service still runs."""

    def _after_down(self):
        """Runs once every recorded process is stopped."""

    # -- down ----------------------------------------------------------------
    def down(self):
        self._before_down()
        pids = self._pids()
        if 'rabbit' in pids:
            base, env = self._rabbit_env()
            subprocess.run(['/usr/lib/rabbitmq/bin/rabbitmqctl', 'stop',
                            env['RABBITMQ_PID_FILE']], env=env,
                           capture_output=True, timeout=60)
        for name in reversed(list(pids)):
            processes.stop_group(pids[name])
        processes.stop_epmd()
        self._after_down()
        if os.path.exists(self.state_file):
            os.unlink(self.state_file)
        left = [name for name, port in self.ports().items()
                if port_open(port)]
        if left:
            raise BedError('still listening after down: %s' %
                           ', '.join(left))
        log('down: nothing left running')
