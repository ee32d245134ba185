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

"""LINSTOR driver against the replies a LINSTOR 1.33 controller sends.

Each case fakes only the HTTP boundary; the replies are shaped as the
real controller's (see linstor_controller).
"""

from unittest import mock

from cinder import exception
from cinder import objects as cinder_objects
from cinder.volume import volume_types
import requests

from cinder_driver.common import exception as flash_exception
from cinder_driver.linstor import driver as linstor_driver
from cinder_driver.tests.unit import linstor_controller as ctl
from cinder_driver.tests.unit import linstor_fakes as fakes

RG = '/v1/resource-groups/[^/]+'
RDS = '/v1/resource-definitions'
GIB = 1024 * 1024


class RefusalTestCase(fakes.ControllerTestCase):
    """Refusals are read, never retried, and never undone by deleting
    what the refused request did not make.
    """

    def group_exists(self, vtype=None):
        self.linstor.on('GET', RG, ctl.rg_view(
            'rg', {'place_count': 2, 'storage_pool_list': ['filethin']}))

    def test_create_over_a_foreign_definition_deletes_nothing(self):
        vol = self.volume()
        self.group_exists()
        self.linstor.on('POST', RG + '/spawn',
                        ctl.rd_exists_on_spawn('rg', self.rd(vol)))
        err = self.assertRaises(exception.VolumeBackendAPIException,
                                self.adapter.create_volume, vol)
        self.assertIn('already has a resource definition %s' % self.rd(vol),
                      str(err))
        self.assertEqual([], self.sent('DELETE'))

    def test_refused_spawn_that_made_nothing_deletes_nothing(self):
        self.group_exists()
        self.linstor.on('POST', RG + '/spawn', ctl.refused(
            996, 'Not enough available nodes', 'rsc_grp'))
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.adapter.create_volume, self.volume())
        self.assertIn('Not enough available nodes', str(err))
        self.assertEqual([], self.sent('DELETE'))
        self.assertEqual(1, len(self.sent('POST')))

    def test_spawn_that_made_the_definition_and_failed_removes_it(self):
        vol = self.volume()
        self.group_exists()
        made = ctl.spawned('rg', self.rd(vol)).payload[:3]
        self.linstor.on('POST', RG + '/spawn', ctl.Reply(500, made + [
            ctl.entry('error', 998, '(stlt1) Failed to create file volume',
                      'vlm_dfn', 'modify')]))
        self.linstor.on('DELETE', RDS + '/[^/]+', ctl.deleted(self.rd(vol)))
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.create_volume, vol)
        self.assertEqual(['DELETE %s/%s' % (RDS, self.rd(vol))],
                         self.sent('DELETE'))

    def test_copies_over_a_foreign_definition_delete_nothing(self):
        src = self.volume()
        snap = self.snapshot(src)
        vol = self.volume()
        self.group_exists()
        self.linstor.on('POST', RDS, ctl.rd_exists(self.rd(vol)))
        self.linstor.on('POST', RDS + '/[^/]+/clone', ctl.rd_exists(
            self.rd(vol)))
        self.assertRaises(exception.VolumeBackendAPIException,
                          self.adapter.create_volume_from_snapshot, vol,
                          snap)
        self.assertRaises(exception.VolumeBackendAPIException,
                          self.adapter.create_cloned_volume, vol, src)
        self.assertEqual([], self.sent('DELETE'))

    def test_refused_put_is_sent_once(self):
        self.linstor.on('PUT', RDS + '/[^/]+/volume-definitions/0',
                        ctl.refused(206, 'Invalid volume size', 'vlm_dfn',
                                    'modify'))
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.adapter.extend_volume, self.volume(),
                                2)
        self.assertIn('Invalid volume size', str(err))
        self.assertEqual(1, len(self.sent()))
        self.assertEqual([], self.slept)

    def test_transient_failures_are_retried(self):
        path = RDS + '/[^/]+/volume-definitions/0'
        self.linstor.on('PUT', path, ctl.Reply(503, None),
                        ctl.Reply(502, None),
                        ctl.Reply(500, None, raises=requests.exceptions
                                  .ConnectionError('reset')),
                        ctl.ok())
        self.adapter.extend_volume(self.volume(), 2)
        self.assertEqual(4, len(self.sent('PUT')))
        self.assertEqual([1.0, 2.0, 4.0], self.slept)

    def test_warning_answers_pass(self):
        self.linstor.on('DELETE', RDS + '/[^/]+', ctl.delete_missing())
        self.adapter.delete_volume(self.volume())
        self.assertEqual(1, len(self.sent()))


