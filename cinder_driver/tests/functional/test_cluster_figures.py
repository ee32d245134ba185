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

"""The cluster soak's io-pause figures: who had taken each operation in
flight at a death, read from the dead member's log, and the summary.
"""

import collections
import datetime
import os
import sys
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
from cinder_driver.tests.functional import logfiles  # noqa: E402
from tools.gate import cluster_figures  # noqa: E402
from tools.gate import cluster_load  # noqa: E402

DEATH = datetime.datetime(2026, 11, 23, 1, 0, 0).timestamp()


def line(offset, request_id):
    stamp = datetime.datetime.fromtimestamp(DEATH + offset).strftime(
        '%Y-%m-%d %H:%M:%S.%f')[:-3]
    return ('%s 1580 DEBUG cinder.volume.manager [None %s - - - - - -] '
            'working\n' % (stamp, request_id))


def record(name, request_id, end, failed_at=None, connected_at=None):
    rec = cluster_load.Record(name, 'dedup')
    rec.start, rec.end, rec.outcome = DEATH - 2, DEATH + end, 'ok'
    rec.request_ids = [request_id]
    rec.failed_at = None if failed_at is None else DEATH + failed_at
    rec.connected_at = (None if connected_at is None
                        else DEATH + connected_at)
    return rec


class PauseFiguresTestCase(logfiles.LogFileTestCase):

    def figures(self):
        log = self.write([line(-1, 'req-dead-attach'),
                          line(-1, 'req-dead-create')])
        figures = collections.defaultdict(list)
        inflight = [
            record('attach', 'req-dead-attach', 11.0, 10.0, 10.5),
            record('create', 'req-dead-create', 1.0),
            record('attach', 'req-survivor', 3.0),
        ]
        with mock.patch.object(cluster_figures, 'say'):
            cluster_figures.inflight_figures(figures, 7, inflight, DEATH,
                                             log)
        return figures

    def test_who_had_taken_each_operation(self):
        figures = self.figures()
        self.assertEqual([11.0], figures['end_after_death_untracked_dead'])
        self.assertEqual([1.0], figures['end_after_death_tracked_dead'])
        self.assertEqual([3.0],
                         figures['end_after_death_untracked_survivor'])

    def test_the_dead_members_attach_and_the_rounds_pause(self):
        figures = self.figures()
        self.assertEqual([{'round': 7, 'end': 11.0, 'outcome': 'ok',
                           'first_answer': 10.0, 'connected': 10.5}],
                         figures['dead_attach'])
        self.assertEqual([11.0], figures['pause_per_round'])

    def test_report(self):
        soak = mock.Mock(figures=self.figures())
        lines = cluster_figures.report(soak, [{'operator resets': []}])
        self.assertIn('  round 7: ok; first answer failed at 10.0 s; '
                      'connected 10.5 s; ended 11.0 s', lines)
        self.assertIn('io-pause per kill round (the last operation in '
                      'flight at the death to end): 11.0 s', lines)
