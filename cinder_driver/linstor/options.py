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

"""Options of the LINSTOR backend family."""

from oslo_config import cfg

linstor_opts = [
    cfg.ListOpt('linstor_uris',
                default=['linstor://localhost'],
                help='LINSTOR controller URIs (linstor://, linstor+ssl://, '
                     'http:// or https://). With several, a controller '
                     'that cannot be reached is skipped.'),
    cfg.StrOpt('linstor_username',
               help='User for HTTP Basic authentication at the controller '
                    '(LINSTOR with user authentication over HTTPS).'),
    cfg.StrOpt('linstor_password', secret=True,
               help='Password of linstor_username.'),
    cfg.StrOpt('linstor_trusted_ca',
               help='CA bundle that signs the controller certificate. '
                    'Default: the system trust store.'),
    cfg.BoolOpt('linstor_verify_tls', default=True,
                help='Verify the controller certificate on HTTPS. Turn '
                     'off only for tests.'),
    cfg.StrOpt('linstor_client_cert',
               help='Client certificate (PEM) presented to the controller.'),
    cfg.StrOpt('linstor_client_key',
               help='Private key (PEM) of linstor_client_cert.'),
    cfg.IntOpt('linstor_placement_count', default=2, min=1, max=16,
               help='Diskful replicas of a volume whose type does not set '
                    'linstor:redundancy.'),
    cfg.StrOpt('linstor_storage_pool', default='DfltStorPool',
               help='Storage pool of volumes whose type and pool do not '
                    'name one.'),
    cfg.ListOpt('linstor_layer_list', default=[],
                help='Layer list (for example drbd,storage or storage) of '
                     'volumes whose type does not set linstor:layer_list. '
                     'Default: the controller\'s own default.'),
    cfg.StrOpt('linstor_resource_group_prefix', default='cinder-',
               help='Prefix of the resource groups made per volume type.'),
    cfg.StrOpt('linstor_local_node',
               help='LINSTOR node name of this cinder-volume host, used '
                    'for iSCSI exports and image copies. Default: the '
                    'host name.'),
    cfg.IntOpt('linstor_clone_timeout', default=3600, min=10,
               help='Seconds to wait for a LINSTOR clone to complete.'),
]