class GroupTestCase(fakes.ControllerTestCase):
    """Properties are set after the group is made, and checked; the
    group follows its type; groups of deleted types go.
    """

    def test_properties_are_set_after_the_group_is_made(self):
        vtype = self.vtype(**{
            'linstor:property:DrbdOptions:Net:protocol': 'C'})
        vol = self.volume(1, vtype)
        flt = {'place_count': 2, 'storage_pool_list': ['filethin']}
        self.linstor.on('GET', RG, ctl.not_found_get('Resource group'),
                        ctl.rg_view(self.rg(vtype), flt))
        self.linstor.on('POST', '/v1/resource-groups',
                        ctl.rg_created(self.rg(vtype)))
        self.linstor.on('PUT', RG, ctl.rg_modified(self.rg(vtype)))
        self.linstor.on('POST', RG + '/spawn',
                        ctl.spawned(self.rg(vtype), self.rd(vol)))
        self.adapter.create_volume(vol)
        self.assertEqual(['GET', 'POST', 'PUT', 'POST'],
                         [r.split()[0] for r in self.sent()])
        self.assertNotIn('props', self.linstor.bodies(
            'POST', '/v1/resource-groups')[0])
        self.assertEqual({'DrbdOptions/Net/protocol': 'C'},
                         self.linstor.bodies('PUT', RG)[0]['override_props'])

    def test_refused_property_fails_the_create_and_leaves_nothing(self):
        vtype = self.vtype(**{
            'linstor:property:DrbdOptions:Net:protocol': 'D'})
        name = self.rg(vtype)
        self.linstor.on('GET', RG, ctl.not_found_get('Resource group'),
                        ctl.rg_view(name, {'place_count': 2}))
        self.linstor.on('POST', '/v1/resource-groups', ctl.rg_created(name))
        self.linstor.on('PUT', RG, ctl.prop_refused(
            'rsc_grp', 'DrbdOptions/Net/protocol', 'D'))
        self.linstor.on('DELETE', RG, ctl.ok(obj='rsc_grp', op='delete'))
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.adapter.create_volume,
                                self.volume(1, vtype))
        self.assertIn('DrbdOptions/Net/protocol', str(err))
        self.assertEqual(['DELETE /v1/resource-groups/%s' % name],
                         self.sent('DELETE'))
        self.assertEqual([], [r for r in self.sent('POST')
                              if r.endswith('/spawn')])

    def test_refused_property_keeps_a_group_made_before(self):
        vtype = self.vtype(**{
            'linstor:property:DrbdOptions:Net:protocol': 'D'})
        self.linstor.on('GET', RG, ctl.rg_view(self.rg(vtype), {
            'place_count': 2, 'storage_pool_list': ['filethin']}))
        self.linstor.on('PUT', RG, ctl.prop_refused(
            'rsc_grp', 'DrbdOptions/Net/protocol', 'D'))
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.create_volume, self.volume(1, vtype))
        self.assertEqual([], self.sent('DELETE'))

    def test_removed_specs_leave_the_group(self):
        vtype = self.vtype()
        self.linstor.on('GET', RG, ctl.rg_view(self.rg(vtype), {
            'place_count': 2, 'storage_pool': 'filethin',
            'storage_pool_list': ['filethin'],
            'replicas_on_different': ['Aux/zone'],
            'diskless_on_remaining': True,
            'not_place_with_rsc_regex': 'backup-.*',
            'layer_stack': ['DRBD', 'STORAGE']}, props={
                'DrbdOptions/Net/protocol': 'C', 'Aux/owner': 'kept'}))
        self.linstor.on('PUT', RG, ctl.rg_modified(self.rg(vtype)))
        self.linstor.on('POST', RG + '/spawn', ctl.spawned('rg', 'x'))
        self.adapter.create_volume(self.volume(1, vtype))
        body = self.linstor.bodies('PUT', RG)[0]
        self.assertEqual({'replicas_on_different': [],
                          'diskless_on_remaining': False,
                          'not_place_with_rsc_regex': '^$',
                          'layer_stack': []}, body['select_filter'])
        self.assertEqual(['DrbdOptions/Net/protocol'], body['delete_props'])

    def test_groups_of_deleted_types_are_removed(self):
        kept = volume_types.create(self.ctx, 'kept-type', {})
        gone = self.vtype()
        gone_rg = self.rg(gone)
        used_gone = self.rg(self.vtype())
        self.linstor.on('GET', '/v1/view/storage-pools', [])
        self.linstor.on('GET', '/v1/view/resources', [])
        self.linstor.on('GET', RDS, [dict(ctl.rd_view('v1', used_gone),
                                          volume_definitions=[])])
        self.linstor.on('GET', '/v1/resource-groups', [
            {'name': 'DfltRscGrp', 'select_filter': {}},
            {'name': 'cinder-%s' % kept['id'],
             'description': 'cinder-flash volume type kept-type'},
            {'name': gone_rg, 'description': 'cinder-flash volume type x'},
            {'name': used_gone, 'description': 'cinder-flash volume type y'},
            {'name': 'cinder-%s' % gone.id, 'description': 'made by hand'}])
        self.linstor.on('DELETE', RG, ctl.ok(obj='rsc_grp', op='delete'))
        stats = self.adapter.get_volume_stats(refresh=True)
        self.assertEqual('linstor-unit', stats['volume_backend_name'])
        self.assertEqual(['DELETE /v1/resource-groups/%s' % gone_rg],
                         self.sent('DELETE'))


