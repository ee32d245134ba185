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
