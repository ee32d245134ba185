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

"""The coordination locks two services of one cluster must share."""

from unittest import mock

from cinder import context
from cinder import coordination
from cinder.tests.unit import fake_volume
from cinder.tests.unit import test
from cinder.volume import configuration
from cinder.volume import driver as volume_driver
from oslo_utils import uuidutils

from cinder_driver.k2 import driver as k2_driver
from cinder_driver.linstor import driver as linstor_driver

CONNECTOR = {'host': 'compute-1', 'initiator': 'iqn.2026-11.io.example:c1'}


class ClusterLockNamesTestCase(test.TestCase):

    def setUp(self):
        super().setUp()
        self.ctx = context.get_admin_context()
        self.names = []
        lock = mock.MagicMock()
        self.mock_object(coordination.COORDINATOR, 'get_lock',
                         side_effect=lambda name: self.names.append(name)
                         or lock)
        self.volume = fake_volume.fake_volume_obj(
            self.ctx, id=uuidutils.generate_uuid())

    def driver(self, cls, host, cluster_name):
        conf = configuration.Configuration(volume_driver.volume_opts,
                                           config_group='locks')
        drv = cls(configuration=conf, host=host, cluster_name=cluster_name)
        adapter = mock.Mock(fc_targets=[])
        adapter.terminate_connection.return_value = False
        if isinstance(getattr(cls, 'adapter', None), property):
            # K2: the adapter of the active array.
            drv.adapters = {k2_driver.PRIMARY: adapter}
        else:
            drv.adapter = adapter
        return drv

    def attach_lock_names(self, cls, *services):
        names = []
        for host, cluster_name in services:
            drv = self.driver(cls, host, cluster_name)
            self.names = []
            drv.initialize_connection(self.volume, CONNECTOR)
            drv.terminate_connection(self.volume, CONNECTOR)
            names.append(self.names)
        return names

    def test_members_of_a_cluster_share_the_host_lock(self):
        for cls in (k2_driver.K2ISCSIDriver, k2_driver.K2FCDriver,
                    linstor_driver.LinstorDrbdDriver):
            a, b = self.attach_lock_names(
                cls, ('node-a@k2-iscsi', 'flash@k2-iscsi'),
                ('node-b@k2-iscsi', 'flash@k2-iscsi'))
            self.assertEqual(a, b, cls.__name__)
            self.assertEqual(2, len(a))
            self.assertIn('compute-1', a[0])

    def test_services_without_a_cluster_keep_their_own_lock(self):
        a, b = self.attach_lock_names(
            k2_driver.K2ISCSIDriver, ('node-a@k2-iscsi', None),
            ('node-b@k2-iscsi', None))
        self.assertNotEqual(a, b)

    def test_two_clusters_do_not_share_host_locks(self):
        a, b = self.attach_lock_names(
            k2_driver.K2ISCSIDriver, ('node-a@k2-iscsi', 'one@k2-iscsi'),
            ('node-b@k2-iscsi', 'two@k2-iscsi'))
        self.assertNotEqual(a, b)
