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

"""The cluster load's sizing: skipped picks do not count as work."""

import itertools
import os
import sys
import threading

import testtools

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
from tools.gate import cluster_load  # noqa: E402


class _Api(object):

    def track(self):
        return []


class _Load(cluster_load.Load):
    """Creates always work; detaches find nothing for the first picks."""

    def __init__(self, skips):
        super().__init__(_Api(), ['t'])
        self.skips = itertools.count()
        self.limit = skips
        self.pick_lock = threading.Lock()

    def pick(self):
        with self.pick_lock:
            return 'detach' if next(self.skips) < self.limit else 'create'

    def op_create(self, vtype=None):
        return self._note('v')

    def op_detach(self):
        return None


class LoadSizeTestCase(testtools.TestCase):

    def outcomes(self, load):
        return sorted(r.outcome for r in load.records)

    def test_skipped_picks_are_not_counted(self):
        # A run that begins with empty pools does as much work as one
        # that begins with full ones.
        load = _Load(skips=10)
        load.run(operations=5, workers=2)
        self.assertEqual(['ok'] * 5 + ['skip'] * 10, self.outcomes(load))

    def test_picks_are_bounded_when_nothing_can_be_done(self):
        load = _Load(skips=1 << 20)
        load.run(operations=3, workers=2)
        self.assertEqual(
            ['skip'] * (3 * cluster_load.SKIPS_PER_OPERATION),
            self.outcomes(load))