class CopyTestCase(fakes.ControllerTestCase):
    """Clone, or snapshot and restore where pools cannot clone."""

    def setUp(self):
        super().setUp()
        self.linstor.on('GET', RG, ctl.rg_view('rg', {
            'place_count': 2, 'storage_pool_list': ['filethin']}))
        self.src = self.volume()
        self.vol = self.volume()

    def test_pool_that_cannot_clone_copies_through_a_snapshot(self):
        src, dst = self.rd(self.src), self.rd(self.vol)
        temp = 'clone-%s' % self.vol.name_id
        self.linstor.on('POST', RDS + '/[^/]+/clone',
                        ctl.clone_refused(src, dst))
        self.linstor.on('POST', RDS + '/[^/]+/snapshots',
                        ctl.snapshot_made(src, temp))
        self.linstor.on('POST', RDS, ctl.rd_created(dst))
        self.linstor.on('POST', RDS + '/[^/]+/snapshot-restore-.*', ctl.ok())
        self.linstor.on('POST', RDS + '/[^/]+/autoplace', ctl.ok())
        self.linstor.on('DELETE', RDS + '/[^/]+/snapshots/[^/]+', ctl.ok())
        self.assertIsNone(self.adapter.create_cloned_volume(self.vol,
                                                            self.src))
        self.assertEqual([
            'POST %s/%s/clone' % (RDS, src),
            'POST %s/%s/snapshots' % (RDS, src),
            'POST %s' % RDS,
            'POST %s/%s/snapshot-restore-volume-definition/%s' % (
                RDS, src, temp),
            'POST %s/%s/snapshot-restore-resource/%s' % (RDS, src, temp),
            'POST %s/%s/autoplace' % (RDS, dst),
            'DELETE %s/%s/snapshots/%s' % (RDS, src, temp)],
            [r for r in self.sent() if not r.startswith('GET')])

    def test_failed_restore_removes_the_copy_and_the_snapshot(self):
        src, dst = self.rd(self.src), self.rd(self.vol)
        self.linstor.on('POST', RDS + '/[^/]+/clone',
                        ctl.clone_refused(src, dst))
        self.linstor.on('POST', RDS + '/[^/]+/snapshots',
                        ctl.snapshot_made(src, 'clone-x'))
        self.linstor.on('POST', RDS, ctl.rd_created(dst))
        self.linstor.on('POST', RDS + '/[^/]+/snapshot-restore-.*',
                        ctl.refused(980, 'Not enough free space'))
        self.linstor.on('DELETE', RDS + '/.*', ctl.ok(op='delete'))
        self.assertRaises(flash_exception.ArrayAPIError,
                          self.adapter.create_cloned_volume, self.vol,
                          self.src)
        temp = 'clone-%s' % self.vol.name_id
        self.assertEqual(['DELETE %s/%s' % (RDS, dst),
                          'DELETE %s/%s/snapshots/%s' % (RDS, src, temp)],
                         self.sent('DELETE'))

    def test_delete_removes_a_clone_snapshot_left_behind(self):
        src = self.rd(self.src)
        temp = 'clone-%s' % self.vol.name_id
        self.linstor.on('DELETE', RDS + '/[^/]+', ctl.Reply(500, [ctl.entry(
            'error', 514, "Cannot delete resource definition '%s' because "
            'it has snapshots.' % src, 'rsc_dfn', 'delete')]),
            ctl.deleted(src))
        self.linstor.on('GET', '/v1/view/snapshots', [
            {'name': temp, 'resource_name': src}])
        self.linstor.on('DELETE', RDS + '/[^/]+/snapshots/[^/]+', ctl.ok())
        self.adapter.delete_volume(self.src)
        self.assertEqual(['DELETE %s/%s' % (RDS, src),
                          'DELETE %s/%s/snapshots/%s' % (RDS, src, temp),
                          'DELETE %s/%s' % (RDS, src)], self.sent('DELETE'))

    def test_delete_keeps_other_snapshots_and_says_why(self):
        self.linstor.on('DELETE', RDS + '/[^/]+', ctl.Reply(500, [ctl.entry(
            'error', 514, 'Cannot delete resource definition because it '
            'has snapshots.', 'rsc_dfn', 'delete')]))
        self.linstor.on('GET', '/v1/view/snapshots', [
            {'name': 'nightly', 'resource_name': self.rd(self.src)}])
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.adapter.delete_volume, self.src)
        self.assertIn('has snapshots', str(err))
        self.assertEqual(1, len(self.sent('DELETE')))

    def test_pool_that_can_clone_uses_the_clone_api(self):
        src, dst = self.rd(self.src), self.rd(self.vol)
        self.linstor.on('POST', RDS + '/[^/]+/clone',
                        ctl.clone_started(src, dst))
        self.linstor.on('GET', RDS + '/[^/]+/clone/[^/]+',
                        {'status': 'CLONING'}, {'status': 'COMPLETE'})
        self.linstor.on('POST', RDS + '/[^/]+/autoplace', ctl.ok())
        self.adapter.create_cloned_volume(self.vol, self.src)
        self.assertEqual(['POST %s/%s/clone' % (RDS, src),
                          'POST %s/%s/autoplace' % (RDS, dst)],
                         self.sent('POST'))


