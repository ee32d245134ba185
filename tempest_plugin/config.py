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

"""Tempest options of the cinder-flash plugin."""

from oslo_config import cfg

service_option = cfg.BoolOpt(
    'cinder_flash', default=True,
    help='Whether the block storage service runs cinder-flash backends.')

group = cfg.OptGroup(name='cinder_flash',
                     title='cinder-flash backend options')

opts = [
    cfg.StrOpt('dedup_volume_type', default='dedup',
               help='Volume type whose volumes land in deduplicating '
                    'volume groups.'),
    cfg.StrOpt('nodedup_volume_type', default='nodedup',
               help='Volume type whose volumes land in volume groups '
                    'without deduplication.'),
    cfg.ListOpt('compare_volume_types', default=['dedup', 'nodedup'],
                help='Volume types the MongoDB scenarios compare.'),
    cfg.ListOpt('pool_protocols', default=[],
                help='Storage protocols (e.g. iSCSI, DRBD) that must each '
                     'have a cinder-flash pool in the scheduler\'s '
                     'get_pools: a backend that stopped reporting fails '
                     'the stats key test instead of being skipped.'),
]

mongodb_group = cfg.OptGroup(name='cinder_flash_mongodb',
                             title='MongoDB scenarios of cinder-flash')

mongodb_opts = [
    cfg.StrOpt('image_ref',
               help='Image of the MongoDB members (an image with mongod, '
                    'mongos and mongosh, or a distribution image when '
                    'install_method is "package"). Unset: the scenarios '
                    'are skipped.'),
    cfg.StrOpt('flavor_ref',
               help='Flavor of the members. Default: compute.flavor_ref.'),
    cfg.StrOpt('install_method', default='image',
               choices=['image', 'package'],
               help='"image": mongod is in the image; "package": install '
                    'it with the image\'s package manager first.'),
    cfg.StrOpt('ssh_user', default='ubuntu',
               help='User to log in to the members as.'),
    cfg.IntOpt('volume_size', default=40, min=1,
               help='Size (GiB) of each member\'s boot volume.'),
    cfg.FloatOpt('dataset_scale', default=1.0, min=0.0001, max=1.0,
                 help='Share of the reference data set to load (1.0: 50 '
                      'collections of 15,000 documents of 16.5 KB).'),
    cfg.IntOpt('iterations', default=10, min=1,
               help='Benchmark iterations.'),
    cfg.IntOpt('processes', default=4, min=1,
               help='Benchmark processes per run.'),
    cfg.IntOpt('threads', default=8, min=1,
               help='Benchmark threads per process.'),
    cfg.IntOpt('ops_per_thread', default=100, min=1,
               help='Finds and updates per benchmark thread and '
                    'iteration.'),
    cfg.StrOpt('server', default='mongod', choices=['mongod', 'ferretdb'],
               help='The MongoDB server of the image: "mongod", or '
                    '"ferretdb" (a MongoDB wire-protocol server that has '
                    'neither replica sets nor sharding: those topologies '
                    'are skipped).'),
    cfg.StrOpt('run_label',
               help='Where the figures come from (instance type, '
                    'hypervisor, emulation), printed above each table.'),
    cfg.ListOpt('topologies',
                default=['standalone', 'replica-set', 'sharded'],
                help='Topologies to deploy and measure.'),
]

feature_group = cfg.OptGroup(name='cinder_flash_feature_enabled',
                             title='cinder-flash features under test')

feature_opts = [
    cfg.BoolOpt('data_reduction_stats', default=True,
                help='Pools report data-reduction figures.'),
    cfg.BoolOpt('array_performance_stats', default=True,
                help='Pools report array IOPS and latency.'),
    cfg.BoolOpt('mongodb_scenarios', default=False,
                help='Run the MongoDB scenarios (they need Nova, Glance, '
                     'Neutron and [cinder_flash_mongodb] image_ref).'),
]


class Lazy(object):
    """One of our option groups, read when a test runs, not at import.

    Test modules are imported before Tempest has read tempest.conf (for
    instance to list tests).
    """

    def __init__(self, group):
        self._group = group

    def __getattr__(self, name):
        from tempest import config
        return getattr(getattr(config.CONF, self._group), name)
