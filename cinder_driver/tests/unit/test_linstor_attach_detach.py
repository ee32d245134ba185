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

from cinder_driver.common import exception as flash_exception
from cinder_driver.linstor import attach
from cinder_driver.linstor import driver as linstor_driver
from cinder_driver.tests.unit import linstor_fakes as fakes


def attached(host):
    return objects.VolumeAttachment(attach_status='attached',
                                    attached_host=host,
                                    connector={'host': host})


MARK = 'Aux/cinder-flash/attached-for'


class AttachTestCase(fakes.AdapterTestCase):

    def setUp(self):
        super().setUp()
        self.client.resource_definition.return_value = {'props': {}}

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
            self.rd(vol), 'comp-1', {MARK: vol.id})
        self.client.reset_mock()
        self.adapter.initialize_connection(vol, {'host': 'comp-1'})
        self.client.modify_resource.assert_not_called()
        self.client.modify_resource_definition.assert_not_called()

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

    def test_attach_to_a_host_linstor_does_not_know(self):
        # LINSTOR answers a resource view filtered by a node it does not
        # know with 404: the attach stops there, before its intent or a
        # create, and says what the operator must do.
        self.client.resource.side_effect = fakes.refusal(
            300, "Node 'comp-9' not found.", status=404)
        e = self.assertRaises(exception.VolumeBackendAPIException,
                              self.adapter.initialize_connection,
                              self.volume(), {'host': 'comp-9'})
        self.assertIn('comp-9: it is not a LINSTOR node', str(e))
        self.assertIn("Node 'comp-9' not found.", str(e))
        self.client.modify_resource_definition.assert_not_called()
        self.client.make_available.assert_not_called()
        # Any other refusal of the lookup is LINSTOR's own.
        self.client.resource.side_effect = fakes.refusal(998, 'boom')
        e = self.assertRaises(flash_exception.ArrayAPIError,
                              self.adapter.initialize_connection,
                              self.volume(), {'host': 'comp-1'})
        self.assertNotIn('not a LINSTOR node', str(e))

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


