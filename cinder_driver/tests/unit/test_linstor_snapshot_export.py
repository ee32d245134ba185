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

"""LINSTOR: snapshots attached for backups through a hidden definition."""

from unittest import mock

from cinder import exception

from cinder_driver.common import exception as flash_exception
from cinder_driver.linstor import driver as linstor_driver
from cinder_driver.linstor import snapshot_export
from cinder_driver.tests.unit import linstor_controller as ctl
from cinder_driver.tests.unit import linstor_fakes as fakes

RDS = '/v1/resource-definitions'
MARK = 'Aux/cinder-flash/snapshot-view-of'


class SnapshotAttachTestCase(fakes.ControllerTestCase):

    def setUp(self):
        super().setUp()
        self.vol = self.volume()
        self.snap = self.snapshot(self.vol)
        self.src = self.rd(self.vol)
        self.view = 'snapview-%s' % self.snap.id
        self.linstor.on('GET', '/v1/resource-groups/[^/]+', ctl.rg_view(
            'rg', {'place_count': 2, 'storage_pool_list': ['filethin']}))
        self.linstor.on('GET', '%s/%s' % (RDS, self.src),
                        ctl.rd_view(self.src, rg='cinder-rg'))
        self.linstor.on('PUT', '%s/%s' % (RDS, self.view), ctl.ok())

    def ours(self):
        rd = ctl.rd_view(self.view, rg='cinder-rg')
        rd['props'][MARK] = self.snap.id
        return rd

    def restorable(self, restore=None):
        self.linstor.on('GET', '%s/%s' % (RDS, self.view),
                        ctl.not_found_get('Resource definition'))
        self.linstor.on('POST', RDS, ctl.rd_created(self.view))
        self.linstor.on('POST', RDS + '/[^/]+/snapshot-restore-.*',
                        restore or ctl.ok(op='create'))
        self.linstor.on('DELETE', RDS + '/.*', ctl.deleted(self.view))

    def test_attach_restores_into_a_marked_view_handed_out_read_only(self):
        self.restorable()
        self.linstor.on('GET', '/v1/view/resources', [], [
            ctl.resource_view(self.view, 'backup-1')])
        self.linstor.on('POST', RDS + '/[^/]+/resources/[^/]+/make-'
                        'available', ctl.made_available(self.view,
                                                        'backup-1'))
        self.linstor.on('PUT', RDS + '/[^/]+/resources/[^/]+',
                        ctl.ok(obj='rsc'))
        info = self.adapter.initialize_connection_snapshot(
            self.snap, {'host': 'backup-1'})
        self.assertEqual({'driver_volume_type': 'local', 'data': {
            'device_path': '/dev/loop1', 'access_mode': 'ro'}}, info)
        self.assertEqual([{'resource_definition': {
            'name': self.view, 'resource_group_name': 'cinder-rg',
            'props': {MARK: self.snap.id}}}],
            self.linstor.bodies('POST', RDS))
        snap = 'snapshot-%s' % self.snap.id
        self.assertEqual([
            'POST %s' % RDS,
            'POST %s/%s/snapshot-restore-volume-definition/%s' % (
                RDS, self.src, snap),
            'POST %s/%s/snapshot-restore-resource/%s' % (RDS, self.src, snap),
            'POST %s/%s/resources/backup-1/make-available' % (
                RDS, self.view)],
            self.sent('POST'))
        self.assertEqual([], self.sent('DELETE'))

    def test_failed_restore_removes_only_the_view_it_made(self):
        self.restorable(ctl.refused(980, 'Not enough free space',
                                    obj='rsc'))
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.adapter.initialize_connection_snapshot,
                                self.snap, {'host': 'backup-1'})
        self.assertIn('Not enough free space', str(err))
        self.assertEqual(['DELETE %s/%s' % (RDS, self.view)],
                         self.sent('DELETE'))

    def test_failed_make_available_removes_the_view(self):
        self.restorable()
        self.linstor.on('GET', '/v1/view/resources', [])
        self.linstor.on('POST', RDS + '/[^/]+/resources/[^/]+/make-'
                        'available', ctl.refused(
                            1200, "Node 'backup-1' not found", obj='rsc'))
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.initialize_connection_snapshot,
                          self.snap, {'host': 'backup-1'})
        self.assertEqual(['DELETE %s/%s' % (RDS, self.view)],
                         self.sent('DELETE'))

    def test_a_definition_of_that_name_made_by_someone_else_is_refused(self):
        self.linstor.on('GET', '%s/%s' % (RDS, self.view),
                        ctl.rd_view(self.view))
        self.assertRaises(snapshot_export.NotOurs,
                          self.adapter.initialize_connection_snapshot,
                          self.snap, {'host': 'backup-1'})
        self.adapter.terminate_connection_snapshot(self.snap,
                                                   {'host': 'backup-1'})
        self.adapter.terminate_connection_snapshot(self.snap, None)
        self.assertEqual([], [r for r in self.sent()
                              if not r.startswith('GET')])

    def test_a_name_taken_during_the_attach_is_left_alone(self):
        self.restorable()
        self.linstor.on('POST', RDS, ctl.rd_exists(self.view))
        self.assertRaises(exception.VolumeBackendAPIException,
                          self.adapter.initialize_connection_snapshot,
                          self.snap, {'host': 'backup-1'})
        self.assertEqual([], self.sent('DELETE'))

    def test_second_attach_reuses_the_view_and_keeps_it_on_failure(self):
        self.linstor.on('GET', '%s/%s' % (RDS, self.view), self.ours())
        self.linstor.on('GET', '/v1/view/resources', [])
        self.linstor.on('POST', RDS + '/[^/]+/resources/[^/]+/make-'
                        'available', ctl.refused(1200, 'no node', obj='rsc'))
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.initialize_connection_snapshot,
                          self.snap, {'host': 'backup-2'})
        self.assertEqual([], self.sent('DELETE'))
        self.assertEqual(['POST %s/%s/resources/backup-2/make-available' % (
            RDS, self.view)], self.sent('POST'))

    def test_detach_removes_the_view_with_its_last_client(self):
        mark = {'Aux/cinder-flash/attached-for': self.snap.id}
        self.linstor.on('GET', '%s/%s' % (RDS, self.view), self.ours())
        restored = ctl.resource_view(self.view, 'stlt1')
        client = ctl.resource_view(self.view, 'backup-1', props=mark,
                                   flags=['DRBD_DISKLESS'])
        other = ctl.resource_view(self.view, 'backup-2', props=mark,
                                  flags=['DRBD_DISKLESS'])
        self.linstor.on('GET', '/v1/view/resources',
                        [restored, client, other], [restored, other],
                        [restored, other], [restored])
        self.linstor.on('DELETE', RDS + '/.*', ctl.ok(op='delete'))
        self.adapter.terminate_connection_snapshot(self.snap,
                                                   {'host': 'backup-1'})
        self.assertEqual(['DELETE %s/%s/resources/backup-1' % (
            RDS, self.view)], self.sent('DELETE'))
        self.adapter.terminate_connection_snapshot(self.snap,
                                                   {'host': 'backup-2'})
        self.assertEqual([
            'DELETE %s/%s/resources/backup-1' % (RDS, self.view),
            'DELETE %s/%s/resources/backup-2' % (RDS, self.view),
            'DELETE %s/%s' % (RDS, self.view)], self.sent('DELETE'))

    def test_force_detach_removes_the_view(self):
        self.linstor.on('GET', '%s/%s' % (RDS, self.view), self.ours())
        self.linstor.on('DELETE', RDS + '/.*', ctl.deleted(self.view))
        self.adapter.terminate_connection_snapshot(self.snap, None)
        self.assertEqual(['DELETE %s/%s' % (RDS, self.view)],
                         self.sent('DELETE'))

    def test_detach_without_a_view_does_nothing(self):
        self.linstor.on('GET', '%s/%s' % (RDS, self.view),
                        ctl.not_found_get('Resource definition'))
        self.adapter.terminate_connection_snapshot(self.snap,
                                                   {'host': 'backup-1'})
        self.assertEqual(['GET %s/%s' % (RDS, self.view)], self.sent())

    def test_detach_keeps_the_view_of_a_client_made_under_its_intent(self):
        """backup-2's attach died between creating its client and
        marking it: the view stays until that client is detached.
        """
        mark = {'Aux/cinder-flash/attached-for': self.snap.id}
        rd = self.ours()
        rd['props']['Aux/cinder-flash/attaching/backup-2'] = self.snap.id
        self.linstor.on('GET', '%s/%s' % (RDS, self.view), rd)
        restored = ctl.resource_view(self.view, 'stlt1')
        client = ctl.resource_view(self.view, 'backup-1', props=mark,
                                   flags=['DRBD_DISKLESS'])
        unmarked = ctl.resource_view(self.view, 'backup-2',
                                     flags=['DRBD_DISKLESS'])
        self.linstor.on('GET', '/v1/view/resources',
                        [restored, client, unmarked], [restored, unmarked])
        self.linstor.on('DELETE', RDS + '/.*', ctl.ok(op='delete'))
        self.adapter.terminate_connection_snapshot(self.snap,
                                                   {'host': 'backup-1'})
        self.assertEqual(['DELETE %s/%s/resources/backup-1' % (
            RDS, self.view)], self.sent('DELETE'))


