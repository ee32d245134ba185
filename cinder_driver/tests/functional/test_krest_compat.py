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

"""The vendor's own client, krest 1.3.7, against the reference array."""

import warnings

import krest
import testtools
import urllib3

from reference_array.tests import array_fixture

GIB = 1024 * 1024


class KrestLifecycleTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.array = self.useFixture(array_fixture.ReferenceArray())
        # krest is used the way Cinder's in-tree driver uses it: without
        # certificate verification, which warns on every call.
        warnings.simplefilter('ignore', urllib3.exceptions.
                              InsecureRequestWarning)
        self.ep = krest.EndPoint(
            '%s:%s' % (self.array.k2_host, self.array.k2_port),
            self.array.info['user'], self.array.info['password'],
            ssl_validate=False)

    def test_object_lifecycle(self):
        ep = self.ep
        vg = ep.new('volume_groups', name='cvg-k', quota=0,
                    is_dedup=True).save()
        vol = ep.new('volumes', name='cv-k', size=GIB,
                     volume_group=vg).save()
        self.assertEqual('cvg-k', vol.volume_group.name)
        vol.size = 2 * GIB
        vol.save()
        self.assertEqual(2 * GIB, ep.get('volumes', vol.id).size)
        rp = ep.search('retention_policies',
                       name='Best_Effort_Retention').hits[0]
        snap = ep.new('snapshots', short_name='cs-k', source=vg,
                      retention_policy=rp, is_auto_deleteable=False).save()
        self.assertEqual('cvg-k:cs-k', snap.name)
        view = ep.new('snapshots', short_name='cview-k', source=snap,
                      retention_policy=rp, is_exposable=True).save()
        volsnap = ep.search('volsnaps', snapshot=view).hits[0]
        self.assertEqual('cvg-k:cview-k:cv-k', volsnap.name)
        host = ep.new('hosts', name='compute-k', type='Linux').save()
        ep.new('host_iqns', iqn='iqn.1993-08.org.debian:01:k',
               host=host).save()
        mapping = ep.new('mappings', volume=vol, host=host).save()
        self.assertEqual(1, mapping.lun)
        self.assertEqual(1, ep.search('mappings', volume=vol,
                                      host=host).total)
        for obj in (mapping, view, snap, vol, vg, host):
            obj.delete()
        # Only the built-in CTRL volume is left.
        self.assertEqual(1, ep.search('volumes').total)
        self.assertEqual(0, ep.search('hosts').total)
