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

"""An instance booted from a cinder-flash volume keeps what it writes.

Create a volume of the dedup type from the image, boot from it, write
random data in the guest and sync; read it back after dropping the
guest's caches, and again after a hard reboot, which detaches the volume
from the hypervisor and attaches it again (a cold read from the array).
"""

from tempest.common import waiters
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators

from tempest_plugin.tests.scenario import base

CONF = config.CONF
# A file in the guest, on its root disk (our volume): /var/tmp survives the
# hard reboot and is never a tmpfs, unlike /tmp on some images.
PROBE = '/var/tmp/cinder-flash-probe'
PROBE_MIB = 16


class VolumeDataScenarioTest(base.VolumeBootScenarioTest):

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.validation.run_validation:
            raise cls.skipException('[validation] run_validation is off: '
                                    'the test reads back over SSH')

    def _digest(self, ssh):
        out = ssh.exec_command('sudo sha256sum %s' % PROBE)
        return out.split()[0]

    def _drop_caches(self, ssh):
        ssh.exec_command("sudo sh -c 'sync; echo 3 > /proc/sys/vm/"
                         "drop_caches'")

    @decorators.idempotent_id('5b8e3c1a-7f2d-4c9e-a6b1-2d4f8e0c7a93')
    def test_write_and_read_back_through_the_guest(self):
        volume = self.create_volume(
            imageRef=CONF.compute.image_ref,
            volume_type=CONF.cinder_flash.dedup_volume_type,
            name=data_utils.rand_name('boot'))
        keypair = self.create_keypair()
        group = self.create_security_group()
        server, ip, ssh = self.boot_from_volume(volume, keypair, group)
        # The root disk is the volume.
        root = ssh.exec_command("findmnt -n -o SOURCE /").strip()
        self.assertTrue(root.startswith('/dev/vda'), root)
        ssh.exec_command('sudo dd if=/dev/urandom of=%s bs=1M count=%d '
                         'conv=fsync status=none' % (PROBE, PROBE_MIB))
        written = self._digest(ssh)
        self._drop_caches(ssh)
        self.assertEqual(written, self._digest(ssh))

        self.servers_client.reboot_server(server['id'], type='HARD')
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'ACTIVE')
        ssh = self.get_remote_client(ip, private_key=keypair['private_key'],
                                     server=server)
        self.assertEqual(written, self._digest(ssh))
        size = ssh.exec_command('stat -c %%s %s' % PROBE).strip()
        self.assertEqual(str(PROBE_MIB << 20), size)
