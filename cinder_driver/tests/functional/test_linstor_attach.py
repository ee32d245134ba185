"""LINSTOR driver: DRBD and iSCSI attach and detach, on the array."""

from unittest import mock

from cinder import objects

from cinder_driver.common import exception as flash_exception
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

    def test_diskless_attach_and_detach_on_a_client_node(self):
        vol = self.attachable(self.create())
        info, calls = self.count(self.driver.initialize_connection, vol,
                                 {'host': base.LOCAL_NODE})
        self.assertEqual({'driver_volume_type': 'local',
                          'data': {'device_path': '/dev/drbd/by-res/'
                                   'volume-%s/0' % vol.name_id}}, info)
        # Is there a resource, make it available, mark it as the
        # attach's own, read its device.
        self.assertEqual(4, len(calls))
        self.assertTrue(calls[1].endswith('/make-available'))
        self.assertEqual((True, 'DfltDisklessStorPool'),
                         self.replicas(vol)[base.LOCAL_NODE])
        # The client reads what a replica holds.
        self.write(vol, self.diskful(vol)[0], 'write -P 0x5a 0 64k')
        self.assertTrue(self.pattern_at(vol, base.LOCAL_NODE, 0, 65536,
                                        0x5a))
        # Attaching again is idempotent.
        self.driver.initialize_connection(vol, {'host': base.LOCAL_NODE})
        self.driver.terminate_connection(vol, {'host': base.LOCAL_NODE})
        self.assertNotIn(base.LOCAL_NODE, self.replicas(vol))
        self.assertEqual(2, len(self.diskful(vol)))

    def test_detach_keeps_replicas_and_resources_not_ours(self):
        vol = self.attachable(self.create())
        holder = self.diskful(vol)[0]
        info = self.driver.initialize_connection(vol, {'host': holder})
        self.assertIn('device_path', info['data'])
        self.driver.terminate_connection(vol, {'host': holder})
        self.assertIn(holder, self.diskful(vol))
        # A diskless resource someone else made stays too.
        status, _body = self.array.linstor(
            'POST', '/v1/resource-definitions/volume-%s/resources' %
            vol.name_id, [{'resource': {'node_name': base.LOCAL_NODE,
                                        'flags': ['DRBD_DISKLESS']}}])
        self.assertEqual(201, status)
        self.driver.terminate_connection(vol, {'host': base.LOCAL_NODE})
        self.assertIn(base.LOCAL_NODE, self.replicas(vol))

    def test_no_remote_access_attaches_diskful(self):
        vtype = self.volume_type(**{'linstor:allow_remote_access': 'false',
                                    'linstor:redundancy': '1'})
        vol = self.attachable(self.create(vtype=vtype))
        other = [n for n in ('sat-1', 'sat-2', 'sat-3')
                 if n not in self.diskful(vol)][0]
        self.driver.initialize_connection(vol, {'host': other})
        self.assertEqual((False, 'DfltStorPool'), self.replicas(vol)[other])

    def test_multiattach_allows_two_primaries_while_shared(self):
        vol = self.create()
        vol.multiattach = True
        self.attachable(vol, 'sat-1')
        self.driver.initialize_connection(vol, {'host': base.LOCAL_NODE})
        props = self.rd(vol)['props']
        self.assertEqual('yes', props['DrbdOptions/Net/allow-two-primaries'])
        self.attachable(vol, 'sat-1', base.LOCAL_NODE)
        self.driver.terminate_connection(vol, {'host': base.LOCAL_NODE})
        self.assertNotIn('DrbdOptions/Net/allow-two-primaries',
                         self.rd(vol)['props'])

    def test_force_detach_removes_our_diskless_resources(self):
        vol = self.attachable(self.create())
        self.driver.initialize_connection(vol, {'host': base.LOCAL_NODE})
        self.driver.terminate_connection(vol, None)
        self.assertNotIn(base.LOCAL_NODE, self.replicas(vol))


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
        self.assertEqual({'provider_location': 'loc',
                          'provider_auth': 'CHAP u p'},
                         self.driver.create_export(self.ctx, vol,
                                                   {'host': 'compute-7'}))
        target.create_export.assert_called_once_with(
            self.ctx, vol, '/dev/drbd/by-res/volume-%s/0' % vol.name_id)
        self.assertEqual((True, 'DfltDisklessStorPool'),
                         self.replicas(vol)[base.LOCAL_NODE])
        info = self.driver.initialize_connection(vol, {'host': 'compute-7'})
        self.assertEqual('iscsi', info['driver_volume_type'])
        self.driver.terminate_connection(vol, {'host': 'compute-7'})
        self.driver.remove_export(self.ctx, vol)
        target.remove_export.assert_called_once_with(self.ctx, vol)
        self.assertNotIn(base.LOCAL_NODE, self.replicas(vol))

    def test_target_helper_comes_from_cinder_conf(self):
        self.assertEqual('TgtAdm', type(self.driver.target_driver).__name__)

    def test_diskful_export_needs_a_pool_on_the_volume_host(self):
        self.driver.target_driver = mock.Mock()
        vtype = self.volume_type(**{'linstor:allow_remote_access': 'False'})
        vol = self.create(vtype=vtype)
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.driver.create_export, self.ctx, vol,
                                {'host': 'compute-7'})
        self.assertIn('DfltStorPool', str(err))
        self.driver.target_driver.create_export.assert_not_called()
        self.assertNotIn(base.LOCAL_NODE, self.replicas(vol))
