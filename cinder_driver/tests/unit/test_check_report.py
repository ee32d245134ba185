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

from cinder.tests.unit import test

from cinder_driver.cmd import check


class CheckReportTestCase(test.TestCase):

    def test_verdict_lines(self):
        report = check.Report('k2')
        report.add(check.PASS, 'config', 'fine')
        report.add(check.WARN, 'tls', 'not verified')
        lines = list(report.lines())
        self.assertTrue(report.ok)
        self.assertEqual('backend k2: ready', lines[-1])
        report.add(check.FAIL, 'ports', 'none')
        self.assertFalse(report.ok)
        self.assertEqual('backend k2: NOT ready (1 check(s) failed)',
                         list(report.lines())[-1])

    def test_empty_report_is_not_ok(self):
        self.assertFalse(check.Report('x').ok)

    def test_version_compare(self):
        from cinder_driver.common import versions
        from cinder_driver.k2 import client
        minimum = client.MIN_API_VERSION
        self.assertFalse(versions.at_least('2.1.9', minimum))
        self.assertFalse(versions.at_least(None, minimum))
        self.assertTrue(versions.at_least('2.2.0', minimum))
        self.assertTrue(versions.at_least('2.10.0-rc1', minimum))
        self.assertEqual((2, 10, 3), versions.parse('2.10.3-rc1').release)

    def test_api_rejects_old_or_offline_arrays(self):
        from cinder_driver.common import probe
        from cinder_driver.k2 import probe as k2_probe
        from cinder_driver.k2 import records
        for (version, state), verdict in (
                (('2.1.0', 'ONLINE'), check.FAIL),
                (('2.2.0', 'DEGRADED'), check.FAIL),
                ((None, 'ONLINE'), check.FAIL),
                (('2.2.7', 'online'), check.PASS),
                (('2.2', 'ONLINE'), check.PASS)):
            results = probe.Results()
            k2_probe.api(results, records.State(1, 'b', state, version,
                                                None))
            self.assertEqual(verdict, results[0][0], (version, state))


RUNNER = r"""
import json, sys, warnings
warnings.filterwarnings('ignore')
from cinder_driver.cmd import check
report = check.run([sys.argv[1]], sys.argv[2])
print(json.dumps({'ok': report.ok, 'results': report.results}))
"""


class CheckRefusesWhatTheDriverRefusesTestCase(test.TestCase):
    """check builds the driver the section names: same refusals."""

    def _check(self, section, **options):
        import json
        import os
        import subprocess
        import sys
        import tempfile
        tmp = tempfile.mkdtemp()
        self.addCleanup(__import__('shutil').rmtree, tmp)
        path = os.path.join(tmp, 'cinder.conf')
        with open(path, 'w') as f:
            f.write('[%s]\n' % section + ''.join(
                '%s = %s\n' % kv for kv in options.items()))
        result = subprocess.run([sys.executable, '-c', RUNNER, path,
                                 section], capture_output=True, text=True,
                                timeout=300)
        self.assertEqual(0, result.returncode, result.stderr[-2000:])
        return json.loads(result.stdout.strip().splitlines()[-1])

    def test_linstor_client_key_without_certificate(self):
        # The adapter refuses this; check once said "ready" up to the
        # array checks.
        outcome = self._check(
            'ls', volume_driver='cinder_driver.linstor.driver.'
            'LinstorDrbdDriver', linstor_uris='linstor://127.0.0.1:1',
            linstor_client_key='/etc/cinder/linstor-key.pem')
        self.assertFalse(outcome['ok'])
        self.assertEqual([['FAIL', 'config']],
                         [r[:2] for r in outcome['results']])
        self.assertIn('linstor_client_cert', outcome['results'][0][2])

    def test_k2_bad_replication_device(self):
        outcome = self._check(
            'k2', volume_driver='cinder_driver.k2.driver.K2ISCSIDriver',
            san_ip='127.0.0.1', san_login='u', san_password='pw',
            replication_device='backend_id:dr,san_login:a,'
                               'san_password:b,rpo:90')
        self.assertEqual([['FAIL', 'config']],
                         [r[:2] for r in outcome['results']])
        self.assertIn('rpo', outcome['results'][0][2])
