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

"""The reference array's LINSTOR dialect: wire rules and faithfulness.

Every answer of a full scenario is validated against LINSTOR's official
OpenAPI description; python-linstor (the vendor's client) and Cinder 29's
in-tree LINSTOR driver run their lifecycles against it unmodified.
"""

import os
import re

import jsonschema
import testtools
import yaml

from reference_array.tests import array_fixture

SPEC = os.path.join(os.path.dirname(__file__), 'data',
                    'linstor-rest-v1-openapi.yaml')
RD_CREATED = 20447233
RD_EXISTS = -4611686018406940171
RD_NOT_FOUND = -4611686018423717587
RD_DELETE_MISSING = -9223372036800771144


def _any_of(node):
    """oneOf -> anyOf.

    The spec tells layer data apart by the sibling ``type`` field, which
    JSON Schema cannot see, so every layer's data also fits the other
    layers' schemas.
    """
    if isinstance(node, dict):
        return {('anyOf' if k == 'oneOf' else k): _any_of(v)
                for k, v in node.items()}
    if isinstance(node, list):
        return [_any_of(v) for v in node]
    return node


def _load_spec():
    with open(SPEC) as f:
        return _any_of(yaml.safe_load(f))


def _schema_for(spec, method, path, status):
    """The response schema the spec gives, or None; and the template."""
    for template, item in spec['paths'].items():
        pattern = '^' + re.sub(r'\{[^}]+\}', '[^/]+', template) + '$'
        if not re.match(pattern, path):
            continue
        operation = item.get(method.lower())
        if operation is None:
            continue
        response = operation['responses'].get(str(status))
        if response is None:
            return template, False
        schema = (response.get('content') or {}).get(
            'application/json', {}).get('schema')
        return template, schema
    return None, None


class LinstorWireTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.array = self.useFixture(array_fixture.ReferenceArray(
            args=['--capacity-gib', '16', '--linstor-local-node',
                  'client-1']))
        self.seen = []

    def call(self, method, path, body=None, params=None, raw=None):
        if raw is not None:
            import requests
            resp = requests.request(method, self.array.linstor_url + path,
                                    data=raw, timeout=30)
            status, reply = resp.status_code, resp.json()
        else:
            status, reply = self.array.linstor(method, path, body, params)
        self.seen.append((method, path, status, reply))
        return status, reply

    def test_ret_codes_and_statuses(self):
        status, reply = self.call('POST', '/v1/resource-definitions', {
            'resource_definition': {'name': 'demo1'}})
        self.assertEqual((201, RD_CREATED), (status, reply[0]['ret_code']))
        self.assertEqual({'RscDfn': 'demo1'}, reply[0]['obj_refs'])
        status, reply = self.call('POST', '/v1/resource-definitions', {
            'resource_definition': {'name': 'demo1'}})
        self.assertEqual((500, RD_EXISTS), (status, reply[0]['ret_code']))
        status, reply = self.call('GET', '/v1/resource-definitions/nope')
        self.assertEqual((404, RD_NOT_FOUND), (status, reply[0]['ret_code']))
        status, reply = self.call('DELETE', '/v1/resource-definitions/nope')
        self.assertEqual((200, RD_DELETE_MISSING),
                         (status, reply[0]['ret_code']))
        status, reply = self.call('GET', '/v1/resource-definitions',
                                  params={'resource_definitions': 'nope'})
        self.assertEqual((200, []), (status, reply))
        status, reply = self.call('POST', '/v1/resource-definitions',
                                  raw=b'{"resource_definition": ')
        self.assertEqual(400, status)
        self.assertLess(reply[0]['ret_code'], 0)
        status, reply = self.call('POST', '/v1/resource-definitions', {
            'resource_definition': {'name': '1-starts-with-a-digit'}})
        self.assertEqual(500, status)
        self.assertIn('1-starts-with-a-digit', reply[0]['message'])
        status, version = self.call('GET', '/v1/controller/version')
        self.assertEqual('1.28.0', version['rest_api_version'])

    def test_external_names_and_lenient_bodies(self):
        status, reply = self.call('POST', '/v1/resource-definitions', {
            'resource_definition': {
                'name': '',
                'external_name': '1f0b7a40-3c6e-4bd9-8c53-4f0e3b1b2c3d'}})
        self.assertEqual(201, status)
        self.assertEqual('LS_1F0B7A40-3C6E-4BD9-8C53-4F0E3B1B2C3D',
                         reply[0]['obj_refs']['RscDfn'])
        # Numbers as strings, nulls for absent fields, an empty body.
        status, _r = self.call('POST', '/v1/resource-groups', {
            'name': 'rg1', 'select_filter': {'place_count': '3',
                                             'diskless_on_remaining': None}})
        self.assertEqual(201, status)
        _s, rg = self.call('GET', '/v1/resource-groups/rg1')
        self.assertEqual(3, rg['select_filter']['place_count'])
        status, _r = self.call('POST', '/v1/resource-groups/rg1/spawn', {
            'resource_definition_name': 'vol9', 'volume_sizes': [5242880],
            'partial': False, 'definitions_only': False,
            'select_filter': {}})
        self.assertEqual(201, status)
        status, reply = self.call(
            'POST', '/v1/resource-definitions/vol9/resources/client-1/'
            'make-available')
        self.assertEqual(200, status)
        _s, rsc = self.call('GET',
                            '/v1/resource-definitions/vol9/resources/'
                            'client-1')
        self.assertEqual(['DISKLESS', 'DRBD_DISKLESS'], rsc['flags'])
        # The deprecated DISKLESS flag works, with a warning.
        self.call('DELETE', '/v1/resource-definitions/vol9/resources/'
                  'client-1')
        status, reply = self.call(
            'POST', '/v1/resource-definitions/vol9/resources',
            [{'resource': {'node_name': 'client-1', 'flags': ['DISKLESS']}}])
        self.assertEqual(201, status)
        self.assertTrue(any(e['ret_code'] < 0 and 'deprecated' in
                            e['message'] for e in reply))
        status, reply = self.call('PUT', '/v1/resource-definitions/vol9', {
            'override_props': {'DrbdOptions/Net/protocol': 'D'}})
        self.assertEqual(500, status)
        self.assertIn('DrbdOptions/Net/protocol', reply[0]['message'])

    def test_every_answer_matches_the_openapi_spec(self):
        spec = _load_spec()
        calls = [
            ('GET', '/v1/controller/version', None),
            ('GET', '/v1/controller/properties', None),
            ('POST', '/v1/controller/properties',
             {'override_props': {'Aux/site': 'lab'}}),
            ('GET', '/v1/nodes', None),
            ('GET', '/v1/view/storage-pools', None),
            ('GET', '/v1/nodes/sat-1/storage-pools', None),
            ('GET', '/v1/storage-pool-definitions', None),
            ('POST', '/v1/resource-groups', {
                'name': 'gold', 'select_filter': {
                    'place_count': 2, 'storage_pool_list': ['DfltStorPool']},
                'props': {'DrbdOptions/Disk/disk-flushes': 'no'}}),
            ('PUT', '/v1/resource-groups/gold', {
                'override_props': {'DrbdOptions/Net/max-buffers': '8000'}}),
            ('GET', '/v1/resource-groups', None),
            ('POST', '/v1/resource-groups/gold/volume-groups', {}),
            ('GET', '/v1/resource-groups/gold/volume-groups', None),
            ('POST', '/v1/resource-groups/gold/query-size-info', {}),
            ('POST', '/v1/resource-groups/gold/spawn', {
                'resource_definition_name': 'vol1',
                'volume_sizes': [1048576]}),
            ('POST', '/v1/resource-definitions', {
                'resource_definition': {'name': 'vol2'}}),
            ('POST', '/v1/resource-definitions/vol2/volume-definitions', {
                'volume_definition': {'size_kib': 1048576}}),
            ('PUT', '/v1/resource-definitions/vol2/volume-definitions/0', {
                'size_kib': 2097152}),
            ('GET', '/v1/resource-definitions/vol2/volume-definitions', None),
            ('POST', '/v1/resource-definitions/vol2/autoplace', {
                'select_filter': {'place_count': 2}}),
            ('GET', '/v1/resource-definitions', None),
            ('PUT', '/v1/resource-definitions/vol2', {
                'override_props': {'DrbdOptions/Net/protocol': 'C'}}),
            ('GET', '/v1/resource-definitions/vol2/resources', None),
            ('GET', '/v1/view/resources', None),
            ('POST', '/v1/resource-definitions/vol2/resources', [
                {'resource': {'node_name': 'client-1',
                              'flags': ['DRBD_DISKLESS']}}]),
            ('PUT', '/v1/resource-definitions/vol2/resources/client-1', {
                'override_props': {'Aux/attached': 'yes'}}),
            ('POST', '/v1/resource-definitions/vol2/snapshots',
             {'name': 'snap1'}),
            ('GET', '/v1/resource-definitions/vol2/snapshots', None),
            ('GET', '/v1/view/snapshots', None),
            ('POST', '/v1/actions/snapshot/multi', {'snapshots': [
                {'name': 'cut1', 'resource_name': 'vol1'},
                {'name': 'cut1', 'resource_name': 'vol2'}]}),
            ('DELETE', '/v1/resource-definitions/vol2/snapshots/cut1', None),
            ('POST', '/v1/resource-definitions/vol2/snapshot-rollback/cut1',
             {}),
            ('POST', '/v1/resource-definitions', {
                'resource_definition': {'name': 'vol3'}}),
            ('POST', '/v1/resource-definitions/vol2/'
             'snapshot-restore-volume-definition/snap1',
             {'to_resource': 'vol3'}),
            ('POST', '/v1/resource-definitions/vol2/'
             'snapshot-restore-resource/snap1', {'to_resource': 'vol3'}),
            ('POST', '/v1/resource-definitions/vol2/clone',
             {'name': 'vol4'}),
            ('GET', '/v1/resource-definitions/vol2/clone/vol4', None),
            ('GET', '/v1/resource-definitions/vol2/sync-status', None),
            ('POST', '/v1/resource-definitions/vol2/resources', [
                {'resource': {'node_name': 'sat-3',
                              'flags': ['DRBD_DISKLESS']}}]),
            ('PUT', '/v1/resource-definitions/vol2/resources/sat-3/'
             'toggle-disk', {'operation': 'INTO_DRBD_DISKFUL'}),
            ('PUT', '/v1/resource-definitions/vol2/resources/client-1/'
             'toggle-disk', {'operation': 'INTO_DRBD_DISKFUL'}),
            ('DELETE', '/v1/resource-definitions/vol2/resources/client-1',
             None),
            ('POST', '/v1/resource-definitions/vol2/resources/client-1/'
             'make-available', {'diskful': False}),
            ('PUT', '/v1/nodes/sat-3/evacuate', None),
            ('PUT', '/v1/nodes/sat-3/restore', None),
            ('DELETE', '/v1/resource-definitions/vol2/snapshots/snap1',
             None),
            ('DELETE', '/v1/resource-definitions/vol2/snapshots/snap1',
             None),
            ('DELETE', '/v1/resource-definitions/vol4', None),
            ('DELETE', '/v1/resource-definitions/vol4', None),
            ('GET', '/v1/resource-definitions/vol4/volume-definitions', None),
            ('DELETE', '/v1/controller/properties/Aux%2Fsite', None),
        ]
        for method, path, body in calls:
            status, _reply = self.call(method, path, body)
            if 'client-1/toggle-disk' in path:
                # client-1 has no pool for a disk: a clean refusal.
                self.assertEqual(404, status)
                continue
            self.assertLess(status, 500, (method, path, _reply))
        registry_root = dict(spec)
        rc_schema = spec['components']['schemas']['ApiCallRc']
        checked = set()
        for method, path, status, reply in self.seen:
            template, schema = _schema_for(spec, method, path, status)
            self.assertIsNotNone(template, 'not in the spec: %s %s' % (
                method, path))
            if status >= 400:
                for entry in reply:
                    jsonschema.validate(entry, dict(rc_schema, components=spec[
                        'components']))
                continue
            self.assertIsInstance(schema, dict, 'no %s answer for %s %s in '
                                  'the spec' % (status, method, template))
            jsonschema.validate(reply, dict(schema, components=registry_root[
                'components']))
            checked.add((method, template))
        self.assertGreaterEqual(len(checked), 40)

    def test_python_linstor_lifecycle(self):
        import linstor
        url = self.array.linstor_url.replace('http://', 'linstor://')
        with linstor.Linstor(url) as lin:
            def ok(replies):
                self.assertTrue(linstor.Linstor.all_api_responses_no_error(
                    replies), [str(r) for r in replies])
            self.assertEqual(['client-1', 'sat-1', 'sat-2', 'sat-3'],
                             sorted(n.name for n in
                                    lin.node_list_raise().nodes))
            pools = lin.storage_pool_list_raise().storage_pools
            self.assertIn('LVM_THIN', {p.provider_kind for p in pools})
            ok(lin.resource_group_create('rg1', place_count=2,
                                         storage_pool='DfltStorPool'))
            ok(lin.volume_group_create('rg1'))
            ok(lin.resource_group_spawn('rg1', 'spawned1', ['1G']))
            ok(lin.resource_dfn_create('rd2'))
            ok(lin.volume_dfn_create('rd2', 1048576))
            ok(lin.resource_auto_place('rd2', 2, ['DfltStorPool']))
            ok(lin.snapshot_create(None, 'rd2', 'snap1'))
            self.assertEqual(['snap1'], [
                s.name for s in lin.snapshot_dfn_list()[0].snapshots])
            ok(lin.snapshot_delete('rd2', 'snap1'))
            started = lin.resource_dfn_clone('rd2', 'rd3')
            self.assertEqual('rd3', started.clone_name)
            self.assertTrue(lin.resource_dfn_clone_wait_complete(
                'rd2', 'rd3', timeout=30))
            placed = {(r.name, r.node_name) for r in
                      lin.resource_list_raise().resources}
            self.assertEqual(2, len([p for p in placed if p[0] == 'rd3']))
            ok(lin.resource_make_available('client-1', 'rd3',
                                           diskful=False))
            volumes = lin.volume_list_raise(
                filter_by_resources=['rd3']).resources
            paths = {r.node_name: r.volumes[0].device_path for r in volumes}
            self.assertTrue(paths['client-1'].startswith('/dev/drbd'))
            ok(lin.resource_dfn_delete('rd3'))
            ok(lin.resource_dfn_delete('never-made'))
