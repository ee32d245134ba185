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
        for state, verdict in (
                ({'rest_api_version': '2.1.0', 'state': 'ONLINE'},
                 check.FAIL),
                ({'rest_api_version': '2.2.0', 'state': 'DEGRADED'},
                 check.FAIL),
                ({'state': 'ONLINE'}, check.FAIL),
                ({'rest_api_version': '2.2.7', 'state': 'online'},
                 check.PASS)):
            report = check.Report('b')
            check._api(report, state)
            self.assertEqual(verdict, report.results[0][0], state)
