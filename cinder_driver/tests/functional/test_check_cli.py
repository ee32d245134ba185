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

"""``cinder-flash check`` against a running reference array."""

import os
import subprocess
import sys

import fixtures
import testtools

from reference_array.tests import array_fixture
from reference_array.tests import test_rest_hostile

ISCSI = 'cinder_driver.k2.driver.K2ISCSIDriver'


class CheckBase(testtools.TestCase):
    """Runs ``cinder-flash check`` over a cinder.conf it writes."""

    def _section(self, name, **options):
        values = {'volume_driver': ISCSI,
                  'san_ip': self.array.k2_host,
                  'san_api_port': self.array.k2_port,
                  'san_login': self.array.info['user'],
                  'san_password': self.array.info['password'],
                  'driver_ssl_cert_path': self.array.info['ca_cert']}
        values.update(options)
        lines = ['[%s]' % name] + ['%s = %s' % (k, v)
                                   for k, v in values.items()
                                   if v is not None]
        return '\n'.join(lines) + '\n'

    def _check(self, backend, *sections):
        path = os.path.join(self.tmp, 'cinder.conf')
        with open(path, 'w') as f:
            f.write('[DEFAULT]\n' + ''.join(sections))
        exe = os.path.join(os.path.dirname(sys.executable), 'cinder-flash')
        proc = subprocess.run([exe, 'check', '--config-file', path,
                               '--backend', backend],
                              capture_output=True, text=True, timeout=120)
        out = proc.stdout + proc.stderr
        # The password is never echoed, whatever the verdict.
        self.assertNotIn(self.array.info['password'], out)
        verdicts = {}
        for line in proc.stdout.splitlines()[:-1]:
            verdict, name = line.split()[:2]
            verdicts[name] = verdict
        return proc.returncode, verdicts, proc.stdout

    def _linstor(self, name, **options):
        values = {'volume_driver':
                  'cinder_driver.linstor.driver.LinstorDrbdDriver',
                  'linstor_uris': self.array.linstor_url}
        values.update(options)
        return self._section(name, san_ip=None, san_api_port=None,
                             san_login=None, san_password=None,
                             driver_ssl_cert_path=None, **values)


