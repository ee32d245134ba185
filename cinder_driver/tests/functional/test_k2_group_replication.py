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

"""K2 group replication (one session per group) on two live arrays."""

import time

from cinder import objects
from cinder.objects import fields
from cinder.tests.unit import fake_group
from cinder.volume import group_types
from oslo_utils import uuidutils

from cinder_driver.tests.functional import k2_replication_base
from reference_array.tests import iscsi_client

CONNECTOR = k2_replication_base.CONNECTOR
MIB = k2_replication_base.MIB
ENABLED = fields.ReplicationStatus.ENABLED
FAILED_OVER = fields.ReplicationStatus.FAILED_OVER


class K2GroupReplicationTestCase(k2_replication_base.K2ReplicationBase):

    def setUp(self):
        super().setUp()
        self.rep_type = group_types.create(
            self.ctx, 'rep-%s' % uuidutils.generate_uuid()[:8],
            {'consistent_group_replication_enabled': '<is> True'})
        self.vtype = self.replicated_type()

    def group(self, members=2):
        """A replicated group with ``members`` volumes, replicating."""
        grp = fake_group.fake_group_obj(
            self.ctx, id=uuidutils.generate_uuid(),
            group_type_id=self.rep_type['id'],
            replication_status=fields.ReplicationStatus.DISABLED)
        grp.volume_types = objects.VolumeTypeList(objects=[self.vtype])
        self.driver.create_group(self.ctx, grp)
        vols = [self.member(grp) for _n in range(members)]
        model, updates = self.driver.enable_replication(self.ctx, grp, vols)
        self.assertEqual({'replication_status': ENABLED}, model)
        grp.update(model)
        self.apply(vols, updates)
        return grp, vols

    def member(self, grp):
        vol = self.volume(1, self.vtype, group_id=grp.id)
        vol.group = grp
        vol.update(self.driver.create_volume(vol))
        return vol

    def apply(self, vols, updates):
        by_id = {u['id']: u for u in updates}
        for vol in vols:
            vol.update({k: v for k, v in by_id[vol.id].items()
                        if k != 'id'})

    def sessions(self, array):
        return array.k2_client().search('replication/sessions')

    def write(self, vol, array, name):
        path = self.data(name, MIB)
        result = iscsi_client.write_file(path, self.lun(self.driver, vol,
                                                        array))
        self.assertEqual(0, result.returncode, result.stderr)
        self.driver.terminate_connection(vol, CONNECTOR)
        return path

    def reads(self, vol, array, path):
        self.assert_reads(self.lun(self.driver, vol, array), path)
        self.driver.terminate_connection(vol, CONNECTOR)

    def test_one_session_ships_every_member(self):
        grp, vols = self.group()
        sessions = self.sessions(self.array)
        self.assertEqual(['crg-%s' % grp.id], [s['name'] for s in sessions])
        self.assertEqual(('source', 'in_sync'), (
            sessions[0]['current_role'], sessions[0]['state']))
        # A member created while the group replicates joins its session.
        vols.append(self.member(grp))
        self.assertEqual(ENABLED, vols[-1].replication_status)
        self.sync(None, 'crg-%s' % grp.id)
        copies = self.peer.k2_client().find('volume_groups',
                                            name='cgrp-%s' % grp.id)
        self.assertEqual(3, copies['volumes_count'])
        self.assertEqual(['crg-%s' % grp.id],
                         [s['name'] for s in self.sessions(self.peer)])
        pool = self.driver.get_volume_stats(refresh=True)['pools'][0]
        self.assertIs(True, pool['consistent_group_replication_enabled'])

    def test_failover_serves_one_image_of_all_members(self):
        grp, vols = self.group()
        first = [self.write(v, self.array, 'a%d' % n)
                 for n, v in enumerate(vols)]
        self.sync(None, 'crg-%s' % grp.id)
        # Written after the last image: no member shows it after the
        # failover, so the members stay consistent with each other.
        self.write(vols[0], self.array, 'late')

        model, updates = self.driver.failover_replication(
            self.ctx, grp, vols, 'secondary')
        self.assertEqual({'replication_status': FAILED_OVER}, model)
        grp.update(model)
        self.apply(vols, updates)
        for vol, path in zip(vols, first):
            self.assertTrue(vol.provider_id.endswith('@secondary'))
            self.reads(vol, self.peer, path)
        second = self.write(vols[1], self.peer, 'b1')
        # The rest of the backend stays on the primary.
        plain = self.create()
        self.assertIsNotNone(self.array_volume(plain))

        model, updates = self.driver.failover_replication(
            self.ctx, grp, vols, 'default')
        self.assertEqual({'replication_status': ENABLED}, model)
        self.apply(vols, updates)
        self.reads(vols[0], self.array, first[0])
        self.reads(vols[1], self.array, second)
        local = self.session_named(self.array, 'crg-%s' % grp.id)
        self.assertEqual(('source', 'in_sync'),
                         (local['current_role'], local['state']))

    def test_a_member_added_after_a_failback_is_shipped(self):
        grp, vols = self.group()
        for target in ('secondary', 'default'):
            model, updates = self.driver.failover_replication(
                self.ctx, grp, vols, target)
            grp.update(model)
            self.apply(vols, updates)
        vols.append(self.member(grp))
        self.assertEqual(ENABLED, vols[-1].replication_status)
        self.sync(None, 'crg-%s' % grp.id)
        copies = self.peer.k2_client().find('volume_groups',
                                            name='cgrp-%s' % grp.id)
        self.assertEqual(3, copies['volumes_count'])

    def test_disable_and_delete_leave_nothing(self):
        grp, vols = self.group()
        self.sync(None, 'crg-%s' % grp.id)
        model, _updates = self.driver.disable_replication(self.ctx, grp,
                                                          vols)
        self.assertEqual(fields.ReplicationStatus.DISABLED,
                         model['replication_status'])
        self.assertEqual([], self.sessions(self.array))
        self.assertEqual([], self.sessions(self.peer))
        self.assertIsNone(self.peer.k2_client().find(
            'volume_groups', name='cgrp-%s' % grp.id))
        self.driver.delete_group(self.ctx, grp, vols)
        self.assertIsNone(self.array.k2_client().find(
            'volume_groups', name='cgrp-%s' % grp.id))

    def primary_reason(self, grp, words):
        """The reason the primary's session of ``grp`` gives, once it
        says ``words``.
        """
        deadline = time.monotonic() + k2_replication_base.SYNC_TIMEOUT
        while True:
            reason = self.session_named(self.array, 'crg-%s' % grp.id)[
                'state_reason']
            if words in reason:
                return reason
            self.assertLess(time.monotonic(), deadline, reason)
            time.sleep(0.1)

    def assert_failed_over_group_not_in_error(self, grp):
        self.driver.adapter._stats = None
        self.assertEqual(fields.ReplicationStatus.ERROR,
                         self.driver.get_volume_stats(refresh=True)[
                             'replication_status'])
        groups, errors = self.driver.get_replication_error_status(
            self.ctx, [grp])
        self.assertEqual(([], []), (groups, errors))

    def test_a_failed_over_group_is_not_reported_in_error(self):
        # Cinder polls the error status while the backend reports one;
        # a group it holds failed over must stay failed over, or Cinder
        # refuses to fail it back.
        grp, vols = self.group()
        # The group fails over while the primary's replication link is
        # down: the secondary cannot tell the primary it took over, and
        # the primary's session fails its cycles and says why.
        self.array.inject({'kind': 'peer_link'})
        # A cycle already past its look at the link when the rule came
        # may still reach the secondary: the failover waits for the
        # primary to have seen the link down.
        self.primary_reason(grp, 'replication link is down')
        model, updates = self.driver.failover_replication(
            self.ctx, grp, vols, 'secondary')
        grp.update(model)
        self.apply(vols, updates)
        self.primary_reason(grp, 'replication link is down')
        self.assert_failed_over_group_not_in_error(grp)
        # The link is back: the primary's next cycle finds that the
        # secondary serves the group now, and reports that.
        self.array.clear_faults()
        self.primary_reason(grp, 'failed_over')
        self.assert_failed_over_group_not_in_error(grp)
        model, _updates = self.driver.failover_replication(
            self.ctx, grp, vols, 'default')
        self.assertEqual({'replication_status': ENABLED}, model)

    def test_a_stalled_session_is_reported_for_the_group(self):
        grp, vols = self.group()
        self.sync(None, 'crg-%s' % grp.id)
        self.assertEqual(fields.ReplicationStatus.ERROR,
                         self.stall('crg-%s' % grp.id))
        groups, errors = self.driver.get_replication_error_status(
            self.ctx, [grp])
        self.assertEqual([{'group_id': grp.id, 'replication_status':
                           fields.ReplicationStatus.ERROR}], groups)
        self.assertEqual(sorted(v.id for v in vols),
                         sorted(e['volume_id'] for e in errors))
