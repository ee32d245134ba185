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

"""The drivers run with native threads: no eventlet of ours, no patching.

Cinder 29 still imports eventlet in its root package, so no process that
imports Cinder is free of the module itself; what can be held to is what
Cinder's own eventlet-free jobs hold to: the service's threading backend
(``OS_CINDER_DISABLE_EVENTLET_PATCHING``), nothing of the standard
library patched, and no eventlet use in the drivers, the LINSTOR client
or the locks.
"""

import ast
import json
import os
import pathlib
import subprocess
import sys

from cinder.tests.unit import test

import cinder_driver

PACKAGE = pathlib.Path(cinder_driver.__file__).parent
# A lifecycle of each driver against a live reference array: create,
# attach and detach, snapshot, volume from snapshot, clone, revert, delete.
LIFECYCLE = ['cinder_driver.tests.functional.' + name for name in (
    'test_k2_attach.K2ISCSIAttachTestCase.'
    'test_detach_round_trips_and_idempotence',
    'test_k2_snapshots.K2SnapshotTestCase.'
    'test_volume_from_snapshot_larger_and_independent',
    'test_k2_snapshots.K2SnapshotTestCase.test_revert_to_snapshot',
    'test_linstor_volumes.LinstorVolumesTestCase.'
    'test_default_placement_and_delete',
    'test_linstor_snapshots.LinstorSnapshotsTestCase.'
    'test_clone_leaves_no_snapshot_and_copies_the_size')]


def eventlet_imports(root):
    """(file, line) of every eventlet import under ``root``."""
    found = []
    for path in sorted(root.rglob('*.py')):
        if 'tests' in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or '']
            if any(n.split('.')[0] == 'eventlet' for n in names):
                found.append((str(path.relative_to(root)), node.lineno))
    return found


class NativeThreadsTestCase(test.TestCase):

    def test_no_eventlet_import_in_our_code(self):
        self.assertEqual([], eventlet_imports(PACKAGE))

    def test_driver_lifecycles_run_unpatched(self):
        try:
            from cinder import monkey_patch  # noqa: F401
        except ImportError:
            # Cinder 24 to 28 always run their services on eventlet.
            self.skipTest('this Cinder has no native-thread mode '
                          '(cinder.monkey_patch came with Cinder 29)')
        env = dict(os.environ, OS_CINDER_DISABLE_EVENTLET_PATCHING='true')
        run = subprocess.run(
            [sys.executable, '-m',
             'cinder_driver.tests.functional.native_threads'] + LIFECYCLE,
            env=env, capture_output=True, text=True, timeout=900)
        self.assertEqual(0, run.returncode, run.stderr[-4000:])
        got = json.loads(run.stdout.strip().splitlines()[-1])
        self.assertEqual((len(LIFECYCLE), 0, 0),
                         (got['ran'], got['failed'], got['skipped']),
                         run.stderr[-4000:])
        self.assertIs(False, got['cinder_patched'])
        self.assertEqual([], got['patched'])
        self.assertEqual([], got['ours_using_eventlet'])
        self.assertGreater(got['our_modules'], 10)
