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

"""LINSTOR adapter and drivers: attach and detach."""

from unittest import mock

from cinder import exception
from cinder import objects

from cinder_driver.linstor import driver as linstor_driver
from cinder_driver.tests.unit import linstor_fakes as fakes


def attached(host):
    return objects.VolumeAttachment(attach_status='attached',
                                    attached_host=host,
                                    connector={'host': host})


class AttachTestCase(fakes.AdapterTestCase):

    def test_attach_marks_only_a_resource_it_made(self):
        vol = self.volume()
        view = {'node_name': 'comp-1', 'volumes': [{
            'volume_number': 0, 'layer_data_list': [{'type': 'DRBD'}]}]}
        self.client.resource.side_effect = [None, view, view, view]
        info = self.adapter.initialize_connection(vol, {'host': 'comp-1'})
        self.assertEqual({'driver_volume_type': 'local', 'data': {
            'device_path': '/dev/drbd/by-res/%s/0' % self.rd(vol)}}, info)
        self.client.make_available.assert_called_once_with(
            self.rd(vol), 'comp-1', diskful=False)
        self.client.modify_resource.assert_called_once_with(
            self.rd(vol), 'comp-1',
            {'Aux/cinder-flash/attached-for': vol.id})
        self.client.reset_mock()
        self.adapter.initialize_connection(vol, {'host': 'comp-1'})
        self.client.modify_resource.assert_not_called()

    def test_no_remote_access_asks_for_a_disk(self):
        vol = self.volume(vtype=self.vtype(
            **{'linstor:allow_remote_access': 'False'}))
        self.client.resource.return_value = {'volumes': [{
            'volume_number': 0, 'device_path': '/dev/vg/x'}]}
        self.adapter.initialize_connection(vol, {'host': 'comp-1'})
        self.client.make_available.assert_called_once_with(
            self.rd(vol), 'comp-1', diskful=True)

    def test_resource_without_a_device_is_an_error(self):
        self.client.resource.return_value = {'volumes': [{
            'volume_number': 0, 'layer_data_list': [{'type': 'STORAGE',
                                                     'data': {}}]}]}
        self.assertRaises(exception.VolumeBackendAPIException,
                          self.adapter.initialize_connection,
                          self.volume(), {'host': 'comp-1'})

    def test_connector_without_host(self):
        self.assertRaises(exception.InvalidConnectorException,
                          self.adapter.initialize_connection, self.volume(),
                          {'initiator': 'iqn.x'})

    def test_detach_removes_only_our_diskless_resources(self):
        vol = self.volume()
        name = self.rd(vol)
        mine = {'node_name': 'comp-1', 'flags': ['DISKLESS',
                                                 'DRBD_DISKLESS'],
                'props': {'Aux/cinder-flash/attached-for': vol.id}}
        for rows, deleted in (([mine], True),
                              ([dict(mine, props={})], False),
                              ([dict(mine, flags=[])], False)):
            self.client.reset_mock()
            self.client.resources.return_value = rows
            self.adapter.terminate_connection(vol, {'host': 'comp-1'})
            self.assertEqual(deleted, self.client.delete_resource.called)
            if deleted:
                self.client.delete_resource.assert_called_once_with(
                    name, 'comp-1')

    def test_second_attachment_on_a_host_keeps_the_device(self):
        vol = self.volume()
        vol.volume_attachment = objects.VolumeAttachmentList(
            objects=[attached('comp-1'), attached('comp-1')])
        self.adapter.terminate_connection(vol, {'host': 'comp-1'})
        self.client.resources.assert_not_called()

    def test_multiattach_two_primaries(self):
        vol = self.volume(multiattach=True)
        vol.volume_attachment = objects.VolumeAttachmentList(
            objects=[attached('comp-2')])
        self.client.resource.return_value = {'volumes': [{
            'volume_number': 0, 'layer_data_list': [{'type': 'DRBD'}]}]}
        self.adapter.initialize_connection(vol, {'host': 'comp-1'})
        self.client.modify_resource_definition.assert_called_once_with(
            self.rd(vol), {'override_props': {
                'DrbdOptions/Net/allow-two-primaries': 'yes'}})
        self.client.reset_mock()
        self.client.resources.return_value = []
        vol.volume_attachment = objects.VolumeAttachmentList(
            objects=[attached('comp-2'), attached('comp-1')])
        self.adapter.terminate_connection(vol, {'host': 'comp-1'})
        self.client.modify_resource_definition.assert_called_once_with(
            self.rd(vol), {'delete_props': [
                'DrbdOptions/Net/allow-two-primaries']})

    def test_force_detach(self):
        vol = self.volume()
        self.client.resources.return_value = [
            {'node_name': 'a', 'flags': ['DRBD_DISKLESS'],
             'props': {'Aux/cinder-flash/attached-for': vol.id}},
            {'node_name': 'b', 'flags': [], 'props': {}}]
        self.adapter.terminate_connection(vol, None)
        self.client.delete_resource.assert_called_once_with(self.rd(vol),
                                                            'a')


class ISCSIDriverTestCase(fakes.AdapterTestCase):

    def test_exports_the_local_device(self):
        conf = fakes.make_conf(self, target_helper='tgtadm')
        drv = linstor_driver.LinstorISCSIDriver(configuration=conf)
        self.assertEqual('iSCSI', drv.PROTOCOL)
        drv.adapter = mock.Mock(local_node='cinder-1')
        drv.adapter.make_local.return_value = '/dev/drbd/by-res/v/0'
        drv.adapter.remote_access.return_value = False
        drv.target_driver = mock.Mock()
        drv.target_driver.create_export.return_value = {'location': 'l',
                                                        'auth': None}
        vol = self.volume()
        self.assertEqual({'provider_location': 'l', 'provider_auth': None},
                         drv.create_export(self.ctx, vol, {'host': 'c'}))
        drv.adapter.make_local.assert_called_once_with(vol, 'cinder-1',
                                                       remote_ok=False)
        drv.target_driver.create_export.assert_called_once_with(
            self.ctx, vol, '/dev/drbd/by-res/v/0')
        drv.remove_export(self.ctx, vol)
        drv.adapter.release_local.assert_called_once_with(vol, 'cinder-1')
        drv.initialize_connection(vol, {'host': 'comp-1'})
        drv.target_driver.initialize_connection.assert_called_once_with(
            vol, {'host': 'comp-1'})
