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

"""The charm against the cinder-volume protocol as the principal speaks it.

ops' state-transition testing API plays Juju and the principal (its unit
publishes ``snap-name`` on the subordinate relation); a fake snapd on a
real Unix socket records every ``snap set`` the charm makes; the
``cinder-flash check`` command line is captured.
"""

import os
import subprocess
import unittest
from unittest import mock

from ops import testing

import charm
import pack
import snapd
from tests.unit import fake_snapd

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SNAP = 'cinder-volume-flash'
PASSWORD = 'test-only-not-a-secret'
CHAP_PASSWORD = 'test-only-chap-pw'
K2 = {'backend-type': 'k2', 'protocol': 'iscsi', 'san-ip': '192.0.2.10'}
NS = 'flash.k2-prod'


def published(data):
    """What the charm wrote on the relation (not Juju's address keys)."""
    return {k: v for k, v in (data or {}).items()
            if k not in ('egress-subnets', 'ingress-address',
                         'private-address')}


_PROJECT, META, CONFIG = pack.load(ROOT)


class CharmTestCase(unittest.TestCase):

    def setUp(self):
        self.ctx = testing.Context(charm.CinderVolumeFlashCharm, meta=META,
                                   config=CONFIG, app_name='k2-prod')
        self.snapd = fake_snapd.FakeSnapd()
        self.addCleanup(self.snapd.close)
        self.snapd.install(SNAP, ['cinder-volume', 'cinder-flash'])
        patchers = [mock.patch.object(snapd, 'SOCKET', self.snapd.path),
                    mock.patch.object(snapd, 'POLL_SECONDS', 0),
                    mock.patch.object(charm.subprocess, 'run', self._run)]
        for patcher in patchers:
            patcher.start()
            self.addCleanup(patcher.stop)
        self.commands = []
        self.check_result = (0, 'PASS  tls  ok\nbackend k2-prod: ready\n')

    def _run(self, cmd, **kwargs):
        self.commands.append(cmd)
        code, out = self.check_result
        if code is None:
            raise FileNotFoundError(cmd[0])
        return subprocess.CompletedProcess(cmd, code, out, '')

    # -- helpers ---------------------------------------------------------
    def secret(self, **content):
        return testing.Secret(tracked_content=content or {
            'username': 'cinder', 'password': PASSWORD})

    def relation(self, snap_name=SNAP):
        data = {'snap-name': snap_name} if snap_name else {}
        return testing.SubordinateRelation(
            'cinder-volume', remote_app_name='cinder-volume',
            remote_unit_data=data)

    def run_charm(self, config, secrets=(), relation=None, event=None,
                  related=True):
        relations = [relation or self.relation()] if related else []
        state = testing.State(config=config, secrets=list(secrets),
                              relations=relations)
        out = self.ctx.run(event or self.ctx.on.config_changed(), state)
        data = out.get_relation(relations[0].id).local_unit_data \
            if related else None
        return out, data

    def k2(self, **changes):
        secret = self.secret()
        config = dict(K2, credentials=secret.id)
        config.update(changes)
        return config, secret

    def settings(self):
        return self.snapd.conf(SNAP)['flash']['k2-prod']

    # -- a complete K2 backend -------------------------------------------
    def test_k2_keys_backend_and_check(self):
        config, secret = self.k2()
        out, data = self.run_charm(config, [secret])
        self.assertEqual([{
            NS + '.driver-ssl-cert-verify': 'True',
            NS + '.max-over-subscription-ratio': '20.0',
            NS + '.san-ip': '192.0.2.10',
            NS + '.san-login': 'cinder',
            NS + '.san-password': PASSWORD,
            NS + '.use-multipath-for-image-xfer': 'True',
            NS + '.volume-backend-name': 'k2-prod',
            NS + '.volume-driver': 'cinder_driver.k2.driver.K2ISCSIDriver'}],
            self.snapd.puts())
        # The principal learns the backend only once the keys are in.
        self.assertEqual({'backend': NS}, published(data))
        self.assertEqual([['snap', 'run', SNAP + '.cinder-flash', 'check',
                           '--backend', 'k2-prod']], self.commands)
        self.assertEqual(testing.ActiveStatus(
            'backend k2-prod ready (K2ISCSIDriver)'), out.unit_status)

    def test_secrets_stay_out_of_relation_argv_and_logs(self):
        chap = self.secret(username='iqn-user', password=CHAP_PASSWORD)
        config, secret = self.k2(**{'chap-credentials': chap.id})
        self.check_result = (1, 'FAIL  credentials  the array answered '
                                '401\n')
        out, data = self.run_charm(config, [secret, chap])
        for text in [str(dict(data)), out.unit_status.message] + [
                ' '.join(c) for c in self.commands] + [
                line.message for line in self.ctx.juju_log]:
            self.assertNotIn(PASSWORD, text)
            self.assertNotIn(CHAP_PASSWORD, text)
        # They reached the snap, and only through the socket.
        self.assertEqual((PASSWORD, CHAP_PASSWORD, 'True', 'iqn-user'), (
            self.settings()['san-password'],
            self.settings()['chap-password'],
            self.settings()['use-chap-auth'],
            self.settings()['chap-username']))

    def test_only_changes_are_set_and_stale_keys_unset(self):
        config, secret = self.k2()
        self.run_charm(config, [secret])
        before = dict(self.settings())
        self.snapd.requests.clear()
        # Replication was configured by hand once; the charm owns the
        # namespace and takes it out.
        self.settings()['replication-device'] = 'backend_id:x'
        config['san-ip'] = '192.0.2.11'
        self.run_charm(config, [secret])
        self.assertEqual([{NS + '.san-ip': '192.0.2.11',
                           NS + '.replication-device': None}],
                         self.snapd.puts())
        self.assertEqual(dict(before, **{'san-ip': '192.0.2.11'}),
                         self.settings())

    def test_nothing_changed_sets_nothing(self):
        config, secret = self.k2()
        self.run_charm(config, [secret])
        self.snapd.requests.clear()
        out, _data = self.run_charm(config, [secret],
                                    event=self.ctx.on.update_status())
        self.assertEqual([], self.snapd.puts())
        self.assertIsInstance(out.unit_status, testing.ActiveStatus)

    def test_every_k2_option(self):
        target = self.secret(username='dr-user', password='dr-pass')
        pem = ('-----BEGIN CERTIFICATE-----\nMIIB\n'
               '-----END CERTIFICATE-----')
        config, secret = self.k2(**{
            'protocol': 'fc', 'san-api-port': 8443,
            'volume-backend-name': 'fast', 'use-multipath': False,
            'tls-verify': True, 'ca-certificate': pem,
            'max-over-subscription-ratio': 5.0,
            'auto-over-subscription': True,
            'backend-availability-zone': 'az-2',
            'replication-target': 'dr:198.51.100.10',
            'replication-credentials': target.id})
        out, _data = self.run_charm(config, [secret, target])
        settings = self.settings()
        self.assertEqual({
            'volume-driver': 'cinder_driver.k2.driver.K2FCDriver',
            'volume-backend-name': 'fast', 'san-ip': '192.0.2.10',
            'san-login': 'cinder', 'san-password': PASSWORD,
            'san-api-port': '8443',
            'k2-auto-max-over-subscription-ratio': 'True',
            'replication-device': 'backend_id:dr,san_ip:198.51.100.10,'
                                  'san_login:dr-user,san_password:dr-pass',
            'driver-ssl-cert-verify': 'True',
            'use-multipath-for-image-xfer': 'False',
            'max-over-subscription-ratio': '5.0',
            'backend-availability-zone': 'az-2',
            'driver-ssl-cert': pem}, settings)
        self.assertEqual(testing.ActiveStatus(
            'backend fast ready (K2FCDriver)'), out.unit_status)

    def test_linstor_defaults_for_volume_types(self):
        config = {'backend-type': 'linstor', 'protocol': 'drbd',
                  'linstor-uris': 'linstor://10.0.0.1',
                  'linstor-placement-count': 3,
                  'linstor-storage-pool': 'nvme'}
        out, data = self.run_charm(config)
        settings = self.snapd.conf(SNAP)['flash']['k2-prod']
        self.assertEqual(('cinder_driver.linstor.driver.LinstorDrbdDriver',
                          'linstor://10.0.0.1', '3', 'nvme'), (
            settings['volume-driver'], settings['linstor-uris'],
            settings['linstor-placement-count'],
            settings['linstor-storage-pool']))
        self.assertNotIn('linstor-password', settings)
        self.assertEqual(testing.ActiveStatus(
            'backend k2-prod ready (LinstorDrbdDriver)'), out.unit_status)

    def test_rotated_secret_is_set_again(self):
        config, secret = self.k2()
        self.run_charm(config, [secret])
        rotated = testing.Secret(
            id=secret.id, tracked_content={'username': 'cinder',
                                           'password': PASSWORD},
            latest_content={'username': 'cinder', 'password': 'new-one'})
        self.snapd.requests.clear()
        self.run_charm(config, [rotated],
                       event=self.ctx.on.secret_changed(rotated))
        self.assertEqual([{NS + '.san-password': 'new-one'}],
                         self.snapd.puts())

    # -- blocked or waiting, and nothing written ---------------------------
    def assert_untouched(self, data):
        self.assertEqual([], self.snapd.puts())
        self.assertEqual({}, published(data))
        self.assertEqual([], self.commands)

    def test_a_snap_without_the_drivers_is_left_alone(self):
        self.snapd.install('cinder-volume', ['cinder-volume'])
        config, secret = self.k2()
        out, data = self.run_charm(config, [secret],
                                   relation=self.relation('cinder-volume'))
        self.assertEqual(testing.BlockedStatus(
            "snap cinder-volume has no cinder-flash drivers: set the "
            "principal's snap-name to a cinder-volume-flash snap"),
            out.unit_status)
        self.assert_untouched(data)

    def test_waits_for_the_snap_name_and_the_snap(self):
        config, secret = self.k2()
        out, data = self.run_charm(config, [secret],
                                   relation=self.relation(None))
        self.assertEqual(testing.WaitingStatus(
            'waiting for cinder-volume to publish its snap name'),
            out.unit_status)
        self.assertEqual([], self.snapd.requests)
        out, data = self.run_charm(config, [secret],
                                   relation=self.relation('not-yet'))
        self.assertEqual(testing.WaitingStatus(
            'waiting for snap not-yet to be installed'), out.unit_status)
        self.assert_untouched(data)

    def test_without_the_relation(self):
        config, secret = self.k2()
        out, _data = self.run_charm(config, [secret], related=False)
        self.assertEqual(testing.BlockedStatus(
            'integrate with cinder-volume (endpoint cinder-volume)'),
            out.unit_status)
        self.assertEqual([], self.snapd.requests)

    def test_bad_configurations_block(self):
        secret = self.secret()
        chap = self.secret(username='u', password='p')
        good = dict(K2, credentials=secret.id)
        for changes, words in (
                ({'backend-type': 'ceph'}, ['backend-type', 'ceph']),
                ({'protocol': 'drbd'}, ['protocol', 'drbd', 'k2']),
                ({'san-ip': ''}, ['san-ip is required']),
                ({'credentials': None}, ['credentials is required']),
                ({'ca-certificate': 'hello'}, ['ca-certificate']),
                ({'backend-availability-zone': 'a zone'},
                 ['backend-availability-zone']),
                ({'protocol': 'fc', 'chap-credentials': chap.id},
                 ['chap-credentials', 'iscsi only']),
                ({'replication-target': 'dr:198.51.100.10'},
                 ['replication-credentials is required'])):
            config = {k: v for k, v in dict(good, **changes).items()
                      if v is not None}
            out, data = self.run_charm(config, [secret, chap])
            self.assertIsInstance(out.unit_status, testing.BlockedStatus)
            for word in words:
                self.assertIn(word, out.unit_status.message)
            self.assert_untouched(data)

    def test_secret_not_granted(self):
        missing = testing.Secret(tracked_content={'username': 'x'})
        out, data = self.run_charm(dict(K2, credentials=missing.id))
        self.assertIn('not found or not granted', out.unit_status.message)
        self.assert_untouched(data)

    def test_refused_settings_block_and_publish_nothing(self):
        self.snapd.hook_error = ('run hook "configure": invalid '
                                 'configuration')
        config, secret = self.k2()
        out, data = self.run_charm(config, [secret])
        self.assertEqual(testing.BlockedStatus(
            'snap cinder-volume-flash refused the settings: change 1 '
            'failed: run hook "configure": invalid configuration'),
            out.unit_status)
        self.assertEqual({}, published(data))

    def test_busy_snap_defers(self):
        self.snapd.conflict = True
        config, secret = self.k2()
        out, data = self.run_charm(config, [secret])
        self.assertIsInstance(out.unit_status, testing.WaitingStatus)
        self.assertIn('change in progress', out.unit_status.message)
        self.assertEqual(1, len(out.deferred))
        self.assertEqual({}, published(data))

    def test_failed_check_blocks_with_its_verdict(self):
        config, secret = self.k2()
        self.check_result = (1, 'PASS  config  ok\nFAIL  reachable  '
                                '192.0.2.10:443 refused the connection\n')
        out, data = self.run_charm(config, [secret])
        self.assertEqual(testing.BlockedStatus(
            'check failed: reachable 192.0.2.10:443 refused the '
            'connection'), out.unit_status)
        # The settings are in: an array that comes back is used.
        self.assertEqual({'backend': NS}, published(data))

    def test_relation_broken(self):
        config, secret = self.k2()
        relation = self.relation()
        state = testing.State(config=config, secrets=[secret],
                              relations=[relation])
        out = self.ctx.run(self.ctx.on.relation_broken(relation), state)
        self.assertEqual(testing.BlockedStatus(
            'integrate with cinder-volume (endpoint cinder-volume)'),
            out.unit_status)
        self.assertEqual([], self.snapd.puts())
