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

"""LINSTOR driver: DRBD and iSCSI attach and detach."""

from unittest import mock

from cinder import exception
from cinder import objects

from cinder_driver.common import exception as flash_exception
from cinder_driver.linstor import attach
from cinder_driver.linstor import driver as linstor_driver
from cinder_driver.tests.functional import linstor_driver_base as base


def attachment(host, status='attached'):
    return objects.VolumeAttachment(
        attach_status=status, attached_host=host,
        connector={'host': host})


class LinstorDrbdAttachTestCase(base.LinstorDriverTestCase):

    def attachable(self, vol, *hosts):
        vol.volume_attachment = objects.VolumeAttachmentList(
            objects=[attachment(h) for h in hosts])
        return vol

    def expected_device(self, vol, node):
        """The device LINSTOR's layer data names for ``node``."""
        _s, rows = self.linstor('GET', '/v1/view/resources', params={
            'resources': 'volume-%s' % vol.name_id, 'nodes': node})
        volume = rows[0]['volumes'][0]
        if volume['layer_data_list'][0]['type'] == 'DRBD':
            return '/dev/drbd/by-res/volume-%s/0' % vol.name_id
        return volume['device_path']

    def test_attach_on_a_replica_node_opens_its_device(self):
        vol = self.attachable(self.create())
        holder = self.diskful(vol)[0]
        info = self.driver.initialize_connection(vol, {'host': holder})
        self.assertEqual({'driver_volume_type': 'local', 'data': {
            'device_path': self.expected_device(vol, holder)}}, info)
        if self.target.layers == ['storage']:
            self.assertFalse(info['data']['device_path'].startswith(
                '/dev/drbd'))
        self.driver.terminate_connection(vol, {'host': holder})
        self.assertIn(holder, self.diskful(vol))

    def test_diskless_attach_and_detach_on_a_client_node(self):
        client = self.need_client_node()
        vol = self.attachable(self.create())
        info, calls = self.count(self.driver.initialize_connection, vol,
                                 {'host': client})
        self.assertEqual({'driver_volume_type': 'local',
                          'data': {'device_path': '/dev/drbd/by-res/'
                                   'volume-%s/0' % vol.name_id}}, info)
        # Is there a resource, record the intent, make it available,
        # mark it as the attach's own, drop the intent, read its device.
        self.assertEqual(6, len(calls))
        self.assertTrue(calls[2].endswith('/make-available'))
        self.assertNotIn(attach.intent_key(client), self.rd(vol)['props'])
        self.assertEqual((True, 'DfltDisklessStorPool'),
                         self.replicas(vol)[client])
        # The client reads what a replica holds.
        self.write(vol, self.diskful(vol)[0], 'write -P 0x5a 0 64k')
        self.assertTrue(self.pattern_at(vol, client, 0, 65536, 0x5a))
        # Attaching again is idempotent.
        self.driver.initialize_connection(vol, {'host': client})
        self.driver.terminate_connection(vol, {'host': client})
        self.assertNotIn(client, self.replicas(vol))
        self.assertEqual(2, len(self.diskful(vol)))

    def test_detach_keeps_resources_not_ours(self):
        client = self.need_client_node()
        vol = self.attachable(self.create())
        status, _body = self.linstor(
            'POST', '/v1/resource-definitions/volume-%s/resources' %
            vol.name_id, [{'resource': {'node_name': client,
                                        'flags': ['DRBD_DISKLESS']}}])
        self.assertEqual(201, status)
        self.driver.terminate_connection(vol, {'host': client})
        self.assertIn(client, self.replicas(vol))

    def test_no_remote_access_attaches_diskful_and_detach_removes_it(self):
        self.need_nodes(2)
        vtype = self.volume_type(**{'linstor:allow_remote_access': 'false',
                                    'linstor:redundancy': '1'})
        vol = self.attachable(self.create(vtype=vtype))
        other = [n for n in self.target.nodes
                 if n not in self.diskful(vol)][0]
        self.driver.initialize_connection(vol, {'host': other})
        self.assertEqual((False, self.pool), self.replicas(vol)[other])
        self.driver.terminate_connection(vol, {'host': other})
        self.assertNotIn(other, self.replicas(vol))
        self.assertEqual(1, len(self.diskful(vol)))

    def test_multiattach_allows_two_primaries_while_shared(self):
        client = self.need_client_node()
        vol = self.create()
        vol.multiattach = True
        first = self.diskful(vol)[0]
        self.attachable(vol, first)
        self.driver.initialize_connection(vol, {'host': client})
        props = self.rd(vol)['props']
        self.assertEqual('yes', props['DrbdOptions/Net/allow-two-primaries'])
        self.attachable(vol, first, client)
        self.driver.terminate_connection(vol, {'host': client})
        self.assertNotIn('DrbdOptions/Net/allow-two-primaries',
                         self.rd(vol)['props'])

    def test_force_detach_removes_what_attach_made(self):
        client = self.need_client_node()
        vol = self.attachable(self.create())
        self.driver.initialize_connection(vol, {'host': client})
        self.driver.terminate_connection(vol, None)
        self.assertNotIn(client, self.replicas(vol))
        self.assertEqual(2, len(self.diskful(vol)))


