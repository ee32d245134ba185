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

"""A LINSTOR driver instance configured against a live controller.

The controller is a reference array started for the test, or the one in
``CINDER_FLASH_LINSTOR_URL`` (see linstor_target). Tests ask for what they
need (nodes, a thick pool, a data path) and are skipped, with the reason,
where the controller does not have it.
"""

from cinder import context

from cinder_driver.linstor import driver as linstor_driver
from cinder_driver.tests.functional import driver_base
from cinder_driver.tests.functional import linstor_target

LOCAL_NODE = 'cinder-node'
# Resource groups of the tests' volume types: tests on a shared controller
# never touch groups of a Cinder deployment that uses it.
PREFIX = 'cft-'


class LinstorDriverTestCase(driver_base.DriverTestCase):

    DRIVER = linstor_driver.LinstorDrbdDriver
    BACKEND = 'linstor-functional'
    ARRAY_ARGS = []
    # Tests of the reference array itself (faults, TLS set-up).
    DIALECT_ONLY = False

    def setUp(self):
        super().setUp()
        if linstor_target.real_url():
            if self.DIALECT_ONLY:
                self.skipTest('needs the reference array')
            self.target = self.useFixture(linstor_target.RealController())
        else:
            self.target = self.useFixture(linstor_target.DialectController(
                LOCAL_NODE, self.ARRAY_ARGS))
            self.array = self.target.array
        self.pool = self.target.pool
        self.local_node = self.target.local_node
        self.sent = []
        self.ctx = context.get_admin_context()
        self.driver = self.make_driver()

    # -- what a test needs ----------------------------------------------------
    def need_nodes(self, count):
        if len(self.target.nodes) < count:
            self.skipTest('needs %d nodes with pool %s; the controller has '
                          '%d' % (count, self.pool, len(self.target.nodes)))

    def need_thick_pool(self):
        if not self.target.thick_pool:
            self.skipTest('needs a thick storage pool')
        return self.target.thick_pool

    def need_client_node(self):
        """A node without a replica of a volume: the volume host's."""
        if self.target.real:
            self.skipTest('needs a node without storage (the controller '
                          'under test has only nodes with the pool)')
        return self.local_node

    @property
    def replicas_default(self):
        return min(2, len(self.target.nodes))

    def backend_options(self):
        return {'linstor_uris': [self.target.url],
                'linstor_local_node': self.local_node,
                'linstor_storage_pool': self.pool,
                'linstor_layer_list': self.target.layers,
                'linstor_placement_count': max(self.replicas_default, 1),
                'linstor_resource_group_prefix': PREFIX}

    def make_driver(self, driver_kwargs=None, **overrides):
        drv = super().make_driver(driver_kwargs, **overrides)
        for session in drv.adapter.client.sessions:
            session.session.hooks['response'].append(self._record)
        return drv

    def _record(self, resp, *args, **kwargs):
        from urllib import parse
        self.sent.append('%s %s' % (resp.request.method,
                                    parse.urlsplit(resp.request.url).path))

    def requests(self):
        """'METHOD path' of the driver's LINSTOR requests so far."""
        return list(self.sent)

    def linstor(self, method, path, body=None, params=None):
        return self.target.linstor(method, path, body, params)

    # -- objects --------------------------------------------------------------
    def volume_type(self, **specs):
        vtype = super().volume_type(**specs)
        if self.target.real:
            self.target.track(volume_type=vtype)
        return vtype

    def volume(self, size=1, vtype=None, pool=None, **updates):
        vol = super().volume(size, vtype, host='cinder@%s#%s' % (
            self.BACKEND, pool or self.pool), **updates)
        if self.target.real:
            self.target.track(volume=vol)
        return vol

    def made_elsewhere(self, name):
        """A definition the test makes behind the driver's back."""
        if self.target.real:
            self.target.track(name=name)
        return name

    def rd(self, vol):
        status, body = self.linstor(
            'GET', '/v1/resource-definitions/volume-%s' % vol.name_id)
        return body if status == 200 else None

    def size_kib(self, vol):
        """Size of the volume's one volume definition."""
        status, body = self.linstor(
            'GET', '/v1/resource-definitions/volume-%s/volume-definitions'
            % vol.name_id)
        return body[0]['size_kib'] if status == 200 else None

    def group_of(self, vol):
        _s, rg = self.linstor('GET', '/v1/resource-groups/%s' % self.rd(
            vol)['resource_group_name'])
        return rg

    def replicas(self, vol):
        """{node: (diskless, pool)} of the volume's resources."""
        _status, rows = self.linstor(
            'GET', '/v1/view/resources',
            params={'resources': 'volume-%s' % vol.name_id})
        return {r['node_name']: (
            any(f in (r.get('flags') or []) for f in ('DRBD_DISKLESS',
                                                      'DISKLESS')),
            r['volumes'][0]['storage_pool_name']) for r in rows}

    def diskful(self, vol):
        return sorted(n for n, (dl, _p) in self.replicas(vol).items()
                      if not dl)

    # -- bytes ----------------------------------------------------------------
    def device(self, vol, node):
        """What qemu-io opens for the volume's device on ``node``."""
        return self.device_of('volume-%s' % vol.name_id, node)

    def device_of(self, rd, node):
        """What qemu-io opens for definition ``rd``'s device on ``node``."""
        if self.target.real:
            path = self.target.device_path(rd, node)
            if path is None:
                self.skipTest('the device of %s on %s is not on this '
                              'machine' % (rd, node))
            return path
        from reference_array.linstor import exporter
        return self.node_lun_of(rd, node, exporter.node_chap_from(
            self.array.info['data_dir'], node))

    def node_lun(self, vol, node, chap):
        """The array's LUN for the volume's device on ``node``, logged in
        as that node's initiator with ``chap`` ((user, secret) or None).
        """
        return self.node_lun_of('volume-%s' % vol.name_id, node, chap)

    def node_lun_of(self, rd, node, chap):
        """node_lun for the device of definition ``rd``."""
        from reference_array.linstor import exporter
        from reference_array.tests import iscsi_client
        _s, vds = self.linstor('GET', '/v1/resource-definitions/%s/'
                               'volume-definitions' % rd)
        minor = [d['data']['minor_number'] for d in vds[0]['layer_data']
                 if d['type'] == 'DRBD'][0]
        return iscsi_client.url(
            self.array.info['iscsi_portal'], self.array.info['iqn'],
            minor - 1000, exporter.node_initiator(node), chap)

    def write(self, vol, node, command):
        from reference_array.tests import iscsi_client
        result = iscsi_client.qemu_io(self.device(vol, node), command)
        self.assertEqual(0, result.returncode, result.stderr)
        return result.stdout

    def pattern_at(self, vol, node, offset, length, pattern):
        """Whether the device reads back bytes of ``pattern`` there."""
        return self.pattern_at_rd('volume-%s' % vol.name_id, node, offset,
                                  length, pattern)

    def pattern_at_rd(self, rd, node, offset, length, pattern):
        """pattern_at for the device of definition ``rd``."""
        from reference_array.tests import iscsi_client
        result = iscsi_client.qemu_io(self.device_of(rd, node), 'read -P %d '
                                      '%d %d' % (pattern, offset, length))
        return result.returncode == 0 and 'Pattern verification failed' \
            not in result.stdout + result.stderr
