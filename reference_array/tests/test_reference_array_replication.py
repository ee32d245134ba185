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

"""Replication between two reference arrays, through their K2 REST APIs."""

import os
import time

import fixtures
import requests
import testtools

from cinder_driver.common import exception as flash_exception
from cinder_driver.k2 import client
from reference_array.tests import array_fixture
from reference_array.tests import iscsi_client

IQN = 'iqn.2026-01.io.test:host-a'
MIB = 1024 * 1024
TIMEOUT = 60
SESSIONS = 'replication/sessions'


def _ref(resource, obj):
    return client.ref(resource, obj['id'])


class ReplicationPairTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.a = self.useFixture(array_fixture.ReferenceArray(
            fault_injection=True))
        self.b = self.useFixture(array_fixture.ReferenceArray(
            fault_injection=True))
        self.peer_of_a = self.a.pair_with(self.b)
        self.peer_of_b = self.b.pair_with(self.a)
        self.ka, self.kb = self.a.k2_client(), self.b.k2_client()
        self.tmp = self.useFixture(fixtures.TempDir()).path

    def group(self, name='cvg-x', size_mib=64):
        vg = self.ka.create('volume_groups', {'name': name, 'quota': 0})
        vol = self.ka.create('volumes', {
            'name': name.replace('cvg-', 'cv-'), 'size': size_mib * 1024,
            'volume_group': _ref('volume_groups', vg)})
        return vg, vol

    def replicate(self, vg, vol, rpo=300, name='crs-x'):
        session = self.ka.create(SESSIONS, {
            'name': name, 'rpo': rpo,
            'replication_peer_k2array': _ref('replication/peer_k2arrays',
                                             self.peer_of_a),
            'local_volume_group': _ref('volume_groups', vg),
            'replication_peer_volume_group_name': vg['name'],
            'remote_replication_session_name': name})
        self.ka.create('replication/peer_volumes', {
            'local_volume': _ref('volumes', vol), 'name': vol['name'],
            'replication_session': _ref(SESSIONS, session)})
        return session

    def cycle(self, k2, session):
        """Ask for a cycle now and wait until one has completed."""
        deadline = time.monotonic() + TIMEOUT
        # A cycle already shipping may predate what the test just did.
        now = k2.get(SESSIONS, session['id'])
        while now['current_snapshot_id'] is not None:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
            now = k2.get(SESSIONS, session['id'])
        before = now['generation_number']
        k2.update(SESSIONS, session['id'], {'state': 'in_sync'})
        while time.monotonic() < deadline:
            now = k2.get(SESSIONS, session['id'])
            if now['generation_number'] > before and \
                    now['current_snapshot_id'] is None:
                return now
            time.sleep(0.05)
        self.fail('no replication cycle in %ss' % TIMEOUT)

    def lun(self, array, k2, vol_name):
        vol = k2.find('volumes', name=vol_name)
        host = k2.find('hosts', name='h') or k2.create('hosts', {'name': 'h'})
        if not k2.find('host_iqns', iqn=IQN):
            k2.create('host_iqns', {'iqn': IQN, 'host': _ref('hosts', host)})
        mapping = k2.find('mappings', **{'volume.ref': '/volumes/%d' %
                                         vol['id']})
        if mapping is None:
            mapping = k2.create('mappings', {
                'volume': _ref('volumes', vol), 'host': _ref('hosts', host)})
        return iscsi_client.url(array.info['iscsi_portal'],
                                array.info['iqn'], mapping['lun'], IQN)

    def put(self, target, name, size=4 * MIB):
        path = os.path.join(self.tmp, name)
        with open(path, 'wb') as f:
            f.write(os.urandom(size))
        result = iscsi_client.write_file(path, target)
        self.assertEqual(0, result.returncode, result.stderr)
        return path

    def assert_reads(self, target, path):
        result, expected, got = iscsi_client.read_back(target, path)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual(expected, got)

    def remote_session(self):
        return self.kb.find(SESSIONS, name='crs-x')

    def requests_to(self, array, suffix):
        return [r for r in array.k2_requests() if r.endswith(suffix)]

    def reason(self, session, words):
        """A's session once its state_reason says ``words``."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            now = self.ka.get(SESSIONS, session['id'])
            if words in now['state_reason']:
                return now
            self.assertLess(time.monotonic(), deadline, now['state_reason'])
            time.sleep(0.05)

    # -- tests -----------------------------------------------------------
    def test_pairing_checks_the_peer(self):
        with open(self.b.info['ca_cert']) as f:
            ca = f.read()
        e = self.assertRaises(
            flash_exception.ArrayAPIError, self.ka.create,
            'replication/peer_k2arrays', {
                'name': 'wrong', 'mgmt_host': 'localhost:%d' % (
                    self.b.k2_port),
                'username': self.b.info['user'], 'password': 'not-it',
                'ca_cert': ca})
        self.assertIn('401', str(e))
        self.assertEqual(1, len(self.ka.search('replication/peer_k2arrays')))
        peer = self.ka.get('replication/peer_k2arrays', self.peer_of_a['id'])
        self.assertNotIn('password', peer)
        self.assertEqual('connected', peer['state'])

    def test_data_reaches_the_peer_and_only_changes_ship_again(self):
        vg, vol = self.group()
        src = self.put(self.lun(self.a, self.ka, 'cv-x'), 'first', 8 * MIB)
        session = self.replicate(vg, vol)
        self.cycle(self.ka, session)
        full = len(self.requests_to(self.b, '/_replication/chunks'))
        remote = self.remote_session()
        self.assertEqual(('target', 'in_sync'),
                         (remote['current_role'], remote['state']))
        copy = self.kb.find('volumes', name='cv-x')
        self.assertIs(True, copy['read_only'])
        self.assertEqual(vol['size'], copy['size'])

        # One 16 KiB chunk changes: the next cycle ships one chunk call.
        result = iscsi_client.qemu_io(self.lun(self.a, self.ka, 'cv-x'),
                                      'write -P 0x5a 1M 16k')
        self.assertEqual(0, result.returncode, result.stderr)
        self.cycle(self.ka, session)
        self.assertGreater(full, 1)
        self.assertEqual(full + 1, len(self.requests_to(
            self.b, '/_replication/chunks')))
        # An unchanged group ships nothing at all.
        self.cycle(self.ka, session)
        self.assertEqual(full + 1, len(self.requests_to(
            self.b, '/_replication/chunks')))

        self.kb.update(SESSIONS, remote['id'], {'state': 'failed_over'})
        with open(src, 'r+b') as f:
            f.seek(MIB)
            f.write(bytes([0x5a]) * 16 * 1024)
        self.assert_reads(self.lun(self.b, self.kb, 'cv-x'), src)
        # The source learns that its target took over and stops.
        self.assertEqual('suspended', self.ka.get(SESSIONS,
                                                  session['id'])['state'])

    def test_interrupted_cycle_is_rolled_back_at_failover(self):
        vg, vol = self.group()
        first = self.put(self.lun(self.a, self.ka, 'cv-x'), 'first')
        session = self.replicate(vg, vol)
        self.cycle(self.ka, session)
        self.put(self.lun(self.a, self.ka, 'cv-x'), 'second')
        self.b.inject({'path': '/_replication/commit', 'kind': 'status',
                       'status': 500})
        self.ka.update(SESSIONS, session['id'], {'state': 'in_sync'})
        deadline = time.monotonic() + TIMEOUT
        while not self.ka.get(SESSIONS, session['id'])['state_reason']:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        # The peer holds a half-applied cycle; failing over must expose
        # the last complete image instead.
        self.assertIsNotNone(self.remote_session()['current_snapshot_id'])
        self.kb.update(SESSIONS, self.remote_session()['id'],
                       {'state': 'failed_over'})
        self.assert_reads(self.lun(self.b, self.kb, 'cv-x'), first)

    def test_a_source_whose_peer_link_is_down_fails_and_says_why(self):
        self.assertRaises(requests.HTTPError, self.a.inject,
                          {'kind': 'peer_link', 'path': '/volumes'})
        vg, vol = self.group()
        session = self.replicate(vg, vol)
        self.cycle(self.ka, session)
        remote = self.remote_session()
        self.a.inject({'kind': 'peer_link'})
        # A notices the link go at once, not at its next RPO (300 s), and
        # stays the source, replicating: the link may come back.
        now = self.reason(session, 'replication link is down')
        self.assertEqual(('source', 'in_sync'),
                         (now['current_role'], now['state']))
        # B takes over meanwhile; what it tells A is lost on the way.
        self.kb.update(SESSIONS, remote['id'], {'state': 'failed_over'})
        self.assertEqual(['POST /api/v2/_replication/state'],
                         self.requests_to(self.a, '/_replication/state'))
        self.assertEqual('in_sync', self.ka.get(SESSIONS,
                                                session['id'])['state'])
        # Back up: A's next cycle comes at once and finds B failed over.
        self.a.clear_faults()
        now = self.reason(session, 'failed_over')
        self.assertEqual('suspended', now['state'])
        self.assertEqual('failed_over', self.remote_session()['state'])

    def test_a_session_deleted_mid_cycle_leaves_the_others_shipping(self):
        vg, vol = self.group()
        session = self.replicate(vg, vol)
        self.cycle(self.ka, session)
        # The next cycle ships (the volume grew) and its commit is slow:
        # the session goes while the cycle waits on the peer.
        self.ka.update('volumes', vol['id'], {'size': vol['size'] * 2})
        self.b.inject({'path': '/_replication/commit', 'kind': 'latency',
                       'seconds': 2, 'count': 1})
        self.ka.update(SESSIONS, session['id'], {'state': 'in_sync'})
        deadline = time.monotonic() + TIMEOUT
        while not self.requests_to(self.b, '/_replication/begin')[1:]:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        self.ka.delete(SESSIONS, session['id'])
        time.sleep(3)
        # Another group of the array still replicates.
        vg2, vol2 = self.group('cvg-y')
        self.cycle(self.ka, self.replicate(vg2, vol2, name='crs-y'))
        self.assertEqual(vol2['size'], self.kb.find('volumes',
                                                    name='cv-y')['size'])

    def test_reverse_after_failover_copies_back(self):
        vg, vol = self.group()
        self.put(self.lun(self.a, self.ka, 'cv-x'), 'first')
        session = self.replicate(vg, vol)
        self.cycle(self.ka, session)
        remote = self.remote_session()
        self.kb.update(SESSIONS, remote['id'], {'state': 'failed_over'})
        newer = self.put(self.lun(self.b, self.kb, 'cv-x'), 'newer')
        self.cycle(self.kb, remote)
        mine = self.ka.get(SESSIONS, session['id'])
        self.assertEqual(('target', 'in_sync'),
                         (mine['current_role'], mine['state']))
        self.assertIs(True, self.ka.find('volumes', name='cv-x')['read_only'])
        # Back to A: A takes over, then replicates to B again.
        self.ka.update(SESSIONS, session['id'], {'state': 'failed_over'})
        self.assertEqual('suspended', self.kb.get(SESSIONS,
                                                  remote['id'])['state'])
        self.cycle(self.ka, session)
        self.assert_reads(self.lun(self.a, self.ka, 'cv-x'), newer)
        self.assertEqual('source', self.ka.get(SESSIONS, session['id'])[
            'current_role'])
        self.assertEqual('target', self.remote_session()['current_role'])

    def test_sessions_survive_a_restart(self):
        vg, vol = self.group()
        session = self.replicate(vg, vol)
        self.cycle(self.ka, session)
        self.a.stop()
        self.a.start()
        self.ka = self.a.k2_client()
        again = self.ka.get(SESSIONS, session['id'])
        self.assertEqual(('source', 'in_sync'),
                         (again['current_role'], again['state']))
        self.put(self.lun(self.a, self.ka, 'cv-x'), 'later')
        self.cycle(self.ka, session)

    def test_refusals_leave_state_unchanged(self):
        vg, vol = self.group()
        session = self.replicate(vg, vol)
        peer_ref = _ref('replication/peer_k2arrays', self.peer_of_a)
        cases = [
            (SESSIONS, {'name': 'crs-y', 'replication_peer_k2array':
                        peer_ref,
                        'local_volume_group': _ref('volume_groups', vg),
                        'replication_peer_volume_group_name': 'cvg-x',
                        'remote_replication_session_name': 'crs-y'},
             'already replicated'),
            (SESSIONS, {'name': 'crs-z', 'colour': 'blue'}, 'colour'),
            (SESSIONS, {'name': 'crs-z', 'replication_peer_k2array':
                        peer_ref,
                        'local_volume_group': _ref('volume_groups', vg),
                        'replication_peer_volume_group_name': 'x' * 50,
                        'remote_replication_session_name': 'crs-z'},
             'longer than'),
        ]
        for resource, body, words in cases:
            e = self.assertRaises(flash_exception.ArrayAPIError,
                                  self.ka.create, resource, body)
            self.assertIn(words, str(e))
        e = self.assertRaises(flash_exception.ArrayAPIError, self.ka.update,
                              SESSIONS, session['id'], {'state': 'sleepy'})
        self.assertIn('sleepy', str(e))
        e = self.assertRaises(flash_exception.ArrayAPIError, self.ka.update,
                              SESSIONS, session['id'],
                              {'state': 'failed_over'})
        self.assertIn('source', str(e))
        # Deleting the replicated volume drops its peer volume; the group
        # stays until its session is gone.
        self.ka.delete('volumes', vol['id'])
        self.assertEqual([], self.ka.search('replication/peer_volumes'))
        e = self.assertRaises(flash_exception.ArrayAPIError, self.ka.delete,
                              'volume_groups', vg['id'])
        self.assertIn('session', str(e))
        self.assertEqual(1, len(self.ka.search(SESSIONS)))
        self.assertEqual('idle', self.ka.get(SESSIONS, session['id'])['state'])
        self.assertEqual([], self.kb.search(SESSIONS))