class DriverTestCase(fakes.LinstorTestCase):

    def test_drbd_driver_attaches_snapshots_under_the_host_lock(self):
        conf = fakes.make_conf(self)
        drv = linstor_driver.LinstorDrbdDriver(configuration=conf,
                                               host='cinder@x')
        drv.adapter = mock.Mock()
        snap = self.snapshot(self.volume())
        with mock.patch.object(drv, 'host_locked',
                               side_effect=lambda k, f, *a: f(*a)) as lock:
            drv.initialize_connection_snapshot(snap, {'host': 'h'})
            drv.terminate_connection_snapshot(snap, {'host': 'h'})
        self.assertEqual(['h', 'h'], [c[0][0] for c in lock.call_args_list])
        drv.adapter.initialize_connection_snapshot.assert_called_once_with(
            snap, {'host': 'h'})
        drv.adapter.terminate_connection_snapshot.assert_called_once_with(
            snap, {'host': 'h'})
        self.assertIsNone(drv.create_export_snapshot(self.ctx, snap, {}))

    def test_iscsi_driver_says_backups_use_a_temporary_volume(self):
        conf = fakes.make_conf(self, backup_use_temp_snapshot=True)
        with mock.patch('oslo_utils.importutils.import_object'):
            drv = linstor_driver.LinstorISCSIDriver(configuration=conf)
        with mock.patch.object(linstor_driver.LOG, 'warning') as warn:
            self.assertIs(False, drv.backup_use_temp_snapshot())
        self.assertIn('temporary volume', warn.call_args[0][0])
