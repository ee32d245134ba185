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
]

feature_group = cfg.OptGroup(name='cinder_flash_feature_enabled',
                             title='cinder-flash features under test')

feature_opts = [
    cfg.BoolOpt('data_reduction_stats', default=True,
                help='Pools report data-reduction figures.'),
    cfg.BoolOpt('array_performance_stats', default=True,
                help='Pools report array IOPS and latency.'),
]
