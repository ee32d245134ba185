"""Cinder 29's in-tree K2 driver, unmodified, against the reference array.

It runs with krest 1.3.7, the last release it works with. Its clone and
volume-from-snapshot copy data through the cinder-volume host with
os-brick and a kernel iSCSI initiator, which this test does not have;
every other operation of its lifecycle runs here.
"""

from cinder import context
from cinder.tests.unit import fake_snapshot
from cinder.tests.unit import fake_volume
from cinder.tests.unit import test
from cinder.volume import configuration
from cinder.volume import driver as volume_driver
from cinder.volume.drivers.kaminario import kaminario_iscsi
from cinder.volume.drivers.san import san
from oslo_utils import uuidutils
import urllib3

from cinder_driver.k2 import client
from reference_array.tests import array_fixture

GROUP = 'intree-k2'
CONNECTOR = {'host': 'compute-1', 'ip': '127.0.0.1', 'multipath': False,
             'initiator': 'iqn.1993-08.org.debian:01:intree'}


class InTreeKaminarioTestCase(test.TestCase):

    def setUp(self):
        super().setUp()
        # The in-tree driver turns certificate checks off; krest then warns
        # on every call.
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        self.array = self.useFixture(array_fixture.ReferenceArray())
        conf = configuration.Configuration(volume_driver.volume_opts,
                                           config_group=GROUP)
        conf.append_config_values(san.san_opts)
        for key, value in (
                ('san_ip', '%s:%s' % (self.array.k2_host,
                                      self.array.k2_port)),
                ('san_login', self.array.info['user']),
                ('san_password', self.array.info['password']),
                ('volume_backend_name', GROUP)):
            self.override_config(key, value, group=GROUP)
        self.driver = kaminario_iscsi.KaminarioISCSIDriver(
            configuration=conf)
        self.ctx = context.get_admin_context()
        # As cinder-volume starts a driver.
        self.driver.do_setup(self.ctx)
        self.driver.check_for_setup_error()

    def _volume(self, **specs):
        vol = fake_volume.fake_volume_obj(
            self.ctx, id=uuidutils.generate_uuid(), size=1,
            provider_id=None)
        vol.volume_type = fake_volume.fake_volume_type_obj(
            self.ctx, id=uuidutils.generate_uuid(), extra_specs=specs)
        return vol

    def test_lifecycle(self):
        drv = self.driver
        vol = self._volume()
        drv.create_volume(vol)
        drv.extend_volume(vol, 2)
        k2 = self.array.k2_client()
        found = k2.find('volumes', name='cv-%s' % vol.id)
        self.assertEqual(2 * 1024 * 1024, found['size'])
        snap = fake_snapshot.fake_snapshot_obj(
            self.ctx, id=uuidutils.generate_uuid(), volume_id=vol.id)
        snap.volume = vol
        drv.create_snapshot(snap)
        info = drv.initialize_connection(vol, CONNECTOR)
        self.assertEqual(k2.system_state()['iscsi_qualified_target_name'],
                         info['data']['target_iqn'])
        self.assertEqual(1, len(k2.search('mappings')))
        drv.terminate_connection(vol, CONNECTOR)
        self.assertEqual([], k2.search('mappings'))
        stats = drv.get_volume_stats(True)
        self.assertEqual(1, stats['total_volumes'])
        self.assertEqual(2.0, stats['provisioned_capacity_gb'])
        nodedup = self._volume(**{'kaminario:thin_prov_type': 'nodedup'})
        drv.create_volume(nodedup)
        self.assertFalse(k2.find('volumes', name='cv-%s' % nodedup.id)[
            'is_dedup'])
        drv.delete_snapshot(snap)
        drv.delete_volume(vol)
        drv.delete_volume(nodedup)
        self.assertEqual(['CTRL'], [v['name'] for v in
                                    k2.search('volumes')])
        self.assertEqual([], self.array.k2_failures())

    def test_manage_and_retype(self):
        k2 = self.array.k2_client()
        group = k2.create('volume_groups', {'name': 'legacy-vg', 'quota': 0,
                                            'is_dedup': True})
        k2.create('volumes', {'name': 'legacy', 'size': 1024 * 1024,
                              'volume_group': client.ref('volume_groups',
                                                         group['id'])})
        vol = self._volume()
        ref = {'source-name': 'legacy'}
        self.assertEqual(1, self.driver.manage_existing_get_size(vol, ref))
        self.driver.manage_existing(vol, ref)
        self.assertIsNotNone(k2.find('volumes', name='cv-%s' % vol.id))
        self.assertIsNotNone(k2.find('volume_groups',
                                     name='cvg-%s' % vol.id))
        # Retype to nodedup: the in-tree driver declines (it cannot change
        # deduplication) and leaves the volume as it was.
        nodedup = {'extra_specs': {'kaminario:thin_prov_type': 'nodedup'}}
        self.assertFalse(self.driver.retype(
            self.ctx, vol, nodedup, {'extra_specs': {}}, {'host': 'x'}))
        self.assertTrue(k2.find('volumes', name='cv-%s' % vol.id)[
            'is_dedup'])
        self.assertEqual([], self.array.k2_failures())
