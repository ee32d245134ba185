"""A LINSTOR driver instance configured against a live reference array."""

from cinder import context

from cinder_driver.linstor import driver as linstor_driver
from cinder_driver.tests.functional import array_fixture
from cinder_driver.tests.functional import driver_base

LOCAL_NODE = 'cinder-node'


class LinstorDriverTestCase(driver_base.DriverTestCase):

    DRIVER = linstor_driver.LinstorDrbdDriver
    BACKEND = 'linstor-functional'
    ARRAY_ARGS = []

    def setUp(self):
        super().setUp()
        self.array = self.useFixture(array_fixture.ReferenceArray(
            args=['--capacity-gib', '64', '--linstor-local-node',
                  LOCAL_NODE] + self.ARRAY_ARGS))
        self.ctx = context.get_admin_context()
        self.driver = self.make_driver()

    def backend_options(self):
        return {'linstor_uris': [self.array.linstor_url],
                'linstor_local_node': LOCAL_NODE}

    def requests(self):
        return self.array.linstor_requests()

    def volume(self, size=1, vtype=None, pool='DfltStorPool', **updates):
        return super().volume(size, vtype, host='cinder@%s#%s' % (
            self.BACKEND, pool), **updates)

    def rd(self, vol):
        status, body = self.array.linstor(
            'GET', '/v1/resource-definitions/volume-%s' % vol.name_id)
        return body if status == 200 else None

    def replicas(self, vol):
        """{node: (diskless, pool)} of the volume's resources."""
        _status, rows = self.array.linstor(
            'GET', '/v1/view/resources',
            params={'resources': 'volume-%s' % vol.name_id})
        return {r['node_name']: ('DRBD_DISKLESS' in r['flags'],
                                 r['volumes'][0]['storage_pool_name'])
                for r in rows}

    def diskful(self, vol):
        return sorted(n for n, (dl, _p) in self.replicas(vol).items()
                      if not dl)

    def device(self, vol, node):
        """A qemu URL of the volume's emulated DRBD device on ``node``."""
        from cinder_driver.tests.functional import iscsi_client
        vd = self.rd(vol)['volume_definitions'][0]
        minor = [d['data']['minor_number'] for d in vd['layer_data']
                 if d['type'] == 'DRBD'][0]
        return iscsi_client.url(
            self.array.info['iscsi_portal'], self.array.info['iqn'],
            minor - 1000,
            'iqn.2026-11.io.cinder-flash:linstor.%s' % node)

    def write(self, vol, node, command):
        from cinder_driver.tests.functional import iscsi_client
        result = iscsi_client.qemu_io(self.device(vol, node), command)
        self.assertEqual(0, result.returncode, result.stderr)
        return result.stdout

    def pattern_at(self, vol, node, offset, length, pattern):
        """Whether the device reads back bytes of ``pattern`` there."""
        from cinder_driver.tests.functional import iscsi_client
        result = iscsi_client.qemu_io(self.device(vol, node), 'read -P %d '
                                      '%d %d' % (pattern, offset, length))
        return result.returncode == 0 and 'Pattern verification failed' \
            not in result.stdout + result.stderr
