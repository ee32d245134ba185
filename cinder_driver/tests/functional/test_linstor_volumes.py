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

"""LINSTOR driver: create, delete, extend and volume types."""

from cinder import exception

from cinder_driver.common import exception as flash_exception
from cinder_driver.tests.functional import linstor_driver_base as base


class LinstorVolumesTestCase(base.LinstorDriverTestCase):

    def test_create_spawns_from_the_type_group(self):
        nodes = len(self.target.nodes)
        vtype = self.volume_type(**{
            'linstor:redundancy': str(nodes),
            'linstor:property:DrbdOptions:Disk:disk-flushes': 'no',
            'linstor:property:DrbdOptions/Disk/md-flushes': 'no',
            'linstor:property:DrbdOptions:Net:max-buffers': '8000'})
        vol = self.volume(2, vtype)
        _none, calls = self.count(self.driver.create_volume, vol)
        # Group lookup, create, its properties (LINSTOR takes none in a
        # create), spawn.
        self.assertEqual(['GET', 'POST', 'PUT', 'POST'],
                         [c.split()[0] for c in calls])
        self.assertTrue(calls[-1].endswith('/spawn'))
        self.assertEqual(sorted(self.target.nodes), self.diskful(vol))
        rd = self.rd(vol)
        group = rd['resource_group_name']
        self.assertTrue(group.startswith(base.PREFIX + vtype.id + '-'), group)
        self.assertLessEqual(len(group), 48)
        self.assertEqual(2 * 1024 * 1024, self.size_kib(vol))
        rg = self.group_of(vol)
        self.assertEqual({'DrbdOptions/Disk/disk-flushes': 'no',
                          'DrbdOptions/Disk/md-flushes': 'no',
                          'DrbdOptions/Net/max-buffers': '8000'},
                         rg['props'])
        self.assertEqual(nodes, rg['select_filter']['place_count'])
        # The group exists now: the next volume of the type is 2 calls.
        _none, calls = self.count(self.driver.create_volume,
                                  self.volume(1, vtype))
        self.assertEqual(2, len(calls))

    def test_a_type_that_drops_a_spec_drops_it_from_its_group(self):
        specs = {'linstor:property:DrbdOptions:Net:max-buffers': '8000',
                 'linstor:do_not_place_with_regex': '^nothing-here-',
                 'linstor:diskless_on_remaining': 'true'}
        vtype = self.volume_type(**specs)
        vol = self.create(vtype=vtype)
        rg = self.group_of(vol)
        self.assertEqual('8000', rg['props']['DrbdOptions/Net/max-buffers'])
        self.assertEqual('^nothing-here-',
                         rg['select_filter']['not_place_with_rsc_regex'])
        vtype.extra_specs = {}
        self.create(vtype=vtype)
        rg = self.group_of(vol)
        self.assertNotIn('DrbdOptions/Net/max-buffers', rg.get('props', {}))
        self.assertIn(rg['select_filter'].get('not_place_with_rsc_regex'),
                      (None, '', '^$'))
        self.assertFalse(rg['select_filter'].get('diskless_on_remaining'))

    def test_default_placement_and_delete(self):
        vol = self.create()
        self.assertEqual(self.replicas_default, len(self.diskful(vol)))
        self.driver.delete_volume(vol)
        self.assertIsNone(self.rd(vol))
        # Deleting again is fine: LINSTOR answers a warning.
        self.driver.delete_volume(vol)

    def test_extend_is_one_call(self):
        vol = self.create()
        _none, calls = self.count(self.driver.extend_volume, vol, 3)
        self.assertEqual(['PUT /v1/resource-definitions/volume-%s/'
                          'volume-definitions/0' % vol.name_id], calls)
        self.assertEqual(3 * 1024 * 1024, self.size_kib(vol))

    def test_bad_specs_create_nothing(self):
        bad = [{'linstor:redundancy': 'two'},
               {'linstor:redundancy': '0'},
               {'linstor:layer_list': 'drbd,nvme,floppy,storage'},
               {'linstor:layer_list': 'storage,drbd'},
               {'linstor:provider_list': 'LVM_THICKER'},
               {'linstor:do_not_place_with_regex': '(['},
               {'linstor:placement': 'anywhere'},
               {'linstor:property:Aux:owner': 'me'},
               {'linstor:allow_remote_access': 'perhaps'}]
        for specs in bad:
            before = self.requests()
            vol = self.volume(1, self.volume_type(**specs))
            err = self.assertRaises(exception.InvalidVolumeType,
                                    self.driver.create_volume, vol)
            key = list(specs)[0]
            self.assertIn(key, str(err))
            self.assertEqual(before, self.requests(), specs)

    def test_refused_drbd_option_creates_nothing(self):
        vtype = self.volume_type(**{
            'linstor:property:DrbdOptions:Net:protocol': 'D'})
        vol = self.volume(1, vtype)
        _s, before = self.linstor('GET', '/v1/resource-groups')
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.driver.create_volume, vol)
        self.assertIn('DrbdOptions/Net/protocol', str(err))
        _s, groups = self.linstor('GET', '/v1/resource-groups')
        self.assertEqual(sorted(g['name'] for g in before),
                         sorted(g['name'] for g in groups))
        self.assertIsNone(self.rd(vol))

    def test_a_name_taken_is_never_deleted(self):
        vol = self.volume()
        name = self.made_elsewhere('volume-%s' % vol.name_id)
        status, _b = self.linstor('POST', '/v1/resource-definitions', {
            'resource_definition': {'name': name}})
        self.assertEqual(201, status)
        for call in (self.driver.create_volume,
                     lambda v: self.driver.create_cloned_volume(
                         v, self.create())):
            err = self.assertRaises(exception.VolumeBackendAPIException,
                                    call, vol)
            self.assertIn('not made by this request', str(err))
            self.assertIsNotNone(self.rd(vol))

    def test_failed_placement_leaves_nothing(self):
        vtype = self.volume_type(**{
            'linstor:redundancy': str(len(self.target.nodes) + 1)})
        vol = self.volume(1, vtype)
        err = self.assertRaises(flash_exception.ArrayAPIError,
                                self.driver.create_volume, vol)
        self.assertIn('Not enough available nodes', str(err))
        self.assertIsNone(self.rd(vol))

    def test_thick_pool_from_the_scheduler_pool(self):
        pool = self.need_thick_pool()
        vol = self.create(pool=pool)
        self.assertEqual({pool}, {p for _d, p in self.replicas(vol).values()})

    def test_replicas_on_different_zones(self):
        self.need_nodes(3)
        vtype = self.volume_type(**{'linstor:redundancy': '3',
                                    'linstor:replicas_on_different': 'zone'})
        vol = self.create(vtype=vtype)
        self.assertEqual(3, len(self.diskful(vol)))
        self.assertEqual(['Aux/zone'], self.group_of(vol)['select_filter'][
            'replicas_on_different'])


class LinstorTLSTestCase(base.LinstorDriverTestCase):
    """The controller over HTTPS: verified against its CA, or refused."""

    ARRAY_ARGS = ['--linstor-tls']
    DIALECT_ONLY = True

    def backend_options(self):
        url = self.target.url
        self.assertTrue(url.startswith('https://'), url)
        return dict(super().backend_options(),
                    linstor_uris=[url.replace('https://', 'linstor+ssl://')],
                    linstor_trusted_ca=self.array.info['ca_cert'])

    def test_verified_controller_and_a_second_uri(self):
        vol = self.create()
        self.assertEqual(2, len(self.diskful(vol)))
        # A dead first controller: the next URI serves.
        drv = self.make_driver(linstor_uris=[
            'linstor+ssl://127.0.0.1:1', self.target.url])
        drv.extend_volume(vol, 2)
        self.assertEqual(2 * 1024 * 1024, self.size_kib(vol))

    def test_untrusted_certificate_is_refused(self):
        err = self.assertRaises(flash_exception.ArrayTLSError,
                                self.make_driver, linstor_trusted_ca=None)
        self.assertIn('TLS', str(err))
