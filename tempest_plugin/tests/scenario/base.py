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

"""What the plugin's scenarios share: instances booted from volumes."""

from tempest import config
from tempest.scenario import manager

CONF = config.CONF


class VolumeBootScenarioTest(manager.ScenarioTest):

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        for service in ('nova', 'glance', 'neutron'):
            if not getattr(CONF.service_available, service):
                raise cls.skipException('%s is not available' % service)

    def boot_from_volume(self, volume, keypair, security_group,
                         username=None, flavor=None):
        """Boot from ``volume`` (kept when the server goes); returns
        (server, its address, an SSH client logged in with ``keypair``).
        """
        server = self.create_server(
            image_id='', flavor=flavor, key_name=keypair['name'],
            security_groups=[{'name': security_group['name']}],
            block_device_mapping_v2=[{
                'uuid': volume['id'], 'source_type': 'volume',
                'destination_type': 'volume', 'boot_index': 0,
                'delete_on_termination': False}],
            wait_until='ACTIVE')
        ip = self.get_server_ip(server)
        ssh = self.get_remote_client(ip, username=username,
                                     private_key=keypair['private_key'],
                                     server=server)
        return server, ip, ssh
