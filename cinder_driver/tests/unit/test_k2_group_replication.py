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

"""K2 group replication: one session per replicated group."""

from unittest import mock

from cinder import exception
from cinder import objects
from cinder.objects import fields
from cinder.tests.unit import fake_group
from cinder.volume import group_types
from oslo_utils import uuidutils

from cinder_driver.k2 import replication
from cinder_driver.tests.unit import k2_fakes

ENABLED = fields.ReplicationStatus.ENABLED
FAILED_OVER = fields.ReplicationStatus.FAILED_OVER
ERROR = fields.ReplicationStatus.ERROR


class GroupReplicationTestCase(k2_fakes.ReplicatedAdapterTestCase):

    def setUp(self):
        super().setUp()
        self.rep_type = group_types.create(
            self.ctx, 'rep-%s' % uuidutils.generate_uuid()[:8],
            {'consistent_group_replication_enabled': '<is> True'})
        self.plain_type = group_types.create(
            self.ctx, 'plain-%s' % uuidutils.generate_uuid()[:8], {})

    def group(self, replicated=True, status=ENABLED):
        grp = fake_group.fake_group_obj(
            self.ctx, id=uuidutils.generate_uuid(),
            group_type_id=(self.rep_type if replicated
                           else self.plain_type)['id'],
            replication_status=status)
        grp.volume_types = objects.VolumeTypeList(objects=[
            self.member(grp).volume_type])
        return grp

    def member(self, grp, provider='20/9/g', status=ENABLED):
        vol = self.volume(provider, replication_enabled='<is> True')
        vol.group_id = grp.id
        vol.replication_status = status
        return vol

    def records_of(self, vols, group_id=20, first_id=9):
        return [k2_fakes.volume_record(first_id + n, 'cv-%s' % v.name_id,
                                       group_id=group_id)
                for n, v in enumerate(vols)]

    # -- enable / disable --------------------------------------------------
    def test_enable_starts_one_session_for_all_members(self):
        grp = self.group(status=fields.ReplicationStatus.ENABLING)
        vols = [self.member(grp), self.member(grp, '20/10/g')]
        self.client.volume_group_by_name.return_value = \
            k2_fakes.group_record(20)
        self.client.session_by_name.return_value = None
        self.client.create_session.return_value = 5
        self.client.volumes_in_group.return_value = self.records_of(vols)
        model, updates = self.driver.enable_replication(self.ctx, grp, vols)
        self.assertEqual({'replication_status': ENABLED}, model)
        self.assertEqual([ENABLED, ENABLED],
                         [u['replication_status'] for u in updates])
        self.client.create_session.assert_called_once_with(
            'crg-%s' % grp.id, 1, 20, 'cgrp-%s' % grp.id, 60)
        self.assertEqual([((5, 9, 'cv-%s' % vols[0].name_id),),
                          ((5, 10, 'cv-%s' % vols[1].name_id),)],
                         [c[:1] for c in
                          self.client.add_peer_volume.call_args_list])
        self.client.set_session_state.assert_called_once_with(5, 'in_sync')

    def test_enable_with_a_stray_volume_removes_its_session(self):
        grp = self.group(status=fields.ReplicationStatus.ENABLING)
        vols = [self.member(grp), self.member(grp, '20/10/g')]
        self.client.volume_group_by_name.return_value = \
            k2_fakes.group_record(20)
        self.client.session_by_name.side_effect = [
            None, k2_fakes.session(5, 'crg-%s' % grp.id)]
        self.client.create_session.return_value = 5
        self.client.volumes_in_group.return_value = self.records_of(vols[:1])
        self.secondary.session_by_name.return_value = None
        self.secondary.volume_group_by_name.return_value = None
        self.assertRaises(exception.VolumeBackendAPIException,
                          self.driver.enable_replication, self.ctx, grp,
                          vols)
        self.client.delete_session.assert_called_once_with(5)
        self.client.set_session_state.assert_not_called()

    def test_plain_group_types_are_refused(self):
        grp = self.group(replicated=False)
        for call in (self.driver.enable_replication,
                     self.driver.disable_replication,
                     self.driver.failover_replication):
            self.assertRaises(exception.InvalidGroupType, call, self.ctx,
                              grp, [])
        self.client.create_session.assert_not_called()

    def test_disable_removes_the_session_and_the_copy_only(self):
        grp = self.group()
        vols = [self.member(grp)]
        self.client.session_by_name.return_value = k2_fakes.session(
            5, 'crg-%s' % grp.id)
        self.secondary.session_by_name.return_value = k2_fakes.session(
            6, 'crg-%s' % grp.id)
        self.secondary.volume_group_by_name.return_value = \
            k2_fakes.group_record(40, name='cgrp-%s' % grp.id)
        # The peer's group also holds a volume that is not the group's.
        self.secondary.volumes_in_group.return_value = \
            self.records_of(vols, 40, 31) + [
                k2_fakes.volume_record(99, 'cv-someone-else', 40)]
        self.secondary.delete_volume_group.side_effect = k2_fakes.busy()
        model, updates = self.driver.disable_replication(self.ctx, grp, vols)
        self.assertEqual(fields.ReplicationStatus.DISABLED,
                         model['replication_status'])
        self.client.delete_session.assert_called_once_with(5)
        self.secondary.delete_session.assert_called_once_with(6)
        self.secondary.delete_volume.assert_called_once_with(31)
        self.client.delete_volume.assert_not_called()

    # -- failover ----------------------------------------------------------
    def test_failover_moves_every_member_at_once(self):
        grp = self.group()
        vols = [self.member(grp), self.member(grp, '20/10/g')]
        self.secondary.session_by_name.return_value = k2_fakes.session(
            6, 'crg-%s' % grp.id)
        self.secondary.volumes_by_names.return_value = {
            r.name: r for r in self.records_of(vols, 40, 31)}
        model, updates = self.driver.failover_replication(
            self.ctx, grp, vols, 'dr')
        self.assertEqual({'replication_status': FAILED_OVER}, model)
        self.assertEqual(['40/31/g@dr', '40/32/g@dr'],
                         [u['provider_id'] for u in updates])
        # One state change of one session: one image for all members.
        self.secondary.set_session_state.assert_called_once_with(
            6, 'failed_over')
        vols[0].update(updates[0])
        self.assertIs(self.driver.adapters['dr'],
                      self.driver.adapter_of(vols[0]))
        self.assertIs(self.adapter, self.driver.adapter_of(vols[1]))

    def test_failover_without_every_copy_changes_nothing(self):
        grp = self.group()
        vols = [self.member(grp), self.member(grp, '20/10/g')]
        self.secondary.session_by_name.return_value = k2_fakes.session(
            6, 'crg-%s' % grp.id)
        self.secondary.volumes_by_names.return_value = {
            r.name: r for r in self.records_of(vols[:1], 40, 31)}
        e = self.assertRaises(exception.VolumeBackendAPIException,
                              self.driver.failover_replication, self.ctx,
                              grp, vols, 'dr')
        self.assertIn(vols[1].id, str(e))
        self.secondary.set_session_state.assert_not_called()

    def test_failover_to_an_unknown_target_is_refused(self):
        grp = self.group()
        self.assertRaises(exception.InvalidReplicationTarget,
                          self.driver.failover_replication, self.ctx, grp,
                          [self.member(grp)], 'elsewhere')
        self.secondary.set_session_state.assert_not_called()

    def test_copies_of_a_failed_over_member_are_refused(self):
        grp = self.group(status=FAILED_OVER)
        vol = self.member(grp, '40/31/g@dr', status=FAILED_OVER)
        self.assertRaises(exception.VolumeDriverException,
                          self.driver.create_cloned_volume,
                          self.volume(None), vol)
        self.client.create_volume.assert_not_called()
        self.secondary.create_volume.assert_not_called()

    def test_volumes_from_snapshots_of_a_failed_over_member_are_refused(self):
        grp = self.group(status=FAILED_OVER)
        vol = self.member(grp, '40/31/g@dr', status=FAILED_OVER)
        self.assertRaises(exception.VolumeDriverException,
                          self.driver.create_volume_from_snapshot,
                          self.volume(None), self.snapshot(vol))
        self.client.create_volume.assert_not_called()
        self.secondary.create_volume.assert_not_called()

    def test_backend_failover_moves_replicated_groups_with_members(self):
        grp = self.group()
        member = self.member(grp)
        self.secondary.session_by_name.return_value = k2_fakes.session(
            6, 'crg-%s' % grp.id)
        self.secondary.volumes_by_names.return_value = {
            r.name: r for r in self.records_of([member], 40, 31)}
        active, updates, group_updates = self.driver.failover_host(
            self.ctx, [member], 'dr', [grp])
        self.assertEqual('dr', active)
        self.assertEqual([{'group_id': grp.id, 'updates': {
            'replication_status': FAILED_OVER}}], group_updates)
        self.assertEqual([{'volume_id': member.id, 'updates': {
            'provider_id': '40/31/g@dr',
            'replication_status': FAILED_OVER}}], updates)

    # -- status ------------------------------------------------------------
    def test_error_status_names_the_group_and_its_volumes(self):
        grp = self.group()
        healed = self.group(status=ERROR)
        healed.volumes = objects.VolumeList(objects=[
            self.member(healed, status=ERROR)])
        self.client.source_sessions.return_value = [
            k2_fakes.session(5, 'crg-%s' % grp.id, state='suspended',
                             reason='peer unreachable', group_id=20),
            k2_fakes.session(7, 'crg-%s' % healed.id, group_id=21)]
        self.client.volumes_in_group.return_value = [
            k2_fakes.volume_record(9, description='cinder:abc')]
        groups, vols = self.driver.get_replication_error_status(
            self.ctx, [grp, healed])
        self.assertEqual([{'group_id': grp.id, 'replication_status': ERROR},
                          {'group_id': healed.id,
                           'replication_status': ENABLED}], groups)
        self.assertEqual([{'volume_id': 'abc', 'replication_status': ERROR},
                          {'volume_id': healed.volumes[0].id,
                           'replication_status': ENABLED}], vols)
        self.client.volumes_in_group.assert_called_once_with(20)

    def test_a_failed_over_group_is_not_an_error(self):
        moved = self.group(status=FAILED_OVER)
        self.client.source_sessions.return_value = [
            k2_fakes.session(5, 'crg-%s' % moved.id, state='suspended',
                             reason='409: the target is failed over',
                             group_id=20)]
        self.assertEqual(([], []), self.driver.get_replication_error_status(
            self.ctx, [moved]))
        self.client.volumes_in_group.assert_not_called()

    def test_groups_cinder_did_not_pass_are_judged_as_cinder_holds_them(self):
        # In a cluster Cinder passes no group (it looks them up by the
        # cluster's name without the pool): the driver reads each
        # session's group itself.
        moved = self.group(status=FAILED_OVER)
        broken = self.group()
        healed = self.group(status=ERROR)
        healed.volumes = objects.VolumeList(objects=[
            self.member(healed, status=ERROR)])
        held = {g.id: g for g in (moved, broken, healed)}
        self.client.source_sessions.return_value = [
            k2_fakes.session(5, 'crg-%s' % moved.id, state='suspended',
                             reason='409: the target is failed over',
                             group_id=20),
            k2_fakes.session(6, 'crg-%s' % broken.id, state='suspended',
                             reason='peer unreachable', group_id=21),
            k2_fakes.session(7, 'crg-%s' % healed.id, group_id=22)]
        self.client.volumes_in_group.return_value = []
        with mock.patch.object(objects.Group, 'get_by_id',
                               side_effect=lambda ctx, gid: held[gid]):
            groups, vols = self.driver.get_replication_error_status(
                self.ctx, [])
        self.assertEqual(sorted([
            {'group_id': broken.id, 'replication_status': ERROR},
            {'group_id': healed.id, 'replication_status': ENABLED}],
            key=str), sorted(groups, key=str))
        self.assertEqual([{'volume_id': healed.volumes[0].id,
                           'replication_status': ENABLED}], vols)
        self.client.volumes_in_group.assert_called_once_with(21)

    def test_a_group_that_cannot_be_read_is_judged_as_passed_and_said(self):
        grp = self.group()
        self.client.source_sessions.return_value = [
            k2_fakes.session(5, 'crg-%s' % grp.id, state='suspended',
                             reason='peer unreachable', group_id=20)]
        self.client.volumes_in_group.return_value = []
        with mock.patch.object(grp, 'refresh',
                               side_effect=RuntimeError('db down')), \
                mock.patch.object(replication.LOG, 'warning') as warn:
            groups, _vols = self.driver.get_replication_error_status(
                self.ctx, [grp])
        self.assertEqual([{'group_id': grp.id, 'replication_status': ERROR}],
                         groups)
        self.assertIn('db down', str(warn.call_args))

    def test_a_group_read_before_its_failover_is_read_again(self):
        # Cinder read the group enabled; its failover then began (the
        # database says failing-over) and troubled the session.
        grp = self.group()

        def reread():
            grp.replication_status = fields.ReplicationStatus.FAILING_OVER
        self.client.source_sessions.return_value = [
            k2_fakes.session(5, 'crg-%s' % grp.id, state='suspended',
                             reason='409: the target is failed over',
                             group_id=20)]
        with mock.patch.object(grp, 'refresh', side_effect=reread):
            self.assertEqual(([], []),
                             self.driver.get_replication_error_status(
                                 self.ctx, [grp]))

    def test_backend_reports_error_while_a_session_is_troubled(self):
        self.serve_stats()
        self.client.source_sessions.return_value = [
            k2_fakes.session(5, 'crg-x', reason='peer unreachable')]
        stats = self.adapter.get_volume_stats(refresh=True)
        self.assertEqual(ERROR, stats['replication_status'])
        pool = stats['pools'][0]
        self.assertIs(True, pool['consistent_group_replication_enabled'])
        self.client.source_sessions.return_value = []
        self.adapter._stats = None
        stats = self.adapter.get_volume_stats(refresh=True)
        self.assertEqual(ENABLED, stats['replication_status'])
