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

"""The cluster bed's view of its members: a survivor's stats report (on
cinder-scheduler's lines) and a member's processes.
"""

import os
import subprocess
import sys
from unittest import mock

import fixtures

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
from cinder_driver.tests.functional import logfiles  # noqa: E402
from tools.gate import cluster  # noqa: E402
from tools.gate import processes  # noqa: E402


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


class GroupTestCase(logfiles.LogFileTestCase):

    def _member(self):
        """A parent and its worker in a group of their own, as the bed
        starts a cinder-volume service, as member gate-a of a cluster;
        (parent, cluster) once both processes are up.
        """
        parent = subprocess.Popen(
            [sys.executable, '-c', 'import subprocess, sys; subprocess.run('
             '[sys.executable, "-c", "import time; time.sleep(30)"])'],
            start_new_session=True)
        self.addCleanup(parent.wait)
        self.addCleanup(os.killpg, parent.pid, 9)
        bed = mock.Mock(dir=self.useFixture(fixtures.TempDir()).path)
        bed._pids.return_value = {cluster.service_name('gate-a'): parent.pid}
        members = cluster.Cluster(bed)
        for _ in range(100):
            if len(members.group_pids('gate-a')) == 2:
                break
            subprocess.run(['sleep', '0.05'])
        return parent, members

    def test_the_pids_of_a_members_process_group(self):
        parent, members = self._member()
        pids = members.group_pids('gate-a')
        self.assertEqual(2, len(pids))
        self.assertIn(parent.pid, pids)
        self.assertNotIn(os.getpid(), pids)

    def test_a_paused_member_is_stopped_until_resumed(self):
        _parent, members = self._member()
        members.pause('gate-a')
        self.assertEqual({'T'}, {processes.state(pid) for pid in
                                 members.group_pids('gate-a')})
        members.resume('gate-a')
        subprocess.run(['sleep', '0.1'])
        self.assertNotIn('T', {processes.state(pid) for pid in
                               members.group_pids('gate-a')})
