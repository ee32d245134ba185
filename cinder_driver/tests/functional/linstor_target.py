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

"""The LINSTOR controller a functional test runs against.

By default each test starts a reference array and talks to its LINSTOR
dialect. With ``CINDER_FLASH_LINSTOR_URL`` set (``tox -e linstor-real``),
the same tests run against that controller instead:

``CINDER_FLASH_LINSTOR_URL``
    the controller, e.g. ``http://127.0.0.1:3370``
``CINDER_FLASH_LINSTOR_POOL``
    the storage pool volumes go to (default ``DfltStorPool``)
``CINDER_FLASH_LINSTOR_LAYERS``
    layer list of the volumes, e.g. ``storage`` where the nodes have no
    DRBD (default: the controller's)
``CINDER_FLASH_LINSTOR_THICK_POOL``
    a thick (fat) storage pool, where the controller has one
``CINDER_FLASH_LINSTOR_NODE``
    the node that stands for the volume service's host (default: the
    first node with the pool)

A test on a controller it did not start removes the objects it made (and
only those) when it ends.
"""

import os

import fixtures
import requests

from reference_array.tests import array_fixture

ENV = 'CINDER_FLASH_LINSTOR_URL'
REASON = ('%s is not set: no LINSTOR controller to test against' % ENV)


def real_url():
    return os.environ.get(ENV, '').strip() or None


class Controller(fixtures.Fixture):
    """What a test needs of a LINSTOR controller."""

    real = False
    pool = 'DfltStorPool'
    layers = []
    # Nodes with the pool, the node of the volume service, and whether
    # bytes on a volume can be read and written from the test.
    nodes = ()
    local_node = None
    data_path = False
    thick_pool = None

    def linstor(self, method, path, body=None, params=None):
        """(status, decoded reply) of one raw LINSTOR call."""
        resp = requests.request(method, self.url + path, json=body,
                                params=params, timeout=60,
                                verify=self.verify)
        return resp.status_code, (resp.json() if resp.content else None)

    verify = True


class DialectController(Controller):
    """A reference array started for the test."""

    nodes = ('sat-1', 'sat-2', 'sat-3')
    thick_pool = 'thickpool'
    data_path = True

    def __init__(self, local_node, args=()):
        super().__init__()
        self.local_node = local_node
        self.args = list(args)

    def _setUp(self):
        self.array = self.useFixture(array_fixture.ReferenceArray(
            args=['--capacity-gib', '64', '--linstor-local-node',
                  self.local_node] + self.args))
        self.url = self.array.linstor_url
        self.verify = self.array.info['ca_cert']


class RealController(Controller):
    """A controller given in the environment; objects made are removed."""

    real = True

    def _setUp(self):
        self.url = real_url().rstrip('/')
        self.pool = os.environ.get('CINDER_FLASH_LINSTOR_POOL',
                                   'DfltStorPool')
        self.thick_pool = os.environ.get(
            'CINDER_FLASH_LINSTOR_THICK_POOL') or None
        self.layers = [item.strip() for item in os.environ.get(
            'CINDER_FLASH_LINSTOR_LAYERS', '').split(',') if item.strip()]
        _s, pools = self.linstor('GET', '/v1/view/storage-pools',
                                 params={'storage_pools': self.pool})
        self.nodes = tuple(sorted(p['node_name'] for p in pools
                                  if p['storage_pool_name'] == self.pool))
        self.local_node = os.environ.get('CINDER_FLASH_LINSTOR_NODE') or (
            self.nodes[0] if self.nodes else None)
        self.volumes = []
        self.types = []
        self.names = []
        self.addCleanup(self.remove_made)

    def track(self, volume=None, volume_type=None, name=None):
        if volume is not None:
            self.volumes.append(volume)
        if volume_type is not None:
            self.types.append(volume_type)
        if name is not None:
            self.names.append(name)

    def remove_made(self):
        """Snapshots, definitions and groups of this test, nothing else."""
        names = set(self.names) | {
            v.provider_id or 'volume-%s' % v.name_id for v in self.volumes}
        type_ids = {t.id for t in self.types} | {
            v.volume_type.id for v in self.volumes if v.volume_type}
        _s, snaps = self.linstor('GET', '/v1/view/snapshots')
        for snap in snaps or []:
            if snap['resource_name'] in names:
                self.linstor('DELETE', '/v1/resource-definitions/%s/'
                             'snapshots/%s' % (snap['resource_name'],
                                               snap['name']))
        for name in names:
            self.linstor('DELETE', '/v1/resource-definitions/%s' % name)
        _s, groups = self.linstor('GET', '/v1/resource-groups')
        for group in groups or []:
            if any(t in group['name'] for t in type_ids):
                self.linstor('DELETE', '/v1/resource-groups/%s' %
                             group['name'])

    def device_path(self, rd, node):
        """The node's device of volume 0, when it is on this machine."""
        _s, rows = self.linstor('GET', '/v1/view/resources', params={
            'resources': rd, 'nodes': node})
        for row in rows or []:
            for vol in row.get('volumes') or []:
                path = vol.get('device_path')
                if vol.get('volume_number') == 0 and path and \
                        os.path.exists(path):
                    return path
        return None
