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

"""The flash family inside Canonical's cinder-volume snap package.

The keys the cinder-volume-flash charm sets go through the base snap's
own configuration model and templates (a stand-in for ``snapctl`` serves
them, as snapd would to the configure hook); then the snap's
``cinder-flash`` app, the script in snap/local/bin, checks the section
the snap rendered against a live reference array.

Runs in ``tox -e snap-base``, which installs Canonical's package from
GitHub.
"""

import json
import os
import subprocess
import sys
import textwrap

import fixtures
import snaphelpers
from snaphelpers import _conf
from snaphelpers import _ctl
from snaphelpers import _service
import testtools

from cinder_driver.tests.functional import array_fixture
from cinder_flash_snap import service

HERE = os.path.dirname(os.path.abspath(__file__))
WRAPPER = os.path.join(os.path.dirname(HERE), 'bin', 'cinder-flash')
K2_ISCSI = 'cinder_driver.k2.driver.K2ISCSIDriver'


class FlashSnapTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.array = self.useFixture(array_fixture.ReferenceArray())
        self.root = self.useFixture(fixtures.TempDir()).path
        self.env = {'SNAP_%s' % key: os.path.join(self.root, key.lower())
                    for key in ('COMMON', 'DATA', 'REAL_HOME', 'USER_COMMON',
                                'USER_DATA')}
        self.env.update(SNAP=os.path.join(self.root, 'snap'),
                        SNAP_NAME='cinder-volume-flash',
                        SNAP_INSTANCE_NAME='cinder-volume-flash')
        for path in self.env.values():
            if path.startswith(self.root):
                os.makedirs(path, exist_ok=True)
        self.conf_file = os.path.join(self.root, 'conf.json')
        self.snapctl = os.path.join(self.root, 'snapctl')
        with open(self.snapctl, 'w') as f:
            f.write(textwrap.dedent('''\
                #!%s
                import json, sys
                conf = json.load(open(%r))
                if sys.argv[1] == 'get':
                    keys = sys.argv[3:]
                    print(json.dumps({k: conf[k] for k in keys if k in conf}))
                elif sys.argv[1] == 'services':
                    print('Service  Startup  Current  Notes')
                ''') % (sys.executable, self.conf_file))
        os.chmod(self.snapctl, 0o755)

    def snap(self):
        snap = snaphelpers.Snap(environ=self.env)
        ctl = _ctl.SnapCtl(executable=self.snapctl, env=snap.environ)
        snap.config = _conf.SnapConfig(snapctl=ctl)
        snap.services = _service.SnapServices(snapctl=ctl)
        return snap

    def configure(self, flash, **families):
        conf = {'database': {'url': 'mysql+pymysql://c:p@192.0.2.1/cinder'},
                'rabbitmq': {'url': 'rabbit://c:p@192.0.2.1:5672/'},
                'cinder': {'project-id': 'p', 'user-id': 'u',
                           'cluster': 'cinder-volume'},
                'flash': flash}
        conf.update(families)
        with open(self.conf_file, 'w') as f:
            json.dump(conf, f)
        service.FlashCinderVolume.configure_hook(self.snap())

    def charm_keys(self, **changes):
        """flash.<app>.* as the cinder-volume-flash charm sets them."""
        with open(self.array.info['ca_cert']) as f:
            pem = f.read()
        keys = {'volume-driver': K2_ISCSI, 'volume-backend-name': 'k2-prod',
                'san-ip': self.array.k2_host,
                'san-api-port': str(self.array.k2_port),
                'san-login': self.array.info['user'],
                'san-password': self.array.info['password'],
                'driver-ssl-cert-verify': 'True',
                'use-multipath-for-image-xfer': 'True',
                'max-over-subscription-ratio': '20.0',
                'driver-ssl-cert': pem}
        keys.update(changes)
        return keys

    def read(self, *path):
        with open(os.path.join(self.env['SNAP_COMMON'], *path)) as f:
            return f.read()

    def check(self, backend):
        env = dict(os.environ, SNAP_COMMON=self.env['SNAP_COMMON'],
                   PATH=os.path.dirname(sys.executable) + ':' +
                   os.environ['PATH'])
        return subprocess.run(['sh', WRAPPER, 'check', '--backend', backend],
                              capture_output=True, text=True, env=env,
                              timeout=120)

    def test_rendered_section_passes_the_check(self):
        self.configure({'k2-prod': self.charm_keys()})
        section = self.read('etc', 'cinder', 'cinder.conf.d', 'k2-prod.conf')
        lines = section.strip().splitlines()
        self.assertEqual('[k2-prod]', lines[0])
        options = dict(line.split(' = ', 1) for line in lines[1:] if line)
        pem = os.path.join(self.env['SNAP_COMMON'], 'etc', 'cinder',
                           'cinder.conf.d', 'k2-prod.pem')
        self.assertEqual((K2_ISCSI, 'k2-prod', self.array.info['user'],
                          str(self.array.k2_port), pem), (
            options['volume_driver'], options['volume_backend_name'],
            options['san_login'], options['san_api_port'],
            options['driver_ssl_cert_path']))
        self.assertNotIn('driver_ssl_cert', options)
        # The drivers are active/active: the service keeps its cluster.
        main = self.read('etc', 'cinder', 'cinder.conf')
        self.assertIn('enabled_backends = k2-prod', main)
        self.assertIn('cluster = cinder-volume', main)
        proc = self.check('k2-prod')
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
        self.assertTrue(proc.stdout.rstrip().endswith(
            'backend k2-prod: ready'), proc.stdout)
        self.assertNotIn(self.array.info['password'],
                         proc.stdout + proc.stderr)

    def test_wrong_password_fails_the_check(self):
        self.configure({'k2-prod': self.charm_keys(
            **{'san-password': 'not-the-password'})})
        proc = self.check('k2-prod')
        self.assertEqual(1, proc.returncode)
        self.assertRegex(proc.stdout, r'(?m)^FAIL\s+credentials')

    def test_beside_another_family(self):
        ceph = {'rbd-pool': 'volumes', 'rbd-user': 'cinder',
                'rbd-secret-uuid': 'u', 'rbd-key': 'k',
                'mon-hosts': '192.0.2.5', 'volume-backend-name': 'ceph'}
        self.configure({'k2-prod': self.charm_keys()},
                       ceph={'ceph-a': ceph})
        main = self.read('etc', 'cinder', 'cinder.conf')
        self.assertIn('enabled_backends = ceph-a,k2-prod', main)
        self.assertIn('[ceph-a]', self.read('etc', 'cinder', 'cinder.conf.d',
                                            'ceph-a.conf'))

    def test_only_cinder_flash_drivers(self):
        self.configure({'k2-prod': self.charm_keys(
            **{'volume-driver': 'cinder.volume.drivers.lvm.LVMVolumeDriver'})})
        # The base snap's hook logs the invalid configuration and renders
        # no backend.
        self.assertFalse(os.path.exists(os.path.join(
            self.env['SNAP_COMMON'], 'etc', 'cinder', 'cinder.conf.d',
            'k2-prod.conf')))
