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

"""The gate's Tempest passes: which pass runs which test."""

import os
import re
import sys

import testtools

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
from tools.gate import run  # noqa: E402

# Tests that compare a volume's host before and after a retype or a
# manage: in a cluster the member that does it writes its own host.
HOST_TESTS = (
    'tempest_plugin.tests.api.test_flash_features.FlashVolumeTypesTest.'
    'test_retype_between_dedup_and_nodedup',
    'tempest.api.volume.admin.test_volume_retype.'
    'VolumeRetypeWithoutMigrationTest.test_available_volume_retype',
    'tempest.api.volume.admin.test_volume_manage.VolumeManageAdminTest.'
    'test_unmanage_manage_volume',
)
CONCURRENT = 'tempest.api.volume.test_volumes_get.VolumesGetTest.test_x'
SERIAL = 'tempest.api.volume.admin.test_groups.GroupsTest.test_x'
# Class clean-ups that list every tenant's volumes.
EVERY_TENANT = (
    'cinder_tempest_plugin.api.volume.admin.test_volume_replication.'
    'VolumeReplicationTest.test_x',
    'cinder_tempest_plugin.api.volume.admin.test_volume_replication_negative.'
    'VolumeReplicationNegativeTest.test_x',
)


def selected_by(passes, test_id):
    """Indexes of the passes that run ``test_id`` (stestr's selection:
    re.search of the regex, and of the exclude regex if any).
    """
    found = []
    for n, args in enumerate(passes):
        exclude = (args[args.index('--exclude-regex') + 1]
                   if '--exclude-regex' in args else None)
        if re.search(args[0], test_id) and not (
                exclude and re.search(exclude, test_id)):
            found.append(n)
    return found


class GatePassesTestCase(testtools.TestCase):

    def test_cluster_runs_host_tests_only_with_one_member(self):
        passes = run.tempest_passes(run.DEFAULT_REGEX, cluster=True)
        self.assertEqual(3, len(passes))
        for test_id in HOST_TESTS:
            self.assertEqual([2], selected_by(passes, test_id), test_id)
        self.assertEqual([0], selected_by(passes, CONCURRENT))
        self.assertEqual([1], selected_by(passes, SERIAL))

    def test_one_service_runs_every_test_once(self):
        passes = run.tempest_passes(run.DEFAULT_REGEX, cluster=False)
        self.assertEqual(2, len(passes))
        self.assertEqual([0], selected_by(passes, HOST_TESTS[0]))
        self.assertEqual([1], selected_by(passes, HOST_TESTS[1]))
        self.assertEqual([0], selected_by(passes, CONCURRENT))

    def test_every_tenant_listers_run_alone(self):
        for cluster in (False, True):
            passes = run.tempest_passes(run.DEFAULT_REGEX, cluster=cluster)
            for test_id in EVERY_TENANT:
                self.assertEqual([1], selected_by(passes, test_id), test_id)
        # Not caught by a prefix of their names.
        self.assertEqual([0], selected_by(
            run.tempest_passes(run.DEFAULT_REGEX, cluster=False),
            'cinder_tempest_plugin.api.volume.admin.test_volume_types.'
            'VolumeTypesTest.test_x'))

    def test_linstor_pass_in_a_cluster(self):
        passes = run.tempest_passes(run.LINSTOR_REGEX, cluster=True)
        self.assertEqual([], selected_by(passes, HOST_TESTS[0]))
        self.assertEqual([2], selected_by(passes, HOST_TESTS[1]))

    def test_a_regex_of_ones_own_is_one_pass(self):
        self.assertEqual([['^x', '--concurrency', '2']],
                         run.tempest_passes('^x', cluster=True,
                                            concurrency=2))
