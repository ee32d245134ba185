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

"""Options of the K2 backend family."""

from oslo_config import cfg

k2_opts = [
    cfg.ListOpt('k2_iscsi_portals',
                default=[],
                help='iSCSI portal addresses (IP or IP:port) to hand to '
                     'hosts. Empty means every iSCSI address the array '
                     'reports in system/net_ips, except replication ports.'),
    cfg.BoolOpt('k2_auto_max_over_subscription_ratio',
                default=False,
                help='Report max_over_subscription_ratio computed from the '
                     'array data-reduction ratio instead of the configured '
                     'max_over_subscription_ratio.'),
    cfg.StrOpt('k2_retention_policy',
               default='Best_Effort_Retention',
               help='Name of the array retention policy given to the '
                    'snapshots the driver creates.'),
    cfg.IntOpt('k2_replication_timeout',
               default=600, min=10,
               help='Seconds a failback waits for the secondary to copy a '
                    'volume back to the primary before marking it in '
                    'error.'),
    cfg.StrOpt('k2_copy_initiator',
               help='iSCSI initiator name the volume service uses to copy '
                    'volumes itself when the array offers no volume copy '
                    '(no volume_source capability). Default: one derived '
                    'from the host name.'),
]
