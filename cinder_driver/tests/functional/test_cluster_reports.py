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

"""The wait for a survivor's stats report, on cinder-scheduler's lines."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
from cinder_driver.tests.functional import logfiles  # noqa: E402
from tools.gate import cluster  # noqa: E402


def report(host, backend):
    return ('2026-11-23 02:30:42.580 27255 DEBUG cinder.scheduler.'
            'host_manager [None req-1 - - - - - -] Received volume service '
            'update from Cluster: flash@%s - Host:  %s@%s: {\'volume_'
            'backend_name\': \'%s\'} update_service_capabilities\n' % (
                backend, host, backend, backend))


class ReportedTestCase(logfiles.LogFileTestCase):

    def test_every_backend_from_a_survivor(self):
        path = self.write([report('gate-a', 'k2-iscsi'),
                           report('gate-b', 'k2-fc'),
                           report('gate-a', 'k2-fc')])
        self.assertTrue(cluster.reported(path, 0, ['gate-a'],
                                         ['k2-iscsi', 'k2-fc']))

    def test_a_report_of_the_stopped_member_does_not_count(self):
        path = self.write([report('gate-a', 'k2-iscsi'),
                           report('gate-b', 'k2-fc')])
        self.assertFalse(cluster.reported(path, 0, ['gate-a'],
                                          ['k2-iscsi', 'k2-fc']))

    def test_reports_before_the_offset_do_not_count(self):
        early = report('gate-a', 'k2-fc')
        path = self.write([early, report('gate-a', 'k2-iscsi')])
        self.assertFalse(cluster.reported(path, len(early), ['gate-a'],
                                          ['k2-iscsi', 'k2-fc']))
        self.assertTrue(cluster.reported(path, 0, ['gate-a'],
                                         ['k2-iscsi', 'k2-fc']))