class Killed(BaseException):
    """The service dies here: nothing of its own runs after it."""


class LinstorAttachCrashTestCase(base.LinstorDriverTestCase):
    """A service killed in the middle of an attach: a second service
    finishes the attach, or the detach removes what the dead one made,
    and nothing else.

    The attaching host's name has dots and dashes, as a host name may:
    the intent's key holds it.
    """

    CLIENT = 'cft-client.example-dc.org'
    ARRAY_ARGS = ['--linstor-local-node', CLIENT]

    def need_client_node(self):
        super().need_client_node()
        return self.CLIENT

    def node_without_pool(self):
        """A node without a storage pool: the client node of the
        reference array; on a real controller, one registered for the
        test (it never comes online) and removed after it.
        """
        if self.target.real:
            status, body = self.linstor('POST', '/v1/nodes', {
                'name': self.CLIENT, 'type': 'SATELLITE',
                'net_interfaces': [{
                    'name': 'default', 'address': '127.0.0.2',
                    'satellite_port': 9, 'satellite_encryption_type':
                    'PLAIN'}]})
            self.assertIn(status, (200, 201), body)
            self.addCleanup(self.linstor, 'DELETE',
                            '/v1/nodes/%s' % self.CLIENT)
        return self.CLIENT

    def attachable(self, vol):
        vol.volume_attachment = objects.VolumeAttachmentList(objects=[])
        return vol

    def resource_props(self, vol, node):
        _s, rows = self.linstor('GET', '/v1/view/resources', params={
            'resources': 'volume-%s' % vol.name_id, 'nodes': node})
        return rows[0].get('props') or {} if rows else None

    def killed_at(self, step, vol, node):
        """Attach with the driver's service dying as it calls ``step``."""
        dead = self.driver
        with mock.patch.object(dead.adapter.client, step,
                               side_effect=Killed()):
            self.assertRaises(Killed, dead.initialize_connection, vol,
                              {'host': node})
        return self.make_driver()

    def assert_as_before(self, vol, replicas, props):
        self.assertEqual(replicas, self.replicas(vol))
        self.assertEqual(props, self.rd(vol)['props'])

    def test_killed_before_the_mark_retry_and_detach(self):
        client = self.need_client_node()
        vol = self.attachable(self.create())
        replicas, props = self.replicas(vol), self.rd(vol)['props']
        survivor = self.killed_at('modify_resource', vol, client)
        # What the dead service left: an unmarked client, and its intent.
        self.assertEqual({}, {k: v for k, v in self.resource_props(
            vol, client).items() if k.startswith('Aux/')})
        self.assertEqual(vol.id, self.rd(vol)['props'][
            attach.intent_key(client)])
        info = survivor.initialize_connection(vol, {'host': client})
        self.assertEqual('/dev/drbd/by-res/volume-%s/0' % vol.name_id,
                         info['data']['device_path'])
        self.assertEqual(vol.id, self.resource_props(vol, client)[
            attach.MANAGED_BY])
        self.assertNotIn(attach.intent_key(client), self.rd(vol)['props'])
        survivor.terminate_connection(vol, {'host': client})
        self.assert_as_before(vol, replicas, props)

    def test_killed_before_the_mark_detach_without_retry(self):
        client = self.need_client_node()
        vol = self.attachable(self.create())
        replicas, props = self.replicas(vol), self.rd(vol)['props']
        survivor = self.killed_at('modify_resource', vol, client)
        survivor.terminate_connection(vol, {'host': client})
        self.assert_as_before(vol, replicas, props)

    def test_killed_before_the_create_retry_and_detach(self):
        client = self.need_client_node()
        vol = self.attachable(self.create())
        replicas, props = self.replicas(vol), self.rd(vol)['props']
        survivor = self.killed_at('make_available', vol, client)
        self.assertEqual(replicas, self.replicas(vol))
        survivor.initialize_connection(vol, {'host': client})
        self.assertIn(client, self.replicas(vol))
        survivor.terminate_connection(vol, {'host': client})
        self.assert_as_before(vol, replicas, props)
        survivor = self.killed_at('make_available', vol, client)
        survivor.terminate_connection(vol, {'host': client})
        self.assert_as_before(vol, replicas, props)

    def test_killed_before_the_mark_of_a_disk_retry_and_detach(self):
        """A replica made for an attach without remote access: the same
        windows on a node with the pool (what a controller whose nodes
        all have storage offers).
        """
        self.need_nodes(2)
        vtype = self.volume_type(**{'linstor:allow_remote_access': 'false',
                                    'linstor:redundancy': '1'})
        vol = self.attachable(self.create(vtype=vtype))
        replicas, props = self.replicas(vol), self.rd(vol)['props']
        node = [n for n in self.target.nodes if n not in replicas][0]
        survivor = self.killed_at('modify_resource', vol, node)
        self.assertEqual((False, self.pool), self.replicas(vol)[node])
        survivor.initialize_connection(vol, {'host': node})
        self.assertEqual(vol.id, self.resource_props(vol, node)[
            attach.MANAGED_BY])
        survivor.terminate_connection(vol, {'host': node})
        self.assert_as_before(vol, replicas, props)
        # The same death, and a detach without a retry.
        survivor = self.killed_at('modify_resource', vol, node)
        survivor.terminate_connection(vol, {'host': node})
        self.assert_as_before(vol, replicas, props)

    def test_killed_before_the_mark_never_claims_a_replica(self):
        """A replica that was there before stays after a crash, a
        retry and a detach on its node.
        """
        vol = self.attachable(self.create())
        holder = self.diskful(vol)[0]
        replicas, props = self.replicas(vol), self.rd(vol)['props']
        survivor = self.killed_at('make_available', vol, holder)
        self.assert_as_before(vol, replicas, props)
        survivor.initialize_connection(vol, {'host': holder})
        survivor.terminate_connection(vol, {'host': holder})
        survivor.terminate_connection(vol, None)
        self.assert_as_before(vol, replicas, props)

    def test_refused_create_leaves_no_intent(self):
        """The controller takes the intent's key (a host name with dots
        and dashes), refuses a disk where there is no pool, and the
        intent goes again.
        """
        node = self.node_without_pool()
        vtype = self.volume_type(**{'linstor:allow_remote_access': 'false'})
        vol = self.attachable(self.create(vtype=vtype))
        replicas, props = self.replicas(vol), self.rd(vol)['props']
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.driver.initialize_connection, vol,
                                {'host': node})
        self.assertIn(node, str(err))
        self.assertIn('PUT /v1/resource-definitions/volume-%s' %
                      vol.name_id, self.requests())
        self.assertTrue(self.requests()[-3].endswith('/make-available'),
                        self.requests())
        self.assert_as_before(vol, replicas, props)

    def test_attach_to_a_host_that_is_not_a_linstor_node(self):
        """LINSTOR answers the attach's first call, a view of resources
        filtered by the host, with 404 when it has no such node: the
        attach stops there, having written nothing, and says why.
        """
        host = 'no-such-node-%s' % self.getUniqueString().split('-')[-1]
        vol = self.attachable(self.create())
        replicas, props = self.replicas(vol), self.rd(vol)['props']
        before = len(self.requests())
        err = self.assertRaises(exception.VolumeBackendAPIException,
                                self.driver.initialize_connection, vol,
                                {'host': host})
        self.assertIn('%s: it is not a LINSTOR node' % host, str(err))
        self.assertIn("Node '%s' not found." % host, str(err))
        self.assertEqual(['GET /v1/view/resources'],
                         [r.split('?')[0] for r in self.requests()[before:]])
        self.assert_as_before(vol, replicas, props)
        # Nothing to undo: a detach from it finds nothing of the attach.
        self.driver.terminate_connection(vol, {'host': host})
        self.assert_as_before(vol, replicas, props)