class CheckCommandTestCase(CheckBase):

    def setUp(self):
        super().setUp()
        self.array = self.useFixture(array_fixture.ReferenceArray())
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def test_ready_backend(self):
        code, verdicts, out = self._check('k2', self._section('k2'))
        self.assertEqual(0, code, out)
        self.assertEqual({'config': 'PASS', 'reachable': 'PASS',
                          'tls': 'PASS', 'credentials': 'PASS',
                          'api': 'PASS', 'ports': 'PASS',
                          'capacity': 'PASS'}, verdicts)
        self.assertTrue(out.rstrip().endswith('backend k2: ready'))

    def test_wrong_password(self):
        code, verdicts, out = self._check('k2', self._section(
            'k2', san_password='wrong-one'))
        self.assertEqual(1, code)
        self.assertEqual('FAIL', verdicts['credentials'])
        self.assertIn('HTTP 401', out)

    def test_untrusted_certificate(self):
        code, verdicts, out = self._check('k2', self._section(
            'k2', driver_ssl_cert_path=None))
        self.assertEqual(1, code)
        self.assertEqual('FAIL', verdicts['tls'])
        self.assertIn('driver_ssl_cert_path', out)

    def test_verification_turned_off_warns(self):
        code, verdicts, out = self._check('k2', self._section(
            'k2', driver_ssl_cert_path=None, driver_ssl_cert_verify=False))
        self.assertEqual(0, code, out)
        self.assertEqual('WARN', verdicts['tls'])

    def test_portal_not_on_array(self):
        code, verdicts, out = self._check('k2', self._section(
            'k2', k2_iscsi_portals='192.0.2.10'))
        self.assertEqual(1, code)
        self.assertEqual('FAIL', verdicts['ports'])
        self.assertIn('192.0.2.10', out)

    def test_fc_ports(self):
        code, verdicts, out = self._check('fc', self._section(
            'fc', volume_driver='cinder_driver.k2.driver.K2FCDriver'))
        self.assertEqual(0, code, out)
        self.assertIn('FC target ports', out)

    def test_unreachable_array(self):
        code, verdicts, out = self._check('k2', self._section(
            'k2', san_api_port=1))
        self.assertEqual(1, code)
        self.assertEqual('FAIL', verdicts['reachable'])
        self.assertEqual('SKIP', verdicts['credentials'])

    def test_missing_section_and_foreign_driver(self):
        code, _v, out = self._check('nope', self._section('k2'))
        self.assertEqual(1, code)
        self.assertIn('no section [nope]', out)
        code, _v, out = self._check('lvm', self._section(
            'lvm', volume_driver='cinder.volume.drivers.lvm.LVMVolumeDriver'))
        self.assertEqual(1, code)
        self.assertIn('not a cinder-flash driver', out)

    def test_missing_credentials(self):
        code, verdicts, out = self._check('k2', self._section(
            'k2', san_password=''))
        self.assertEqual(1, code)
        self.assertIn('san_password', out)

    def test_linstor_backend(self):
        code, verdicts, out = self._check('ls', self._linstor('ls'))
        self.assertEqual(0, code, out)
        self.assertEqual({'config': 'PASS', 'reachable': 'PASS',
                          'tls': 'WARN', 'credentials': 'PASS',
                          'api': 'PASS', 'ports': 'PASS',
                          'capacity': 'PASS'}, verdicts)
        self.assertIn('3 nodes', out)

    def test_linstor_problems_are_named(self):
        code, verdicts, out = self._check('ls', self._linstor(
            'ls', linstor_uris='linstor://127.0.0.1:1'))
        self.assertEqual(('FAIL', 'SKIP'), (verdicts['reachable'],
                                            verdicts['api']))
        code, verdicts, out = self._check('ls', self._linstor(
            'ls', linstor_uris='ctl:3370'))
        self.assertIn("'ctl:3370'", out)
        code, verdicts, out = self._check('ls', self._linstor(
            'ls', linstor_storage_pool='nvme', linstor_placement_count=4))
        self.assertEqual('FAIL', verdicts['capacity'])
        self.assertIn('nvme', out)
        code, verdicts, out = self._check('ls', self._linstor(
            'ls', volume_driver='cinder_driver.linstor.driver.'
            'LinstorISCSIDriver', linstor_local_node='not-a-node'))
        self.assertEqual(1, code)
        self.assertIn('not-a-node', out)

    def test_linstor_key_without_certificate_is_refused(self):
        # The driver refuses it at setup; check says so, before any call.
        code, verdicts, out = self._check('ls', self._linstor(
            'ls', linstor_client_key='/etc/cinder/linstor-key.pem'))
        self.assertEqual(1, code)
        self.assertEqual({'config': 'FAIL'}, verdicts)
        self.assertIn('linstor_client_cert', out)


class LinstorAuthenticationTestCase(CheckBase):
    """The LINSTOR options of the driver against a LINSTOR port that asks
    for credentials (HTTP Basic) or client certificates.
    """

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.ca, self.cert, self.key = test_rest_hostile._client_certificate(
            self.tmp)
        self.array = self.useFixture(array_fixture.ReferenceArray(args=[
            '--linstor-auth', 'basic', '--linstor-client-ca', self.ca]))

    def _authenticated(self, **options):
        uri = self.array.linstor_url.replace('https://', 'linstor+ssl://')
        values = {'linstor_uris': uri,
                  'linstor_trusted_ca': self.array.info['ca_cert'],
                  'linstor_client_cert': self.cert,
                  'linstor_client_key': self.key,
                  'linstor_username': self.array.info['user'],
                  'linstor_password': self.array.info['password']}
        values.update(options)
        return self._linstor('ls', **values)

    def test_credentials_and_certificate(self):
        code, verdicts, out = self._check('ls', self._authenticated())
        self.assertEqual(0, code, out)
        self.assertEqual('PASS', verdicts['credentials'])
        self.assertEqual('PASS', verdicts['tls'])

    def test_wrong_password_or_no_certificate(self):
        code, verdicts, out = self._check('ls', self._authenticated(
            linstor_password='wrong'))
        self.assertEqual(1, code, out)
        self.assertEqual('FAIL', verdicts['credentials'], out)
        code, verdicts, out = self._check('ls', self._authenticated(
            linstor_client_cert=None, linstor_client_key=None))
        self.assertEqual(1, code, out)
        self.assertIn('NOT ready', out.splitlines()[-1])
