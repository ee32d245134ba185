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

"""Hostile input: extra specs, replication_device values and array replies.

Seeded random inputs (repeatable); whatever comes in, the answer is a
result or a clear Cinder exception, never an exception from inside the
driver's own code.
"""

import json
import random

from cinder import context
from cinder import exception
from cinder.tests.unit import fake_snapshot
from cinder.tests.unit import fake_volume
from cinder.tests.unit import test
from cinder.volume import configuration
from cinder.volume import driver as volume_driver
from oslo_utils import uuidutils

from cinder_driver.common import exception as flash_exception
from cinder_driver.k2 import driver as k2_driver
from cinder_driver.k2 import replication
from cinder_driver.k2 import specs as k2_specs
from cinder_driver.tests.unit import fake_http

ROUNDS = 300
NASTY = ['', ' ', '0', '-1', '1e309', 'nan', 'True', 'false', '<is> True',
         '<is> maybe', 'dedup', 'nodedup', 'enabled', '\u00e9t\u00e9',
         '\U0001f4be', "'; DROP TABLE volumes; --", '$(reboot)',
         '../../etc/passwd', '%s%s%n', 'x' * 5000, '\x00', '\n[DEFAULT]\n',
         '{"ref": "/volumes/1"}', 'a:b,c:d', '9' * 40]
KEYS = ['k2:dedup', 'k2:dedupe', 'k2:', 'kaminario:thin_prov_type',
        'kaminario:replication', 'replication_enabled',
        'capabilities:k2:dedup', 'K2:DEDUP', 'k2:qos', 'volume_backend_name',
        'thin_provisioning_support', '\u00e9:x']
CONNECTOR = {'host': 'h1', 'initiator': 'iqn.2026-01.io.test:h1',
             'wwpns': ['10000090fa000001']}


class SpecFuzzTestCase(test.TestCase):

    def test_extra_specs(self):
        rnd = random.Random(7)
        for _n in range(ROUNDS):
            specs = {rnd.choice(KEYS): rnd.choice(NASTY)
                     for _k in range(rnd.randint(1, 4))}
            for replication_ok in (False, True):
                try:
                    result = k2_specs.volume_specs({'extra_specs': specs},
                                                   replication_ok)
                except exception.InvalidVolumeType:
                    continue
                self.assertIsInstance(result['dedup'], bool)

    def test_qos_specs(self):
        from cinder import objects
        rnd = random.Random(11)
        for _n in range(ROUNDS):
            vtype = fake_volume.fake_volume_type_obj(
                context.get_admin_context(), id=uuidutils.generate_uuid())
            vtype.qos_specs_id = uuidutils.generate_uuid()
            consumer = rnd.choice(['back-end', 'front-end', 'both'])
            specs = {rnd.choice(['total_iops_sec', 'maxIOPS', '',
                                 'read_bytes_sec', '\u00e9']):
                     rnd.choice(NASTY) for _k in range(rnd.randint(0, 3))}
            vtype.qos_specs = objects.QualityOfServiceSpecs(
                consumer=consumer, specs=specs)
            try:
                k2_specs.refuse_backend_qos(vtype)
            except exception.InvalidVolumeType as e:
                self.assertNotEqual('front-end', consumer)
                self.assertIn(consumer, str(e))
                continue
            self.assertTrue(consumer == 'front-end' or not specs)

    def test_replication_devices(self):
        rnd = random.Random(8)
        keys = sorted(replication.DEVICE_KEYS) + ['colour', '']
        conf = configuration.Configuration(volume_driver.volume_opts,
                                           config_group='fuzz')
        for _n in range(ROUNDS):
            device = {rnd.choice(keys): rnd.choice(NASTY)
                      for _k in range(rnd.randint(1, 6))}
            self.override_config('replication_device', [device],
                                 group='fuzz')
            try:
                parsed = replication.parse_device(conf)
            except flash_exception.InvalidBackendConfig as e:
                self.assertIn('replication_device', str(e))
                continue
            self.assertNotIn(parsed['backend_id'], ('', 'default', None))
            self.assertTrue(parsed['rpo'] == 60 or parsed['rpo'] % 300 == 0)