class LinstorISCSIAttachTestCase(base.LinstorDriverTestCase):
    """The export side.

    This machine has no DRBD kernel module, so the target helper records
    the device it is asked to export.
    """

    DRIVER = linstor_driver.LinstorISCSIDriver

    def test_export_opens_the_volume_on_the_local_node(self):
        target = mock.Mock()
        target.create_export.return_value = {'location': 'loc',
                                             'auth': 'CHAP u p'}
        target.initialize_connection.return_value = {
            'driver_volume_type': 'iscsi', 'data': {}}
        self.driver.target_driver = target
        vol = self.create()
        vol.volume_attachment = objects.VolumeAttachmentList(objects=[])
        had = set(self.replicas(vol))
        self.assertEqual({'provider_location': 'loc',
                          'provider_auth': 'CHAP u p'},
                         self.driver.create_export(self.ctx, vol,
                                                   {'host': 'compute-7'}))
        _ctx, _vol, device = target.create_export.call_args[0]
        if self.target.layers == ['storage']:
            self.assertTrue(device.startswith('/dev/'), device)
            self.assertFalse(device.startswith('/dev/drbd'), device)
        else:
            self.assertEqual('/dev/drbd/by-res/volume-%s/0' % vol.name_id,
                             device)
        self.assertIn(self.local_node, self.replicas(vol))
        info = self.driver.initialize_connection(vol, {'host': 'compute-7'})
        self.assertEqual('iscsi', info['driver_volume_type'])
        self.driver.terminate_connection(vol, {'host': 'compute-7'})
        self.driver.remove_export(self.ctx, vol)
        target.remove_export.assert_called_once_with(self.ctx, vol)
        # Only what the export made goes.
        self.assertEqual(had, set(self.replicas(vol)))

    def test_target_helper_comes_from_cinder_conf(self):
        self.assertEqual('TgtAdm', type(self.driver.target_driver).__name__)

    def test_connection_info_carries_the_export_chap(self):
        """Cinder's target helper makes a CHAP user and secret per export;
        the connection info hands the same pair to the attaching host.
        """
        helper = type(self.driver.target_driver)
        vol = self.create()
        vol.volume_attachment = objects.VolumeAttachmentList(objects=[])
        # No tgtd on this machine: the helper's own target command is
        # what is recorded; its CHAP choice and connection info are real.
        with mock.patch.object(helper, 'create_iscsi_target',
                               return_value=1) as made:
            export = self.driver.create_export(self.ctx, vol,
                                               {'host': 'compute-7'})
        chap = made.call_args[0][4]
        method, user, secret = export['provider_auth'].split()
        self.assertEqual(('CHAP', user, secret), ('CHAP',) + tuple(chap))
        self.assertGreaterEqual(len(secret), 16)
        vol.update(export)
        info = self.driver.initialize_connection(vol, {'host': 'compute-7'})
        self.assertEqual('iscsi', info['driver_volume_type'])
        self.assertEqual(('CHAP', user, secret), (
            info['data']['auth_method'], info['data']['auth_username'],
            info['data']['auth_password']))
        with mock.patch.object(helper, 'remove_iscsi_target'):
            self.driver.remove_export(self.ctx, vol)

    def test_diskful_export_needs_a_pool_on_the_volume_host(self):
        client = self.need_client_node()
        self.driver.target_driver = mock.Mock()
        vtype = self.volume_type(**{'linstor:allow_remote_access': 'False'})
        vol = self.create(vtype=vtype)
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.driver.create_export, self.ctx, vol,
                                {'host': 'compute-7'})
        self.assertIn(self.pool, str(err))
        self.driver.target_driver.create_export.assert_not_called()
        self.assertNotIn(client, self.replicas(vol))
