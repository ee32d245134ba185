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

"""LINSTOR's answers on the wire, the same on our dialect and on LINSTOR.

Raw REST calls, no driver: each test states what LINSTOR 1.33 answers
(status, ret_code mask, object, operation and code, the shape of the
reply) and passes against a real controller (``tox -e linstor-real``)
and against the reference array's LINSTOR dialect.
"""

import uuid

import requests
import testtools

from cinder_driver.tests.functional import linstor_target

LOCAL_NODE = 'cinder-node'
ERROR, WARN, INFO = 0xC000000000000000, 0x8000000000000000, \
    0x4000000000000000
OPS = {0: None, 0x1000000: 'create', 0x2000000: 'modify',
       0x3000000: 'delete'}
OBJECTS = {0x3C0000: 'node', 0x380000: 'rsc_dfn', 0x340000: 'rsc',
           0x300000: 'vlm_dfn', 0x2C0000: 'vlm', 0x0C0000: 'snapshot',
           0x440000: 'rsc_grp', 0x480000: 'vlm_grp', 0: None}


def decode(ret_code):
    """(kind, operation, object, code) of a LINSTOR ret_code."""
    value = ret_code + (1 << 64) if ret_code < 0 else ret_code
    kind = {ERROR: 'error', WARN: 'warn', INFO: 'info', 0: 'ok'}[
        value & 0xC000000000000000]
    return (kind, OPS[value & 0x3000000], OBJECTS.get(value & 0x7C0000),
            value & 0x7FFF)


class LinstorWireTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        if linstor_target.real_url():
            self.target = self.useFixture(linstor_target.RealController())
        else:
            self.target = self.useFixture(linstor_target.DialectController(
                LOCAL_NODE))
        self.prefix = 'cft-w%s' % uuid.uuid4().hex[:8]
        self.group = self.make_group(self.target.pool)

    def call(self, method, path, body=None, **kw):
        return self.target.linstor(method, path, body, **kw)

    def raw(self, method, path, data):
        """(status, reply) of a call whose body is sent as given."""
        resp = requests.request(
            method, self.target.url + path, data=data, timeout=60,
            headers={'Content-Type': 'application/json'},
            verify=self.target.verify)
        return resp.status_code, resp.json() if resp.content else None

    def make_group(self, pool, suffix='rg'):
        name = '%s-%s' % (self.prefix, suffix)
        status, reply = self.call('POST', '/v1/resource-groups', {
            'name': name, 'select_filter': {
                'place_count': 1, 'storage_pool': pool,
                'layer_stack': ['STORAGE']}})
        self.assertEqual(201, status, reply)
        self.addCleanup(self.call, 'DELETE', '/v1/resource-groups/' + name)
        return name

    def spawn(self, suffix, size_kib=4096, group=None):
        name = '%s-%s' % (self.prefix, suffix)
        self.addCleanup(self.call, 'DELETE',
                        '/v1/resource-definitions/' + name)
        status, reply = self.call(
            'POST', '/v1/resource-groups/%s/spawn' % (group or self.group),
            {'resource_definition_name': name, 'volume_sizes': [size_kib]})
        return name, status, reply

    def new_rd(self, suffix, **extra):
        name = '%s-%s' % (self.prefix, suffix)
        self.addCleanup(self.call, 'DELETE',
                        '/v1/resource-definitions/' + name)
        body = dict({'resource_definition': {'name': name}}, **extra)
        status, reply = self.call('POST', '/v1/resource-definitions', body)
        return name, status, reply

    def snapshot(self, rd, name):
        self.addCleanup(self.call, 'DELETE', '/v1/resource-definitions/%s/'
                        'snapshots/%s' % (rd, name))
        return self.call('POST', '/v1/resource-definitions/%s/snapshots' %
                         rd, {'name': name})

    def assertRefused(self, status, reply, code, obj=None, op=None,
                      http=500):
        """The reply is LINSTOR's refusal.

        ``http`` with an ApiCallRc list whose error entry carries ``code``
        on ``obj``/``op``.
        """
        self.assertEqual(http, status, reply)
        self.assertIsInstance(reply, list)
        errors = [e for e in reply if decode(e['ret_code'])[0] == 'error']
        self.assertTrue(errors, reply)
        self.assertEqual(('error', op, obj, code),
                         decode(errors[-1]['ret_code']), errors)
        return errors[-1]

    # -- refusals -----------------------------------------------------------
    def test_an_existing_definition_is_refused_with_500_and_its_mask(self):
        name, status, _reply = self.new_rd('a')
        self.assertEqual(201, status)
        _n, status, reply = self.new_rd('a')
        self.assertRefused(status, reply, 501, 'rsc_dfn', 'create')
        status, reply = self.call('GET', '/v1/resource-definitions/%s-zz' %
                                  self.prefix)
        self.assertEqual(404, status, reply)
        self.assertEqual(('error', 301), decode(reply[0]['ret_code'])[::3])

    def test_a_name_ending_in_a_newline_is_refused(self):
        _n, status, reply = self.new_rd('nl\n')
        entry = self.assertRefused(status, reply, 202, 'rsc_dfn', 'create')
        self.assertIn("Cannot contain character '\n'", entry['cause'])

    def test_volume_numbers_and_minors_are_range_checked(self):
        name, status, _reply = self.new_rd('vn')
        self.assertEqual(201, status)
        path = '/v1/resource-definitions/%s/volume-definitions' % name
        status, reply = self.call('POST', path, {'volume_definition': {
            'volume_number': 65535, 'size_kib': 4096}})
        self.assertRefused(status, reply, 205, 'vlm_dfn', 'create')
        status, reply = self.call('POST', path, {
            'volume_definition': {'volume_number': 3, 'size_kib': 4096},
            'drbd_minor_number': 2 ** 20})
        entry = self.assertRefused(status, reply, 207, 'vlm_dfn', 'create')
        self.assertIn('out of range', entry['cause'])
        minor = 900000 + uuid.uuid4().int % 100000
        status, reply = self.call('POST', path, {
            'volume_definition': {'volume_number': 1, 'size_kib': 4096},
            'drbd_minor_number': minor})
        self.assertIn(status, (200, 201), reply)
        status, reply = self.call('POST', path, {
            'volume_definition': {'volume_number': 2, 'size_kib': 4096},
            'drbd_minor_number': minor})
        entry = self.assertRefused(status, reply, 207, 'vlm_dfn', 'create')
        self.assertIn('already in use', entry['cause'])

    def test_drbd_port_is_range_checked_and_may_repeat(self):
        _n, status, reply = self.new_rd('p1', drbd_port=70000)
        entry = self.assertRefused(status, reply, 998, 'rsc_dfn', 'create')
        self.assertIn('70000 is out of range', entry['message'])
        port = 30000 + uuid.uuid4().int % 10000
        for suffix in ('p2', 'p3'):
            _n, status, reply = self.new_rd(suffix, drbd_port=port)
            self.assertEqual(201, status, reply)

    def test_group_peer_slots_are_limited_to_drbd_peers(self):
        status, reply = self.call('POST', '/v1/resource-groups', {
            'name': self.prefix + '-ps', 'peer_slots': 40})
        self.addCleanup(self.call, 'DELETE', '/v1/resource-groups/%s-ps' %
                        self.prefix)
        self.assertRefused(status, reply, 998)

    def test_property_keys_must_be_whitelisted(self):
        name, status, _reply = self.new_rd('pk')
        path = '/v1/resource-definitions/' + name
        for key in ('Foo/bar', ' Aux/x', 'Unknown'):
            status, reply = self.call('PUT', path, {
                'override_props': {key: '1'}})
            entry = self.assertRefused(status, reply, 213, 'rsc_dfn',
                                       'modify')
            self.assertIn('not whitelisted', entry['cause'])
        status, reply = self.call('PUT', path, {'delete_props': ['Foo/bar']})
        self.assertRefused(status, reply, 213, 'rsc_dfn', 'modify')
        # The free-form namespace takes any key, spaces included.
        status, reply = self.call('PUT', path, {
            'override_props': {'Aux/has space': '1'}})
        self.assertEqual(200, status, reply)

    # -- quirks a client must live with --------------------------------------
    def test_group_create_ignores_its_props(self):
        status, reply = self.call('POST', '/v1/resource-groups', {
            'name': self.prefix + '-gp', 'props': {'Aux/x': '1'}})
        self.addCleanup(self.call, 'DELETE', '/v1/resource-groups/%s-gp' %
                        self.prefix)
        self.assertEqual(201, status, reply)
        _s, group = self.call('GET', '/v1/resource-groups/%s-gp' %
                              self.prefix)
        self.assertNotIn('Aux/x', group.get('props') or {})

    def test_definition_get_has_no_volume_definitions(self):
        name, status, reply = self.spawn('vd')
        self.assertEqual(201, status, reply)
        _s, rd = self.call('GET', '/v1/resource-definitions/' + name,
                           params={'with_volume_definitions': 'true'})
        self.assertNotIn('volume_definitions', rd)
        _s, rds = self.call('GET', '/v1/resource-definitions', params={
            'resource_definitions': name, 'with_volume_definitions': 'true'})
        self.assertEqual([4096], [vd['size_kib'] for vd in
                                  rds[0]['volume_definitions']])
        _s, vds = self.call('GET', '/v1/resource-definitions/%s/'
                            'volume-definitions' % name)
        self.assertEqual([4096], [vd['size_kib'] for vd in vds])

    def test_storage_only_volumes_report_no_usable_size(self):
        name, status, reply = self.spawn('us')
        self.assertEqual(201, status, reply)
        _s, rows = self.call('GET', '/v1/view/resources',
                             params={'resources': name})
        volumes = [v for row in rows for v in row['volumes']]
        self.assertEqual(1, len(volumes))
        self.assertNotIn('usable_size_kib', volumes[0])
        layer = volumes[0]['layer_data_list'][0]
        self.assertEqual('STORAGE', layer['type'])
        self.assertIn('usable_size_kib', layer['data'])

    def test_snapshot_names_ignore_case(self):
        name, status, reply = self.spawn('sc')
        self.assertEqual(201, status, reply)
        status, reply = self.snapshot(name, 'Snap1')
        self.assertEqual(201, status, reply)
        status, reply = self.snapshot(name, 'snap1')
        self.assertRefused(status, reply, 514, 'snapshot', 'create')
        status, snap = self.call('GET', '/v1/resource-definitions/%s/'
                                 'snapshots/SNAP1' % name)
        self.assertEqual((200, 'Snap1'), (status, snap['name']))

    def test_restore_into_a_definition_with_resources_is_refused(self):
        src, status, reply = self.spawn('rs')
        self.assertEqual(201, status, reply)
        self.snapshot(src, 'snap')
        dst, status, reply = self.spawn('rd')
        self.assertEqual(201, status, reply)
        status, reply = self.call(
            'POST', '/v1/resource-definitions/%s/snapshot-restore-resource/'
            'snap' % src, {'to_resource': dst})
        entry = self.assertRefused(status, reply, 502, 'rsc', 'create')
        self.assertIn('already has resources', entry['message'])

    def test_rollback_to_an_older_snapshot(self):
        name, status, reply = self.spawn('rb')
        self.assertEqual(201, status, reply)
        self.snapshot(name, 'first')
        self.snapshot(name, 'second')
        status, reply = self.call(
            'POST', '/v1/resource-definitions/%s/snapshot-rollback/first' %
            name, {})
        self.assertEqual(200, status, reply)
        _s, snaps = self.call('GET', '/v1/view/snapshots',
                              params={'resources': name})
        self.assertEqual(['first', 'second'],
                         sorted(s['name'] for s in snaps))

    def test_clone_is_refused_on_file_pools(self):
        pool = self.file_pool()
        group = self.make_group(pool, 'file')
        name, status, reply = self.spawn('cl', group=group)
        self.assertEqual(201, status, reply)
        clone = self.prefix + '-cl2'
        self.addCleanup(self.call, 'DELETE',
                        '/v1/resource-definitions/' + clone)
        status, reply = self.call(
            'POST', '/v1/resource-definitions/%s/clone' % name,
            {'name': clone})
        self.assertEqual(500, status, reply)
        self.assertEqual((name, clone), (reply['source_name'],
                                         reply['clone_name']))
        entry = self.assertRefused(500, reply['messages'], 227, 'rsc_dfn',
                                   'create')
        self.assertEqual('Clone source contains unsupported storage pools',
                         entry['message'])
        self.assertTrue(entry['error_report_ids'])

    def file_pool(self):
        _s, pools = self.call('GET', '/v1/view/storage-pools')
        for pool in pools:
            if pool['provider_kind'] in ('FILE', 'FILE_THIN'):
                return pool['storage_pool_name']
        if self.target.real:
            self.skipTest('the controller has no FILE or FILE_THIN pool')
        # The array's nodes have none: make one, as LINSTOR's API does.
        for node in self.target.nodes:
            status, reply = self.call(
                'POST', '/v1/nodes/%s/storage-pools' % node, {
                    'storage_pool_name': 'filethin',
                    'provider_kind': 'FILE_THIN'})
            self.assertEqual(201, status, reply)
        return 'filethin'

    # -- sizes ----------------------------------------------------------------
    def thin_pool(self):
        _s, pools = self.call('GET', '/v1/view/storage-pools',
                              params={'storage_pools': self.target.pool})
        pool = pools[0]
        if pool['static_traits'].get('Provisioning') != 'Thin' and \
                pool['provider_kind'] not in ('LVM_THIN', 'ZFS_THIN',
                                              'FILE_THIN'):
            self.skipTest('%s is not thin' % self.target.pool)
        return pool

    def test_thin_pools_refuse_new_volumes_beyond_oversubscription(self):
        pool = self.thin_pool()
        _name, status, reply = self.spawn(
            'os', size_kib=pool['total_capacity'] * 21)
        self.assertRefused(status, reply, 996, 'rsc_grp', 'create')
        # A resize is not held to the ratio.
        name, status, reply = self.spawn('os2')
        self.assertEqual(201, status, reply)
        status, reply = self.call(
            'PUT', '/v1/resource-definitions/%s/volume-definitions/0' % name,
            {'size_kib': pool['total_capacity'] * 21})
        self.assertEqual(200, status, reply)

    def test_a_resize_no_satellite_can_make_fails_and_stays(self):
        self.thin_pool()
        name, status, reply = self.spawn('big')
        self.assertEqual(201, status, reply)
        path = '/v1/resource-definitions/%s/volume-definitions/0' % name
        status, reply = self.call('PUT', path, {'size_kib': 2 ** 63 - 1})
        self.assertEqual(500, status, reply)
        self.assertEqual(('ok', 'modify', 'vlm_dfn', 3),
                         decode(reply[0]['ret_code']))
        self.assertIn(('error', 'modify', 'vlm_dfn', 998),
                      [decode(e['ret_code']) for e in reply])
        _s, vd = self.call('GET', path)
        self.assertEqual((2 ** 63 - 1, ['RESIZE']),
                         (vd['size_kib'], vd['flags']))

    def test_thick_volumes_cannot_grow_past_their_pool(self):
        pool = self.target.thick_pool
        if not pool:
            self.skipTest('needs a thick pool')
        group = self.make_group(pool, 'thick')
        name, status, reply = self.spawn('tk', group=group)
        self.assertEqual(201, status, reply)
        _s, pools = self.call('GET', '/v1/view/storage-pools',
                              params={'storage_pools': pool})
        path = '/v1/resource-definitions/%s/volume-definitions/0' % name
        status, reply = self.call('PUT', path, {
            'size_kib': pools[0]['total_capacity'] * 2})
        entry = self.assertRefused(status, reply, 980, 'vlm_dfn', 'modify')
        self.assertIn('do not have enough free space', entry['message'])
        _s, vd = self.call('GET', path)
        self.assertEqual(4096, vd['size_kib'])

    def test_query_max_volume_size(self):
        status, reply = self.call('OPTIONS', '/v1/query-max-volume-size',
                                  {'place_count': 1})
        self.assertEqual(200, status, reply)
        self.assertTrue(reply['candidates'])
        for cand in reply['candidates']:
            self.assertEqual({'storage_pool', 'max_volume_size_kib',
                              'node_names', 'all_thin'}, set(cand))
        self.assertEqual(20.0, reply['default_max_oversubscription_ratio'])
        status, reply = self.call('OPTIONS', '/v1/query-max-volume-size', {})
        self.assertRefused(status, reply, 219)
        status, reply = self.call('GET', '/v1/resource-groups/%s/'
                                  'query-max-volume-size' % self.group)
        self.assertIn(status, (200, 500), reply)

    # -- lists ----------------------------------------------------------------
    def test_definitions_are_listed_by_upper_cased_name(self):
        # LINSTOR keeps them in a map sorted by the upper-cased name
        # (``_`` after the letters), whatever order they came in.
        for suffix in ('b-x', 'A_x', 'ab', 'Aa', 'a-1'):
            _n, status, reply = self.new_rd(suffix)
            self.assertEqual(201, status, reply)
        status, listed = self.call('GET', '/v1/resource-definitions')
        self.assertEqual(200, status, listed)
        names = [d['name'] for d in listed]
        mark = self.prefix + '-'
        self.assertEqual(['a-1', 'Aa', 'ab', 'A_x', 'b-x'], [
            n[len(mark):] for n in names if n.startswith(mark)])
        self.assertEqual(sorted(names, key=str.upper), names)
        start = names.index(mark + 'Aa')
        status, page = self.call('GET', '/v1/resource-definitions',
                                 params={'limit': 2, 'offset': start})
        self.assertEqual(names[start:start + 2], [d['name'] for d in page])
        # Without a limit there is no page: the offset is ignored.
        status, page = self.call('GET', '/v1/resource-definitions',
                                 params={'offset': start})
        self.assertEqual(names, [d['name'] for d in page])
        # A negative offset is the exception Java's Stream.skip throws.
        status, reply = self.call('GET', '/v1/resource-definitions',
                                  params={'limit': 2, 'offset': -1})
        entry = self.assertRefused(status, reply, 998)
        self.assertEqual(('Exception thrown.', '-1'),
                         (entry['message'], entry.get('details')))

    def test_views_filtered_by_an_unknown_node_are_404(self):
        # LINSTOR loads each node a view of resources or storage pools
        # names, to ask it for space, and refuses one it does not know.
        node = self.prefix + '-nonode'
        known = self.target.nodes[0]
        for path, nodes in (('/v1/view/resources', [node]),
                            ('/v1/view/resources', [known, node]),
                            ('/v1/view/storage-pools', [node])):
            status, reply = self.call('GET', path, params={'nodes': nodes})
            entry = self.assertRefused(status, reply, 300, http=404)
            self.assertEqual("Node '%s' not found." % node, entry['message'])
            self.assertIn(node, entry['correction'])
        # The other filters, a storage-pool view from the cache and the
        # snapshot view filter quietly.
        for path, params in (
                ('/v1/view/resources', {'resources': self.prefix + '-no'}),
                ('/v1/view/resources', {'storage_pools': 'nopool'}),
                ('/v1/view/storage-pools', {'storage_pools': 'nopool'}),
                ('/v1/view/storage-pools', {'nodes': node,
                                            'cached': 'true'}),
                ('/v1/view/snapshots', {'nodes': node})):
            self.assertEqual((200, []), self.call('GET', path,
                                                  params=params), path)
        status, rows = self.call('GET', '/v1/view/storage-pools',
                                 params={'nodes': known.upper()})
        self.assertEqual(200, status, rows)
        self.assertTrue(rows)

    # -- bodies and reports ---------------------------------------------------
    def test_unreadable_bodies_are_400_and_reported(self):
        path = '/v1/resource-definitions'
        bodies = [
            '{"resource_definition": {"name": "%s-i"}, "drbd_port": '
            'Infinity}' % self.prefix,
            '{"resource_definition": {"name": "%s-j", "props": %s1%s}}' % (
                self.prefix, '[' * 5000, ']' * 5000),
            '{"resource_definition": ',
        ]
        ids = []
        for body in bodies:
            status, reply = self.raw('POST', path, body)
            self.assertEqual(400, status, reply)
            self.assertEqual('Unable to parse input json.',
                             reply[0]['message'])
            self.assertEqual(0xCFFFFFFFFFFFFFFD,
                             reply[0]['ret_code'] + (1 << 64))
            ids += reply[0]['error_report_ids']
        status, reports = self.call('GET', '/v1/error-reports')
        self.assertEqual(200, status)
        names = {r['filename'] for r in reports}
        for report_id in ids:
            self.assertIn('ErrorReport-%s.log' % report_id, names)
        # The body of a GET is not read.
        status, reply = self.raw('GET', '/v1/resource-groups/' + self.group,
                                 '{not json')
        self.assertEqual((200, self.group), (status, reply['name']))
