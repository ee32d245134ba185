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

"""The devstack plugin, run phase by phase on stand-ins for devstack.

The stand-ins write real ini files, so the resulting cinder.conf and
tempest.conf are read back and checked; the reference-array case starts
the real array and runs ``cinder-flash check`` on the written section.
"""

import configparser
import os
import shutil
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

from cinder_driver.common import compat

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, 'run_plugin.sh')
ROOT = os.path.dirname(os.path.dirname(HERE))


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class PluginTestCase(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.env = {
            'PATH': os.environ['PATH'], 'HOME': self.dir,
            'DEST': os.path.join(self.dir, 'opt'),
            'DATA_DIR': os.path.join(self.dir, 'data'),
            'CINDER_CONF': os.path.join(self.dir, 'cinder.conf'),
            'TEMPEST_CONFIG': os.path.join(self.dir, 'tempest.conf'),
            'STUB_LOG': os.path.join(self.dir, 'stub.log'),
            'PYTHON': sys.executable,
            'CINDER_ENABLED_BACKENDS': 'lvm:lvmdriver-1'}

    def run_plugin(self, *phases, check=True, **env):
        result = subprocess.run(['bash', RUN] + list(phases),
                                env=dict(self.env, **env),
                                capture_output=True, text=True, timeout=120)
        if check:
            self.assertEqual(0, result.returncode, result.stderr)
        return result

    def ini(self, name):
        parser = configparser.RawConfigParser(strict=False)
        parser.optionxform = str
        parser.read(self.env[name])
        return parser

    def assert_ready(self, backend):
        """``cinder-flash check`` passes on the written section."""
        check = subprocess.run(
            [sys.executable, '-m', 'cinder_driver.cmd.cli', 'check',
             '--config-file', self.env['CINDER_CONF'], '--backend',
             backend], capture_output=True, text=True, cwd=ROOT,
            timeout=120)
        self.assertEqual(0, check.returncode, check.stdout + check.stderr)
        self.assertIn('backend %s: ready' % backend, check.stdout)

    def stub_log(self):
        with open(self.env['STUB_LOG']) as f:
            return f.read().splitlines()

    def test_backends_join_the_enabled_ones(self):
        self.run_plugin(CINDER_FLASH_BACKENDS='k2:k2-iscsi,k2:k2-b')
        self.assertIn('CINDER_ENABLED_BACKENDS=lvm:lvmdriver-1,k2:k2-iscsi,'
                      'k2:k2-b', self.stub_log())
        self.assertIn('define_plugin cinder-flash', self.stub_log())
        self.assertIn('plugin_requires cinder-flash cinder',
                      self.stub_log())
        # Already listed: not added twice.
        self.run_plugin(CINDER_ENABLED_BACKENDS='k2:k2-iscsi')
        self.assertEqual('CINDER_ENABLED_BACKENDS=k2:k2-iscsi',
                         self.stub_log()[-1])

    def test_install_phase_installs_the_package(self):
        # With a reference array on this host: its engine too.
        self.run_plugin('stack:install')
        self.assertIn('setup_develop %s array' % os.path.join(
            self.env['DEST'], 'cinder-flash'), self.stub_log())
        # A real array: the drivers alone.
        self.run_plugin('stack:install', CINDER_FLASH_K2_SAN_IP='192.0.2.1')
        self.assertEqual('setup_develop %s' % os.path.join(
            self.env['DEST'], 'cinder-flash'), self.stub_log()[-1])

    def test_real_k2_array_section(self):
        self.run_plugin(
            'configure', CINDER_FLASH_K2_SAN_IP='192.0.2.10',
            CINDER_FLASH_K2_SAN_PORT='8443',
            CINDER_FLASH_K2_PASSWORD='pw', CINDER_FLASH_K2_PROTOCOL='fc',
            CINDER_FLASH_K2_CA_CERT='/etc/k2.pem')
        section = dict(self.ini('CINDER_CONF')['k2-iscsi'])
        self.assertEqual({
            'volume_driver': 'cinder_driver.k2.driver.K2FCDriver',
            'volume_backend_name': 'k2-iscsi', 'san_ip': '192.0.2.10',
            'san_login': 'cinder', 'san_password': 'pw',
            'san_api_port': '8443', 'driver_ssl_cert_path': '/etc/k2.pem',
            'driver_ssl_cert_verify': 'True'}, section)

    def test_linstor_section(self):
        self.run_plugin('configure', CINDER_FLASH_BACKENDS='linstor:drbd-1',
                        CINDER_FLASH_LINSTOR_URIS='linstor://10.0.0.1')
        section = dict(self.ini('CINDER_CONF')['drbd-1'])
        self.assertEqual({
            'volume_driver': 'cinder_driver.linstor.driver.'
                             'LinstorDrbdDriver',
            'volume_backend_name': 'drbd-1',
            'linstor_uris': 'linstor://10.0.0.1',
            'linstor_storage_pool': 'DfltStorPool',
            'linstor_placement_count': '2'}, section)

    def test_linstor_authentication(self):
        self.run_plugin('configure', CINDER_FLASH_BACKENDS='linstor:drbd-1',
                        CINDER_FLASH_LINSTOR_URIS='linstor+ssl://10.0.0.1',
                        CINDER_FLASH_LINSTOR_USERNAME='cinder',
                        CINDER_FLASH_LINSTOR_PASSWORD='pw',
                        CINDER_FLASH_LINSTOR_TRUSTED_CA='/etc/ca.pem',
                        CINDER_FLASH_LINSTOR_CLIENT_CERT='/etc/c.pem',
                        CINDER_FLASH_LINSTOR_CLIENT_KEY='/etc/c.key')
        section = dict(self.ini('CINDER_CONF')['drbd-1'])
        self.assertEqual({
            'linstor_username': 'cinder', 'linstor_password': 'pw',
            'linstor_trusted_ca': '/etc/ca.pem',
            'linstor_client_cert': '/etc/c.pem',
            'linstor_client_key': '/etc/c.key'}, {
                k: v for k, v in section.items()
                if k.startswith('linstor_') and k not in (
                    'linstor_uris', 'linstor_storage_pool',
                    'linstor_placement_count')})

    def test_linstor_defaults_to_the_reference_array(self):
        self.run_plugin('configure', CINDER_FLASH_BACKENDS='linstor:drbd-1',
                        CINDER_FLASH_ARRAY_LINSTOR_PORT='3999')
        section = dict(self.ini('CINDER_CONF')['drbd-1'])
        self.assertEqual('linstor://127.0.0.1:3999', section['linstor_uris'])

    def test_bad_settings_stop_the_run(self):
        result = self.run_plugin('configure', check=False,
                                 CINDER_FLASH_BACKENDS='linstor:drbd-1',
                                 CINDER_FLASH_LINSTOR_PROTOCOL='nvme')
        self.assertNotEqual(0, result.returncode)
        self.assertIn('CINDER_FLASH_LINSTOR_PROTOCOL=nvme', result.stderr)
        result = self.run_plugin('configure', check=False,
                                 CINDER_FLASH_K2_PROTOCOL='nvme')
        self.assertIn('CINDER_FLASH_K2_PROTOCOL=nvme', result.stderr)

    def test_tempest_flags(self):
        self.run_plugin('stack:test-config')
        tempest = self.ini('TEMPEST_CONFIG')
        flags = dict(tempest['volume-feature-enabled'])
        for flag in ('snapshot', 'clone', 'manage_volume', 'manage_snapshot',
                     'extend_attached_volume', 'volume_revert',
                     'consistency_group', 'multi_backend'):
            self.assertEqual('True', flags[flag], flag)
        self.assertEqual(('cinder-flash', 'iSCSI', 'source-name,cv-%s'), (
            tempest['volume']['vendor_name'],
            tempest['volume']['storage_protocol'],
            tempest['volume']['manage_volume_ref']))
        self.assertEqual('True', tempest['compute-feature-enabled'][
            'volume_multiattach'])
        # The volume type devstack creates for the first backend.
        self.assertEqual('k2-iscsi',
                         tempest['cinder_flash']['dedup_volume_type'])
        # Set only where Cinder enforces token scopes whatever devstack
        # configured (29 on, the tox env's series).
        scoped = compat.scope_enforced_by_default(compat.cinder_major())
        self.assertEqual(scoped, tempest.has_section('enforce_scope'))
        if scoped:
            self.assertEqual('True', tempest['enforce_scope']['cinder'])

    def fake_python(self, output, status=0):
        """A $PYTHON whose compat module reports another Cinder."""
        path = os.path.join(self.dir, 'python')
        with open(path, 'w') as f:
            f.write('#!/bin/sh\nprintf "%s"\nexit %d\n' % (output, status))
        os.chmod(path, 0o755)
        return path

    def test_tempest_flags_follow_the_series(self):
        # Cinder 28 leaves scopes to the configuration devstack wrote:
        # the plugin does not touch them.
        result = self.run_plugin(
            'stack:test-config',
            PYTHON=self.fake_python('28\\n2026.1\\nFalse\\n'))
        self.assertIn('Tempest flags for Cinder 28 (2026.1)', result.stdout)
        tempest = self.ini('TEMPEST_CONFIG')
        self.assertFalse(tempest.has_section('enforce_scope'))
        self.assertEqual('True', tempest['volume-feature-enabled'][
            'volume_revert'])

    def test_unsupported_cinder_stops_the_run(self):
        result = self.run_plugin('stack:test-config', check=False,
                                 PYTHON=self.fake_python('', 1))
        self.assertNotEqual(0, result.returncode)
        self.assertIn('does not support the installed Cinder', result.stderr)

    def test_reference_array_started_checked_and_stopped(self):
        env = {'CINDER_FLASH_ARRAY_PORT': str(free_port()),
               'CINDER_FLASH_ARRAY_ISCSI_PORT': str(free_port()),
               'CINDER_FLASH_ARRAY_LINSTOR_PORT': str(free_port())}
        self.run_plugin('configure', 'stack:post-config', **env)
        pidfile = os.path.join(self.env['DATA_DIR'], 'cinder-flash-array',
                               'array.pid')
        with open(pidfile) as f:
            pid = int(f.read())
        self.addCleanup(_kill, pid)
        section = self.ini('CINDER_CONF')['k2-iscsi']
        self.assertEqual('127.0.0.1', section['san_ip'])
        self.assertNotIn(section['san_password'], self.stub_log())
        # The password is neither on the array's command line nor in a
        # file others can read.
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            self.assertNotIn(section['san_password'].encode(), f.read())
        data_dir = os.path.dirname(pidfile)
        self.assertEqual(0o700, stat.S_IMODE(os.stat(data_dir).st_mode))
        for name in os.listdir(data_dir):
            st = os.stat(os.path.join(data_dir, name))
            want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
            self.assertEqual(want, stat.S_IMODE(st.st_mode), name)
        self.assert_ready('k2-iscsi')
        self.run_plugin('unstack', **env)
        self.assertFalse(_alive(pid))
        self.assertFalse(os.path.exists(pidfile))
        self.run_plugin('clean', **env)
        self.assertFalse(os.path.exists(os.path.dirname(pidfile)))

    def test_reference_array_linstor_port_with_authentication(self):
        env = {'CINDER_FLASH_ARRAY_PORT': str(free_port()),
               'CINDER_FLASH_ARRAY_ISCSI_PORT': str(free_port()),
               'CINDER_FLASH_ARRAY_LINSTOR_PORT': str(free_port()),
               'CINDER_FLASH_BACKENDS': 'linstor:drbd-1',
               'CINDER_FLASH_ARRAY_LINSTOR_AUTH': 'basic'}
        self.run_plugin('configure', 'stack:post-config', **env)
        data_dir = os.path.join(self.env['DATA_DIR'], 'cinder-flash-array')
        with open(os.path.join(data_dir, 'array.pid')) as f:
            pid = int(f.read())
        self.addCleanup(_kill, pid)
        section = self.ini('CINDER_CONF')['drbd-1']
        port = env['CINDER_FLASH_ARRAY_LINSTOR_PORT']
        self.assertEqual((
            'https://127.0.0.1:' + port, 'cinder',
            os.path.join(data_dir, 'array-cert.pem')), (
                section['linstor_uris'], section['linstor_username'],
                section['linstor_trusted_ca']))
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            self.assertNotIn(section['linstor_password'].encode(), f.read())
        # Without credentials the port answers 401; the driver's own
        # check, with them, finds the backend ready.
        ctx = ssl.create_default_context(
            cafile=section['linstor_trusted_ca'])
        ctx.check_hostname = False
        with self.assertRaises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen('https://127.0.0.1:%s/v1/nodes' % port,
                                   context=ctx, timeout=30)
        self.assertEqual(401, caught.exception.code)
        self.assert_ready('drbd-1')
        self.run_plugin('unstack', **env)
        self.assertFalse(_alive(pid))

    def test_unknown_linstor_auth_stops_the_run(self):
        result = self.run_plugin('configure', check=False,
                                 CINDER_FLASH_BACKENDS='linstor:drbd-1',
                                 CINDER_FLASH_ARRAY_LINSTOR_AUTH='ldap')
        self.assertNotEqual(0, result.returncode)
        self.assertIn('CINDER_FLASH_ARRAY_LINSTOR_AUTH=ldap', result.stderr)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A stopped child of ours stays a zombie until reaped.
    with open('/proc/%d/stat' % pid) as f:
        return f.read().split(')')[1].split()[0] != 'Z'


def _kill(pid):
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass
