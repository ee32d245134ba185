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

"""The charm, through ops' state-transition testing API."""

import json
import os
import subprocess
import tempfile
import unittest
from unittest import mock

from ops import testing

import charm
import pack

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# A made-up value the tests look for in logs and status.
PASSWORD = 'test-only-not-a-secret'
K2 = {'backend-type': 'k2', 'protocol': 'iscsi', 'san-ip': '192.0.2.10'}


_PROJECT, META, CONFIG = pack.load(ROOT)


class CharmTestCase(unittest.TestCase):

    def setUp(self):
        # Not charm_root: the testing API writes metadata files into it,
        # which test processes running side by side would share.
        self.ctx = testing.Context(charm.CinderFlashCharm, meta=META,
                                   config=CONFIG, app_name='k2-prod')
        self.calls = []
        self.check_result = (0, 'PASS  tls  ok\nbackend k2-prod: ready\n')
        patcher = mock.patch.object(charm.subprocess, 'run', self._run)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.ca_dir = tempfile.mkdtemp()
        patcher = mock.patch.object(charm, 'CA_DIR', self.ca_dir)
        patcher.start()
        self.addCleanup(patcher.stop)

    def _run(self, cmd, **kwargs):
        self.calls.append(cmd)
        if cmd[0] == charm.CHECK:
            with open(cmd[cmd.index('--config-file') + 1]) as f:
                self.checked_conf = f.read()
            code, out = self.check_result
            if code is None:
                raise FileNotFoundError(cmd[0])
            return subprocess.CompletedProcess(cmd, code, out, '')
        return subprocess.CompletedProcess(cmd, 0, '', '')

    def secret(self, **content):
        return testing.Secret(tracked_content=content or {
            'username': 'cinder', 'password': PASSWORD})

    def run_config(self, config, secrets=(), relation=True,
                   event=None):
        relations = [testing.SubordinateRelation('storage-backend')] \
            if relation else []
        state = testing.State(config=config, secrets=list(secrets),
                              relations=relations)
        out = self.ctx.run(event or self.ctx.on.config_changed(), state)
        return out, (out.get_relation(relations[0].id).local_unit_data
                     if relation else None)

    def k2(self, **changes):
        secret = self.secret()
        config = dict(K2, credentials=secret.id)
        config.update(changes)
        return config, secret

    def sections(self, data):
        conf = json.loads(data['subordinate_configuration'])
        return conf['cinder']['/etc/cinder/cinder.conf']['sections']

    # -- a complete K2 backend ---------------------------------------------
    def test_k2_iscsi_relation_data(self):
        config, secret = self.k2()
        out, data = self.run_config(config, [secret])
        self.assertEqual(testing.ActiveStatus(
            'backend k2-prod ready (K2ISCSIDriver)'), out.unit_status)
        self.assertEqual('k2-prod', data['backend_name'])
        self.assertEqual('true', data['stateless'])
        self.assertEqual({'k2-prod': [
            ['volume_driver', 'cinder_driver.k2.driver.K2ISCSIDriver'],
            ['volume_backend_name', 'k2-prod'],
            ['san_ip', '192.0.2.10'],
            ['san_login', 'cinder'],
            ['san_password', PASSWORD],
            ['driver_ssl_cert_verify', 'True'],
            ['use_multipath_for_image_xfer', 'True'],
            ['max_over_subscription_ratio', '20.0']]},
            self.sections(data))
        # The check read exactly that section.
        self.assertIn('[k2-prod]\nvolume_driver = cinder_driver.k2.driver.'
                      'K2ISCSIDriver\n', self.checked_conf)

    def test_k2_fc_with_every_option(self):
        config, secret = self.k2(**{
            'protocol': 'fc', 'san-api-port': 8443,
            'volume-backend-name': 'fast', 'use-multipath': False,
            'tls-verify': False, 'max-over-subscription-ratio': 5.0,
            'auto-over-subscription': True})
        out, data = self.run_config(config, [secret])
        pairs = dict(self.sections(data)['k2-prod'])
        self.assertEqual('cinder_driver.k2.driver.K2FCDriver',
                         pairs['volume_driver'])
        self.assertEqual(('fast', '8443', 'False', 'False', '5.0', 'True'), (
            pairs['volume_backend_name'], pairs['san_api_port'],
            pairs['driver_ssl_cert_verify'],
            pairs['use_multipath_for_image_xfer'],
            pairs['max_over_subscription_ratio'],
            pairs['k2_auto_max_over_subscription_ratio']))

    def test_ca_certificate_is_written_and_used(self):
        pem = ('-----BEGIN CERTIFICATE-----\nMIIB\n'
               '-----END CERTIFICATE-----')
        config, secret = self.k2(**{'ca-certificate': pem})
        out, data = self.run_config(config, [secret])
        path = os.path.join(self.ca_dir, 'cinder-flash-k2-prod-ca.pem')
        self.assertEqual(path, dict(self.sections(data)['k2-prod'])[
            'driver_ssl_cert_path'])
        with open(path) as f:
            self.assertEqual(pem + '\n', f.read())

    def test_replication_device(self):
        target = self.secret(username='dr-user', password='dr-pass')
        config, secret = self.k2(**{
            'replication-target': 'dr:198.51.100.10:8443',
            'replication-credentials': target.id})
        out, data = self.run_config(config, [secret, target])
        self.assertEqual(
            'backend_id:dr,san_ip:198.51.100.10,san_api_port:8443,'
            'san_login:dr-user,san_password:dr-pass',
            dict(self.sections(data)['k2-prod'])['replication_device'])

    def test_linstor_drbd_section(self):
        config = {'backend-type': 'linstor', 'protocol': 'drbd',
                  'linstor-uris': 'linstor://10.0.0.1, http://ctl:3370',
                  'linstor-placement-count': 3}
        self.check_result = (1, 'FAIL  config  volume_driver=cinder_driver.'
                                'linstor.driver.LinstorDrbdDriver is not a '
                                'cinder-flash driver\n')
        out, data = self.run_config(config)
        pairs = dict(self.sections(data)['k2-prod'])
        self.assertEqual((
            'cinder_driver.linstor.driver.LinstorDrbdDriver',
            'linstor://10.0.0.1,http://ctl:3370', '3', 'DfltStorPool'), (
            pairs['volume_driver'], pairs['linstor_uris'],
            pairs['linstor_placement_count'],
            pairs['linstor_storage_pool']))
        self.assertNotIn('linstor_password', pairs)
        # Honest status: what the installed package says about it.
        self.assertEqual(testing.BlockedStatus(
            'check failed: config volume_driver=cinder_driver.linstor.'
            'driver.LinstorDrbdDriver is not a cinder-flash driver'),
            out.unit_status)

    def test_linstor_authentication_and_tls(self):
        pem = ('-----BEGIN CERTIFICATE-----\nMIIB\n'
               '-----END CERTIFICATE-----')
        secret = self.secret()
        config = {'backend-type': 'linstor', 'protocol': 'drbd',
                  'linstor-uris': 'linstor+ssl://10.0.0.1',
                  'credentials': secret.id, 'ca-certificate': pem}
        out, data = self.run_config(config, [secret])
        pairs = dict(self.sections(data)['k2-prod'])
        path = os.path.join(self.ca_dir, 'cinder-flash-k2-prod-ca.pem')
        self.assertEqual(('cinder', PASSWORD, path, 'True'), (
            pairs['linstor_username'], pairs['linstor_password'],
            pairs['linstor_trusted_ca'], pairs['linstor_verify_tls']))
        self.assertNotIn('driver_ssl_cert_path', pairs)

    def test_linstor_client_certificate(self):
        cert = ('-----BEGIN CERTIFICATE-----\nMIIC\n'
                '-----END CERTIFICATE-----')
        key = ('-----BEGIN PRIVATE KEY-----\nkey-test-value\n'
               '-----END PRIVATE KEY-----')
        client = testing.Secret(tracked_content={'certificate': cert,
                                                 'key': key})
        config = {'backend-type': 'linstor', 'protocol': 'drbd',
                  'linstor-uris': 'https://10.0.0.1:3371',
                  'linstor-client-certificate': client.id}
        out, data = self.run_config(config, [client])
        pairs = dict(self.sections(data)['k2-prod'])
        base = os.path.join(self.ca_dir, 'cinder-flash-k2-prod-client')
        self.assertEqual((base + '.pem', base + '.key'), (
            pairs['linstor_client_cert'], pairs['linstor_client_key']))
        with open(base + '.pem') as f:
            self.assertEqual(cert + '\n', f.read())
        with open(base + '.key') as f:
            self.assertEqual(key + '\n', f.read())
        # The key is never readable by others; the PEMs are not in the
        # relation data, only their paths.
        self.assertEqual(0, os.stat(base + '.key').st_mode & 0o007)
        self.assertNotIn('key-test-value', json.dumps(data))
        self.assertIn(base + '.key', self.checked_conf)

    def test_linstor_client_certificate_refused_where_it_cannot_apply(self):
        half = testing.Secret(tracked_content={
            'certificate': '-----BEGIN CERTIFICATE-----\nMIIC\n'
                           '-----END CERTIFICATE-----'})
        config = {'backend-type': 'linstor', 'protocol': 'drbd',
                  'linstor-uris': 'https://10.0.0.1:3371',
                  'linstor-client-certificate': half.id}
        self.assert_blocked(config, [half], ['linstor-client-certificate',
                                             'private key'])
        whole = testing.Secret(tracked_content={
            'certificate': half.tracked_content['certificate'],
            'key': '-----BEGIN EC PRIVATE KEY-----\nk\n'
                   '-----END EC PRIVATE KEY-----'})
        config, secret = self.k2(**{'linstor-client-certificate': whole.id})
        self.assert_blocked(config, [secret, whole], [
            'linstor-client-certificate', 'linstor only'])

    # -- blocked, with the reason --------------------------------------------
    def assert_blocked(self, config, secrets, words):
        out, data = self.run_config(config, secrets)
        self.assertIsInstance(out.unit_status, testing.BlockedStatus)
        for word in words:
            self.assertIn(word, out.unit_status.message)
        # Nothing is published for an invalid configuration.
        self.assertNotIn('subordinate_configuration', data)
        return out

    def test_bad_configurations_block(self):
        secret = self.secret()
        good = dict(K2, credentials=secret.id)
        for changes, words in (
                ({'backend-type': 'ceph'}, ['backend-type', 'ceph']),
                ({'protocol': 'drbd'}, ['protocol', 'drbd', 'k2']),
                ({'san-ip': ''}, ['san-ip is required']),
                ({'san-ip': 'not an address!'}, ['san-ip',
                                                 'not an address!']),
                ({'san-api-port': 70000}, ['san-api-port', '70000']),
                ({'max-over-subscription-ratio': 0.5},
                 ['max-over-subscription-ratio']),
                ({'ca-certificate': 'hello'}, ['ca-certificate']),
                ({'replication-target': 'dr'}, ['replication-target']),
                ({'replication-target': 'dr:198.51.100.10'},
                 ['replication-credentials is required'])):
            config = dict(good)
            config.update(changes)
            self.assert_blocked(config, [secret], words)

    def test_linstor_needs_uris(self):
        self.assert_blocked({'backend-type': 'linstor', 'protocol': 'drbd'},
                            [], ['linstor-uris is required'])
        self.assert_blocked({'backend-type': 'linstor', 'protocol': 'drbd',
                             'linstor-uris': 'ftp://x'}, [],
                            ['linstor-uris', 'ftp://x'])
        self.assert_blocked({'backend-type': 'linstor', 'protocol': 'fc',
                             'linstor-uris': 'linstor://x'}, [],
                            ['protocol', 'drbd, iscsi'])

    def test_secrets(self):
        self.assert_blocked(dict(K2), [], ['credentials is required'])
        missing = testing.Secret(tracked_content={'username': 'x'})
        self.assert_blocked(dict(K2, credentials=missing.id), [],
                            ['not found or not granted'])
        self.assert_blocked(dict(K2, credentials=missing.id), [missing],
                            ['credentials', 'no password'])
        colon = self.secret(username='a', password='pa:ss')
        self.assert_blocked(dict(K2, credentials=colon.id), [colon],
                            ['credentials', 'password'])

    def test_rotated_secret_rewrites_the_section(self):
        config, secret = self.k2()
        rotated = testing.Secret(
            id=secret.id, tracked_content={'username': 'cinder',
                                           'password': 'old-one'},
            latest_content={'username': 'cinder', 'password': 'new-one'})
        out, data = self.run_config(config, [rotated],
                                    event=self.ctx.on.secret_changed(
                                        rotated))
        self.assertEqual('new-one', dict(self.sections(data)['k2-prod'])[
            'san_password'])

    def test_failed_check_blocks_with_its_verdict(self):
        config, secret = self.k2()
        self.check_result = (1, 'PASS  config  ok\nFAIL  credentials  the '
                                'array answered 401\nbackend x: NOT ready\n')
        out, _data = self.run_config(config, [secret])
        self.assertEqual(testing.BlockedStatus(
            'check failed: credentials the array answered 401'),
            out.unit_status)

    def test_package_missing_blocks(self):
        config, secret = self.k2()
        self.check_result = (None, '')
        out, _data = self.run_config(config, [secret])
        self.assertEqual(testing.BlockedStatus(
            'cinder-flash is not installed on this unit'), out.unit_status)

    def test_without_relation(self):
        config, secret = self.k2()
        out, _data = self.run_config(config, [secret], relation=False)
        self.assertEqual(testing.BlockedStatus(
            'relate to cinder (storage-backend)'), out.unit_status)

    def test_no_password_in_logs_or_status(self):
        config, secret = self.k2()
        self.check_result = (1, 'FAIL  credentials  the array answered '
                                '401\n')
        out, _data = self.run_config(config, [secret])
        for line in self.ctx.juju_log:
            self.assertNotIn(PASSWORD, line.message)
        self.assertNotIn(PASSWORD, out.unit_status.message)

    # -- install ---------------------------------------------------------
    def no_wheel(self):
        # Charmhub hands a zero-byte file when no wheel was attached.
        empty = os.path.join(self.ca_dir, 'cinder_flash.whl')
        open(empty, 'wb').close()
        return {testing.Resource(name='cinder-flash-wheel', path=empty)}

    def test_install_from_index_when_no_wheel(self):
        config, secret = self.k2()
        state = testing.State(config=config, secrets=[secret],
                              resources=self.no_wheel())
        self.ctx.run(self.ctx.on.install(), state)
        pip = [c for c in self.calls if c[0] == charm.PYTHON][0]
        self.assertEqual('cinder-flash==1.0.0', pip[-1])
        self.assertIn('--break-system-packages', pip)

    def test_install_from_the_wheel_resource(self):
        wheel = os.path.join(self.ca_dir, 'cinder_flash.whl')
        with open(wheel, 'wb') as f:
            f.write(b'PK')
        config, secret = self.k2()
        state = testing.State(config=config, secrets=[secret], resources={
            testing.Resource(name='cinder-flash-wheel', path=wheel)})
        self.ctx.run(self.ctx.on.install(), state)
        pip = [c for c in self.calls if c[0] == charm.PYTHON][0]
        self.assertTrue(pip[-1].endswith('cinder_flash.whl'))

    def test_failed_install_blocks(self):
        def fail(cmd, **kwargs):
            raise subprocess.CalledProcessError(
                1, cmd, stderr='ERROR: No matching distribution found')
        config, secret = self.k2()
        with mock.patch.object(charm.subprocess, 'run', fail):
            out = self.ctx.run(self.ctx.on.install(), testing.State(
                config=config, secrets=[secret], resources=self.no_wheel()))
        self.assertEqual(testing.BlockedStatus(
            'installing cinder-flash failed: ERROR: No matching '
            'distribution found'), out.unit_status)
