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

"""The cluster audit's LINSTOR lines, on states given to it.

The audit reads Cinder's database with PyMySQL, which only the gate's
environment installs; the comparison itself needs neither, so the module
is loaded here with a stand-in for it.
"""

import os
import sys
from unittest import mock

import testtools

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
from cinder_driver.linstor import attach  # noqa: E402

try:
    import pymysql  # noqa: F401
except ImportError:
    with mock.patch.dict(sys.modules, {'pymysql': mock.Mock()}):
        from tools.gate import cluster_audit
else:
    from tools.gate import cluster_audit  # noqa: E402

VOL = '11111111-2222-3333-4444-555555555555'
NODE = 'compute-1'


class Cinder(object):
    """CinderState's view of one LINSTOR volume."""

    def __init__(self, attached_to=()):
        self.volumes = {VOL: {'id': VOL, '_name_id': None,
                              'status': 'in-use' if attached_to else
                              'available',
                              'host': 'gate-a@linstor-drbd#pool',
                              'size': 1, 'attach_status': 'attached'}}
        self.snapshots = {}
        self.attachments = {
            'a%d' % i: {'id': 'a%d' % i, 'volume_id': VOL,
                        'attach_status': 'attached',
                        'connector': {'host': host}}
            for i, host in enumerate(attached_to)}

    def name_id(self, vid):
        return self.volumes[vid]['_name_id'] or vid

    def backend(self, vid):
        return 'linstor-drbd'

    def live_attachments(self, vid):
        return [a for a in self.attachments.values()
                if a['volume_id'] == vid]


class Array(object):
    """ArrayState's LINSTOR replies."""

    def __init__(self, rd_props=None, resources=()):
        self.replies = {
            '/v1/resource-definitions?with_volume_definitions=true': [{
                'name': 'volume-' + VOL, 'props': rd_props or {},
                'volume_definitions': [{'size_kib': 1024 * 1024}]}],
            '/v1/view/snapshots': [],
            '/v1/view/resources': list(resources)}

    def linstor(self, path):
        return self.replies[path]


def diskless(node, props=None):
    return {'name': 'volume-' + VOL, 'node_name': node,
            'flags': ['DRBD_DISKLESS'], 'props': props or {}}


class LinstorAuditTestCase(testtools.TestCase):

    def test_agreement_is_silent(self):
        owned = diskless(NODE, {attach.MANAGED_BY: VOL})
        self.assertEqual([], cluster_audit.check_linstor(
            Cinder(attached_to=[NODE]), Array(resources=[owned])))

    def test_a_leftover_intent_is_a_problem_of_its_own(self):
        key = attach.intent_key(NODE)
        self.assertEqual(
            ['attach intent %s=%s left on volume-%s' % (key, VOL, VOL)],
            cluster_audit.check_linstor(
                Cinder(), Array(rd_props={key: VOL})))

    def test_an_unowned_client_names_its_owner_and_the_intent(self):
        key = attach.intent_key(NODE)
        problems = cluster_audit.check_linstor(
            Cinder(), Array(rd_props={key: VOL},
                            resources=[diskless(NODE)]))
        self.assertEqual(2, len(problems), problems)
        self.assertIn('diskless resource of %s on node %s (no owner '
                      'property) (intent %s=%s on its definition) with no '
                      'attachment there' % (VOL, NODE, key, VOL),
                      problems)

    def test_a_client_on_another_host_than_the_attachment(self):
        problems = cluster_audit.check_linstor(
            Cinder(attached_to=['compute-2']),
            Array(resources=[diskless(NODE, {attach.MANAGED_BY: VOL})]))
        self.assertEqual(1, len(problems), problems)
        self.assertIn('WRONG HOST: attached to compute-2', problems[0])
