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

import os

from cinder.tests.unit import test
from oslo_config import cfg

from tempest_plugin import plugin


class TempestPluginTestCase(test.TestCase):

    def test_registers_groups(self):
        conf = cfg.ConfigOpts()
        p = plugin.CinderFlashTempestPlugin()
        p.register_opts(conf)
        self.assertEqual('dedup', conf.cinder_flash.dedup_volume_type)
        self.assertTrue(
            conf.cinder_flash_feature_enabled.data_reduction_stats)
        self.assertTrue(conf.service_available.cinder_flash)
        listed = dict(p.get_opt_lists())
        self.assertIn('cinder_flash', listed)
        self.assertEqual(1.0, conf.cinder_flash_mongodb.dataset_scale)
        self.assertEqual(['standalone', 'replica-set', 'sharded'],
                         conf.cinder_flash_mongodb.topologies)
        self.assertIs(False,
                      conf.cinder_flash_feature_enabled.mongodb_scenarios)
        self.assertIn('cinder_flash_mongodb', listed)

    def test_load_tests_points_at_the_test_tree(self):
        test_dir, top = plugin.CinderFlashTempestPlugin().load_tests()
        self.assertTrue(os.path.isdir(test_dir))
        self.assertTrue(test_dir.startswith(top))
        self.assertTrue(os.path.isfile(os.path.join(
            top, 'tempest_plugin', 'plugin.py')))
