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

"""Entry point Tempest loads through ``tempest.test_plugins``."""

import os

from tempest import config
from tempest.test_discover import plugins

from tempest_plugin import config as flash_config


class CinderFlashTempestPlugin(plugins.TempestPlugin):

    def load_tests(self):
        base_path = os.path.split(os.path.dirname(
            os.path.abspath(__file__)))[0]
        test_dir = 'tempest_plugin/tests'
        full_test_dir = os.path.join(base_path, test_dir)
        return full_test_dir, base_path

    def register_opts(self, conf):
        config.register_opt_group(conf, config.service_available_group,
                                  [flash_config.service_option])
        config.register_opt_group(conf, flash_config.group,
                                  flash_config.opts)
        config.register_opt_group(conf, flash_config.feature_group,
                                  flash_config.feature_opts)
        config.register_opt_group(conf, flash_config.mongodb_group,
                                  flash_config.mongodb_opts)

    def get_opt_lists(self):
        return [
            (flash_config.group.name, flash_config.opts),
            (flash_config.feature_group.name, flash_config.feature_opts),
            (flash_config.mongodb_group.name, flash_config.mongodb_opts),
            ('service_available', [flash_config.service_option]),
        ]