def _garbage(rnd):
    """A reply no sane array would send."""
    choice = rnd.randrange(9)
    if choice == 0:
        return fake_http.Reply(200, text='<html><body>Gateway</body></html>',
                               content_type='text/html')
    if choice == 1:
        return fake_http.Reply(200, text='{"hits": [{"id": 1',
                               content_type='application/json')
    if choice == 2:
        return fake_http.Reply(rnd.choice([200, 201, 500, 502, 418]),
                               payload=rnd.choice([[], [1], 'x', 7, None,
                                                   True]))
    if choice == 3:
        return fake_http.Reply(200, payload={'hits': [rnd.choice(
            [{}, {'id': 'x'}, {'id': 3, 'volume_group': 'nope'},
             {'id': 3, 'host': {'ref': 5}}, {'id': 3, 'lun': 'A'},
             {'id': 3, 'rest_api_version': 2.2}, 1, None])],
            'total': rnd.choice([1, '1', None])})
    if choice == 4:
        return fake_http.Reply(200, payload={'id': rnd.choice(
            [1, '1', None]), 'lun': rnd.choice([None, 'x', -1]),
            'volume_group': rnd.choice([None, {}, {'ref': '/x/y'}])})
    if choice == 5:
        return fake_http.Reply(400, payload={'error_msg': rnd.choice(
            NASTY)})
    if choice == 6:
        return fake_http.Reply(200, payload={'resources': rnd.choice(
            [None, [], {'volumes': {}}]), 'capabilities': rnd.choice(
            [None, 'x', {'volume_source': 'yes'}])})
    if choice == 7:
        return fake_http.Reply(204)
    return fake_http.Reply(200, payload={
        'hits': [{'id': 1, 'total': 'x', 'free': None, 'logical': [],
                  'physical': {}, 'provisioned': -5,
                  'iscsi_qualified_target_name': 7, 'system_id': None,
                  'ip_address': None, 'pwwn': 5}], 'total': 1})


class EndlessGarbage(fake_http.ScriptedAdapter):

    def __init__(self, seed):
        super().__init__([])
        self.rnd = random.Random(seed)

    def send(self, request, **kwargs):
        self.replies = [_garbage(self.rnd)]
        return super().send(request, **kwargs)


class ReplyFuzzTestCase(test.TestCase):

    def setUp(self):
        super().setUp()
        self.ctx = context.get_admin_context()
        conf = configuration.Configuration(volume_driver.volume_opts,
                                           config_group='fuzz')
        self.driver = k2_driver.K2ISCSIDriver(configuration=conf,
                                              host='cinder@fuzz')
        for key, value in (('san_ip', '192.0.2.10'), ('san_login', 'u'),
                           ('san_password', 'secret-pw'),
                           ('flash_rest_retries', 0)):
            self.override_config(key, value, group='fuzz')
        self.driver.do_setup(self.ctx)
        a = self.driver.adapter
        a.target_iqn = 'iqn.2026-11.io.example:k2'
        a.portals = ['192.0.2.21:3260']
        a.retention_policy_id = 1
        a.capabilities = {'volume_source': True}

    def volume(self, provider_id):
        vol = fake_volume.fake_volume_obj(
            self.ctx, id=uuidutils.generate_uuid(), size=1,
            provider_id=provider_id)
        vol.volume_type = fake_volume.fake_volume_type_obj(
            self.ctx, id=uuidutils.generate_uuid(), extra_specs={})
        return vol

    def operations(self):
        vol = self.volume(self.rnd.choice(['7/9', None, 'x', '7/9/g']))
        snap = fake_snapshot.fake_snapshot_obj(
            self.ctx, id=uuidutils.generate_uuid(), volume_id=vol.id,
            provider_id=self.rnd.choice(['3/4', None]))
        snap.volume = vol
        new = self.volume(None)
        d = self.driver
        return [
            ('setup', lambda: d.check_for_setup_error()),
            ('create', lambda: d.create_volume(new)),
            ('delete', lambda: d.delete_volume(vol)),
            ('extend', lambda: d.extend_volume(vol, 2)),
            ('snapshot', lambda: d.create_snapshot(snap)),
            ('delete snapshot', lambda: d.delete_snapshot(snap)),
            ('clone', lambda: d.create_cloned_volume(new, vol)),
            ('attach', lambda: d.initialize_connection(vol, CONNECTOR)),
            ('detach', lambda: d.terminate_connection(vol, CONNECTOR)),
            ('force detach', lambda: d.terminate_connection(vol, None)),
            ('retype', lambda: d.retype(self.ctx, vol, vol.volume_type,
                                        {}, None)),
            ('manage', lambda: d.manage_existing_get_size(
                vol, {'source-name': 'cv-x'})),
        ]

    def test_malformed_replies_give_clear_errors(self):
        self.rnd = random.Random(9)
        seen = set()
        for n in range(ROUNDS):
            fake_http.mount(self.driver.adapter.client.http, [])
            self.driver.adapter.client.http.session.mount(
                'https://', EndlessGarbage(n))
            name, call = self.rnd.choice(self.operations())
            try:
                call()
            except exception.CinderException as e:
                seen.add(type(e).__name__)
                self.assertNotIn('secret-pw', str(e))
            except Exception as e:
                self.fail('%s raised %s: %s on round %d' % (
                    name, type(e).__name__, e, n))
        # The fuzzer did reach the driver's own error paths.
        self.assertIn('ArrayBadReply', seen)

    def test_stats_never_raise(self):
        for n in range(60):
            self.driver.adapter.client.http.session.mount(
                'https://', EndlessGarbage(n))
            self.driver.adapter._stats = None
            stats = self.driver.get_volume_stats(refresh=True)
            self.assertIn(stats['pools'][0]['backend_state'], ('up', 'down'))
            json.dumps(stats)


CONFIG_RUNNER = r"""
import json, sys, traceback, warnings
warnings.filterwarnings('ignore')
from cinder_driver.cmd import check
out = []
for path in sys.argv[1:]:
    try:
        report = check.run([path], 'k2')
        out.append({'ok': report.ok, 'lines': list(report.lines())})
    except Exception:
        out.append({'error': traceback.format_exc()})
print(json.dumps(out))
"""


class ConfigFuzzTestCase(test.TestCase):
    """Hostile cinder.conf values, read exactly as cinder-volume reads them.

    One process parses every case (oslo.config's parser is global).
    """

    def test_every_option_with_nasty_values(self):
        import os
        import socket
        import subprocess
        import sys
        import tempfile

        from cinder_driver.common import opts

        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            closed_port = s.getsockname()[1]
        rnd = random.Random(10)
        names = sorted(o.name for _g, group in opts.list_opts()
                       for o in group)
        names += ['san_api_port', 'san_ip', 'driver_ssl_cert_path',
                  'driver_ssl_cert_verify', 'replication_device']
        tmp = tempfile.mkdtemp()
        self.addCleanup(__import__('shutil').rmtree, tmp)
        paths, cases = [], []
        for name in names:
            for value in rnd.sample(NASTY, 6):
                if '\n' in value or '\x00' in value:
                    continue
                base = {'volume_driver':
                        'cinder_driver.k2.driver.K2ISCSIDriver',
                        'san_ip': '127.0.0.1',
                        'san_api_port': str(closed_port),
                        'san_login': 'u', 'san_password': 'pw',
                        'flash_rest_connect_timeout': '1'}
                base[name] = value.replace('%', '%%')
                path = os.path.join(tmp, '%d.conf' % len(paths))
                with open(path, 'w') as f:
                    f.write('[k2]\n' + ''.join(
                        '%s = %s\n' % kv for kv in base.items()))
                paths.append(path)
                cases.append((name, value))
        result = subprocess.run([sys.executable, '-c', CONFIG_RUNNER] + paths,
                                capture_output=True, text=True, timeout=600)
        self.assertEqual(0, result.returncode, result.stderr[-2000:])
        outcomes = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(len(cases), len(outcomes))
        for (name, value), outcome in zip(cases, outcomes):
            self.assertNotIn('error', outcome, '%s=%r:\n%s' % (
                name, value, outcome.get('error')))
            self.assertFalse(outcome['ok'], (name, value))
            self.assertTrue(any(line.startswith('FAIL')
                                for line in outcome['lines']), outcome)