class StatsManageTestCase(fakes.ControllerTestCase):
    """Sizes come from volume definitions; manageable volumes and
    snapshots.
    """

    def test_provisioned_space_comes_from_volume_definitions(self):
        self.linstor.on('GET', '/v1/view/storage-pools', [
            ctl.pool_view('stlt1'), ctl.pool_view('stlt2')])
        self.linstor.on('GET', '/v1/view/resources', [
            ctl.resource_view('v1', n) for n in ('stlt1', 'stlt2')] + [
            ctl.resource_view('v2', 'stlt1')])
        self.linstor.on('GET', RDS, [
            dict(ctl.rd_view('v1'), volume_definitions=[
                ctl.vd_view(3 * GIB)]),
            dict(ctl.rd_view('v2'), volume_definitions=[
                ctl.vd_view(2 * GIB)])])
        self.linstor.on('GET', '/v1/resource-groups', [])
        stats = self.adapter.get_volume_stats(refresh=True)
        pool = stats['pools'][0]
        self.assertEqual(('filethin', 'up', 5.0), (
            pool['pool_name'], pool['backend_state'],
            pool['provisioned_capacity_gb']))

    def test_manage_reads_the_volume_definitions(self):
        self.linstor.on('GET', RDS + '/legacy', ctl.rd_view('legacy'))
        self.linstor.on('GET', RDS + '/legacy/volume-definitions',
                        [ctl.vd_view(1536 * 1024)])
        self.linstor.on('GET', RG, ctl.rg_view('rg', {
            'place_count': 2, 'storage_pool_list': ['filethin']}))
        self.linstor.on('PUT', RDS + '/legacy', ctl.ok())
        self.linstor.on('PUT', RDS + '/legacy/volume-definitions/0',
                        ctl.ok())
        vol = self.volume()
        ref = {'source-name': 'legacy'}
        self.assertEqual(2, self.adapter.manage_existing_get_size(vol, ref))
        self.assertEqual({'provider_id': 'legacy'},
                         self.adapter.manage_existing(vol, ref))
        self.assertEqual([{'size_kib': 2 * GIB}], self.linstor.bodies(
            'PUT', RDS + '/legacy/volume-definitions/0'))

    def test_manageable_volumes(self):
        known = self.volume()
        self.linstor.on('GET', '/v1/view/resources', [dict(
            ctl.resource_view('busy', 'stlt1'), state={'in_use': True})])
        self.linstor.on('GET', RDS, [
            dict(ctl.rd_view(name), volume_definitions=vds)
            for name, vds in (
                ('free', [ctl.vd_view(GIB + 1)]),
                ('busy', [ctl.vd_view(GIB)]),
                ('two', [ctl.vd_view(GIB), ctl.vd_view(GIB, 1)]),
                (self.rd(known), [ctl.vd_view(GIB)]))])
        rows = {r['reference']['source-name']: r
                for r in self.adapter.get_manageable_volumes(
                    [known], None, 100, 0, ['size'], ['asc'])}
        self.assertEqual((True, 2), (rows['free']['safe_to_manage'],
                                     rows['free']['size']))
        self.assertEqual('in use', rows['busy']['reason_not_safe'])
        self.assertIn('2 volumes', rows['two']['reason_not_safe'])
        self.assertEqual(known.id, rows[self.rd(known)]['cinder_id'])
        self.assertFalse(rows[self.rd(known)]['safe_to_manage'])

    def test_manageable_and_managed_snapshots(self):
        vol = self.volume()
        snaps = [{'name': name, 'resource_name': self.rd(vol),
                  'flags': flags, 'nodes': ['stlt1'],
                  'volume_definitions': [{'volume_number': 0,
                                          'size_kib': GIB}]}
                 for name, flags in (('nightly', ['SUCCESSFUL']),
                                     ('partial', []))]
        self.linstor.on('GET', '/v1/view/snapshots', snaps)
        rows = {r['reference']['source-name']: r
                for r in self.adapter.get_manageable_snapshots(
                    [], None, 100, 0, ['size'], ['asc'])}
        self.assertTrue(rows['nightly']['safe_to_manage'])
        self.assertEqual({'source-name': self.rd(vol)},
                         rows['nightly']['source_reference'])
        self.assertFalse(rows['partial']['safe_to_manage'])
        snap = self.snapshot(vol)
        ref = {'source-name': 'nightly'}
        self.assertEqual(1, self.adapter.manage_existing_snapshot_get_size(
            snap, ref))
        self.assertEqual({'provider_id': 'nightly'},
                         self.adapter.manage_existing_snapshot(snap, ref))
        self.assertRaises(exception.ManageExistingInvalidReference,
                          self.adapter.manage_existing_snapshot, snap,
                          {'source-name': 'other'})