class CrashWindowTestCase(fakes.AdapterTestCase):
    """A service killed anywhere in an attach or a detach leaves nothing
    that another service's retry or detach does not finish or remove,
    and nothing that was there before is ever claimed.
    """

    NODE = 'comp-1.example-dc.org'
    INTENT = 'Aux/cinder-flash/attaching/comp-1.example-dc.org'

    def setUp(self):
        super().setUp()
        self.vol = self.volume()
        self.name = self.rd(self.vol)
        self.props = {}
        self.client.resource_definition.side_effect = lambda name: {
            'name': name, 'props': dict(self.props)}

    def view(self, props=None, flags=('DRBD_DISKLESS',), node=None):
        return {'node_name': node or self.NODE, 'flags': list(flags),
                'props': dict(props or {}), 'volumes': [{
                    'volume_number': 0,
                    'layer_data_list': [{'type': 'DRBD'}]}]}

    def forgot(self, *keys):
        return mock.call.modify_resource_definition(
            self.name, {'delete_props': list(keys)})

    def writes(self):
        """The client's mutations, in order."""
        return [c for c in self.client.mock_calls if c[0] in (
            'modify_resource_definition', 'make_available',
            'modify_resource', 'delete_resource')]

    def attach(self):
        return self.adapter.initialize_connection(self.vol,
                                                  {'host': self.NODE})

    def test_intent_is_recorded_before_the_create_and_dropped_after(self):
        self.client.resource.side_effect = [None, self.view()]
        self.attach()
        self.assertEqual([
            mock.call.modify_resource_definition(self.name, {
                'override_props': {self.INTENT: self.vol.id}}),
            mock.call.make_available(self.name, self.NODE, diskful=False),
            mock.call.modify_resource(self.name, self.NODE,
                                      {MARK: self.vol.id}),
            self.forgot(self.INTENT)], self.writes())

    def test_retry_marks_a_resource_made_under_its_intent(self):
        # Killed between make-available and the mark.
        self.props = {self.INTENT: self.vol.id}
        self.client.resource.return_value = self.view()
        self.attach()
        self.assertEqual([
            mock.call.make_available(self.name, self.NODE, diskful=False),
            mock.call.modify_resource(self.name, self.NODE,
                                      {MARK: self.vol.id}),
            self.forgot(self.INTENT)], self.writes())

    def test_retry_after_the_mark_drops_the_intent(self):
        # Killed between the mark and dropping the intent.
        self.props = {self.INTENT: self.vol.id}
        self.client.resource.return_value = self.view({MARK: self.vol.id})
        self.attach()
        self.client.modify_resource.assert_not_called()
        self.assertEqual([
            mock.call.make_available(self.name, self.NODE, diskful=False),
            self.forgot(self.INTENT)], self.writes())

    def test_retry_before_the_create_records_the_intent_again(self):
        # Killed between the intent and make-available.
        self.props = {self.INTENT: self.vol.id}
        self.client.resource.side_effect = [None, self.view()]
        self.attach()
        self.assertEqual(4, len(self.writes()))
        self.assertEqual(self.forgot(self.INTENT), self.writes()[-1])

    def test_a_resource_that_was_there_is_never_claimed(self):
        other_node = 'Aux/cinder-flash/attaching/comp-2'
        for props in ({}, {other_node: self.vol.id},
                      {self.INTENT: 'another-volume'}):
            for flags in ((), ('DRBD_DISKLESS',)):
                self.client.reset_mock()
                self.props = props
                self.client.resource.return_value = self.view(flags=flags)
                self.attach()
                self.client.modify_resource.assert_not_called()
                self.client.modify_resource_definition.assert_not_called()
                self.client.resources.return_value = [
                    self.view(flags=flags),
                    self.view(flags=(), node='sat-1')]
                self.adapter.terminate_connection(self.vol,
                                                  {'host': self.NODE})
                self.client.delete_resource.assert_not_called()
                self.client.modify_resource.assert_not_called()
                self.client.modify_resource_definition.assert_not_called()

    def test_refused_create_drops_the_intent(self):
        self.client.resource.return_value = None
        self.client.make_available.side_effect = \
            flash_exception.ArrayAPIError(array='LINSTOR', method='POST',
                                          path='/x', reason='no node')
        self.assertRaises(flash_exception.ArrayAPIError, self.attach)
        self.assertEqual(self.forgot(self.INTENT), self.writes()[-1])
        self.client.modify_resource.assert_not_called()

    def test_detach_removes_a_resource_made_under_its_intent(self):
        self.props = {self.INTENT: self.vol.id}
        self.client.resources.return_value = [
            self.view(), self.view(flags=(), node='sat-1')]
        self.adapter.terminate_connection(self.vol, {'host': self.NODE})
        self.assertEqual([
            mock.call.delete_resource(self.name, self.NODE),
            self.forgot(self.INTENT)], self.writes())

    def test_detach_keeps_a_needed_replica_made_under_its_intent(self):
        self.props = {self.INTENT: self.vol.id}
        self.client.resources.return_value = [
            self.view(flags=()), self.view(flags=(), node='sat-1')]
        self.adapter.terminate_connection(self.vol, {'host': self.NODE})
        self.assertEqual([self.forgot(self.INTENT)], self.writes())

    def test_detach_drops_an_intent_whose_resource_is_gone(self):
        # Killed before make-available, or after the detach's delete.
        self.props = {self.INTENT: self.vol.id,
                      'Aux/cinder-flash/attaching/comp-2': self.vol.id}
        self.client.resources.return_value = [
            self.view(flags=(), node='sat-1')]
        self.adapter.terminate_connection(self.vol, {'host': self.NODE})
        self.assertEqual([self.forgot(self.INTENT)], self.writes())

    def test_force_detach_removes_every_resource_and_intent_of_attach(self):
        self.props = {self.INTENT: self.vol.id,
                      'Aux/cinder-flash/attaching/comp-2': self.vol.id,
                      'Aux/cinder-flash/attaching/sat-1': 'another'}
        self.client.resources.return_value = [
            self.view(), self.view(node='comp-2'),
            self.view(node='sat-1', flags=())]
        self.adapter.terminate_connection(self.vol, None)
        self.assertEqual([
            mock.call.delete_resource(self.name, self.NODE),
            mock.call.delete_resource(self.name, 'comp-2'),
            self.forgot(self.INTENT,
                        'Aux/cinder-flash/attaching/comp-2')], self.writes())

    def test_intent_keys(self):
        self.assertEqual(self.INTENT, attach.intent_key(self.NODE.upper()))
        long_name = '.'.join(['a' * 63] * 4)[:253]
        key = attach.intent_key(long_name)
        self.assertLessEqual(len(key), attach.KEY_MAX)
        self.assertTrue(key.startswith('Aux/cinder-flash/attaching/sha256-'))
        self.assertEqual(key, attach.intent_key(long_name.upper()))


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