class AttachTestCase(fakes.ControllerTestCase):
    """The device comes from layer data; detach removes the replica
    attach made, and nothing else.
    """

    def setUp(self):
        super().setUp()
        self.linstor.on('GET', RDS + '/[^/]+', ctl.rd_view('rd'))
        self.linstor.on('PUT', RDS + '/[^/]+', ctl.ok())

    def attach(self, vol, node, *views):
        self.linstor.on('GET', '/v1/view/resources', *views)
        self.linstor.on('POST', RDS + '/[^/]+/resources/[^/]+/make-'
                        'available', ctl.made_available(self.rd(vol), node))
        self.linstor.on('PUT', RDS + '/[^/]+/resources/[^/]+', ctl.ok(
            obj='rsc'))
        return self.adapter.initialize_connection(vol, {'host': node})

    def test_storage_only_volume_attaches_its_own_device(self):
        vol = self.volume()
        info = self.attach(vol, 'stlt1', [], [
            ctl.resource_view(self.rd(vol), 'stlt1')])
        self.assertEqual({'driver_volume_type': 'local',
                          'data': {'device_path': '/dev/loop1'}}, info)
        # The intent comes before the create; it goes after the mark.
        intent = 'Aux/cinder-flash/attaching/stlt1'
        self.assertEqual([
            {'override_props': {intent: vol.id}},
            {'override_props': {'Aux/cinder-flash/attached-for': vol.id}},
            {'delete_props': [intent]}],
            self.linstor.bodies('PUT', RDS + '/.*'))
        self.assertEqual([
            'GET /v1/view/resources',
            'PUT %s/%s' % (RDS, self.rd(vol)),
            'POST %s/%s/resources/stlt1/make-available' % (RDS, self.rd(vol)),
            'PUT %s/%s/resources/stlt1' % (RDS, self.rd(vol)),
            'PUT %s/%s' % (RDS, self.rd(vol)),
            'GET /v1/view/resources'], self.sent())

    def test_drbd_volume_attaches_the_by_res_link(self):
        vol = self.volume()
        view = ctl.resource_view(self.rd(vol), 'comp-1', drbd_minor=1000)
        info = self.attach(vol, 'comp-1', [view])
        self.assertEqual('/dev/drbd/by-res/%s/0' % self.rd(vol),
                         info['data']['device_path'])
        # The resource was there already: it is not marked as ours.
        self.assertEqual([], self.sent('PUT'))

    def test_detach_removes_the_diskful_replica_attach_made(self):
        vol = self.volume(vtype=self.vtype(**{
            'linstor:allow_remote_access': 'false'}))
        mark = {'Aux/cinder-flash/attached-for': vol.id}
        replicas = [ctl.resource_view(self.rd(vol), n) for n in ('a', 'b')]
        self.linstor.on('GET', '/v1/view/resources', replicas + [
            ctl.resource_view(self.rd(vol), 'comp-1', props=mark)])
        self.linstor.on('DELETE', RDS + '/.*', ctl.ok(op='delete'))
        self.adapter.terminate_connection(vol, {'host': 'comp-1'})
        self.assertEqual(['DELETE %s/%s/resources/comp-1' % (
            RDS, self.rd(vol))], self.sent('DELETE'))

    def test_detach_keeps_a_replica_the_volume_needs(self):
        vol = self.volume()
        mark = {'Aux/cinder-flash/attached-for': vol.id}
        self.linstor.on('GET', '/v1/view/resources', [
            ctl.resource_view(self.rd(vol), 'a'),
            ctl.resource_view(self.rd(vol), 'comp-1', props=mark)])
        self.linstor.on('PUT', RDS + '/.*', ctl.ok(obj='rsc'))
        self.adapter.terminate_connection(vol, {'host': 'comp-1'})
        self.assertEqual([], self.sent('DELETE'))
        self.assertEqual([{'override_props': {}, 'delete_props': [
            'Aux/cinder-flash/attached-for']}],
            self.linstor.bodies('PUT', RDS + '/.*'))

    def test_detach_leaves_resources_attach_did_not_make(self):
        vol = self.volume()
        self.linstor.on('GET', '/v1/view/resources', [
            ctl.resource_view(self.rd(vol), n) for n in ('a', 'b')] + [
            ctl.resource_view(self.rd(vol), 'comp-1',
                              flags=['DISKLESS', 'DRBD_DISKLESS'])])
        self.adapter.terminate_connection(vol, {'host': 'comp-1'})
        self.adapter.terminate_connection(vol, None)
        self.assertEqual([], self.sent('DELETE'))


class ISCSIExportTestCase(fakes.ControllerTestCase):
    """Cinder keeps only provider_location and provider_auth."""

    def test_export_model_update(self):
        conf = fakes.make_conf(self, target_helper='tgtadm')
        drv = linstor_driver.LinstorISCSIDriver(configuration=conf)
        drv.adapter = mock.Mock(local_node='cinder-1')
        drv.adapter.make_local.return_value = '/dev/drbd/by-res/v/0'
        drv.target_driver = mock.Mock()
        drv.target_driver.create_export.return_value = {
            'location': '127.0.0.1:3260,1 iqn.x 0', 'auth': 'CHAP u p'}
        vol = self.volume()
        vol.volume_attachment = cinder_objects.VolumeAttachmentList(
            objects=[])
        self.assertEqual({'provider_location': '127.0.0.1:3260,1 iqn.x 0',
                          'provider_auth': 'CHAP u p'},
                         drv.create_export(self.ctx, vol, {'host': 'c'}))
