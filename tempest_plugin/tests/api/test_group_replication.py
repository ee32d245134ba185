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

"""Group (Tiramisu) replication of a cinder-flash backend, through Cinder.

Neither Tempest nor cinder-tempest-plugin has group replication tests;
these drive Cinder's group actions (microversion 3.38) as an operator
would: enable, list the targets, fail the group over and back, disable.
A group's failover moves only its own volumes, so these run alongside
other tests.
"""

import json
import time

from tempest.api.volume import base
from tempest.common import waiters
from tempest import config
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

CONF = config.CONF


class GroupReplicationTest(base.BaseVolumeAdminTest):

    volume_min_microversion = '3.38'
    volume_max_microversion = 'latest'

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.volume_feature_enabled.replication:
            raise cls.skipException('replication is not enabled')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.stats = cls.os_admin.volume_scheduler_stats_client_latest

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        pools = [p for p in cls.stats.list_pools(detail=True)['pools']
                 if p['capabilities'].get(
                     'consistent_group_replication_enabled') and
                 p['capabilities'].get('replication_targets')]
        if not pools:
            raise cls.skipException('no pool replicates groups')
        caps = pools[0]['capabilities']
        cls.backend = caps['volume_backend_name']
        cls.target = caps['replication_targets'][0]

    def _action(self, group_id, name, **body):
        resp, _b = self.admin_groups_client.post(
            'groups/%s/action' % group_id, json.dumps({name: body}))
        self.assertEqual(202, resp.status, name)

    def _group(self, group_id):
        return self.admin_groups_client.show_group(group_id)['group']

    def _wait(self, group_id, status, volumes):
        deadline = time.time() + CONF.volume.build_timeout
        while True:
            group = self._group(group_id)
            states = {self.admin_volume_client.show_volume(v)['volume'][
                'replication_status'] for v in volumes}
            if group['replication_status'] == status and states == {status}:
                self.assertEqual('available', group['status'])
                return group
            if 'error' in states | {group['replication_status']}:
                self.fail('group %s: replication %s, volumes %s' % (
                    group_id, group['replication_status'], sorted(states)))
            if time.time() > deadline:
                raise lib_exc.TimeoutException(
                    'group %s stayed %s (volumes %s), not %s' % (
                        group_id, group['replication_status'],
                        sorted(states), status))
            time.sleep(CONF.volume.build_interval)

    def _replicated_group(self, members=2):
        vtype = self.create_volume_type(extra_specs={
            'replication_enabled': '<is> True',
            'volume_backend_name': self.backend})
        gtype = self.create_group_type(group_specs={
            'consistent_group_replication_enabled': '<is> True'})
        group = self.admin_groups_client.create_group(
            group_type=gtype['id'], volume_types=[vtype['id']],
            name='flash-group-replication')['group']
        waiters.wait_for_volume_resource_status(self.admin_groups_client,
                                                group['id'], 'available')
        self.addCleanup(self._delete_group, group['id'])
        volumes = []
        for _n in range(members):
            volume = self.admin_volume_client.create_volume(
                size=CONF.volume.volume_size, volume_type=vtype['id'],
                group_id=group['id'])['volume']
            waiters.wait_for_volume_resource_status(
                self.admin_volume_client, volume['id'], 'available')
            volumes.append(volume['id'])
        return group, volumes

    def _delete_group(self, group_id):
        group = self._group(group_id)
        if group['replication_status'] == 'enabled':
            self._action(group_id, 'disable_replication')
            self._wait_group_only(group_id, 'disabled')
        self.admin_groups_client.delete_group(group_id, delete_volumes=True)
        self.admin_groups_client.wait_for_resource_deletion(group_id)

    def _wait_group_only(self, group_id, status):
        deadline = time.time() + CONF.volume.build_timeout
        while self._group(group_id)['replication_status'] != status:
            if time.time() > deadline:
                raise lib_exc.TimeoutException('group %s not %s' % (
                    group_id, status))
            time.sleep(CONF.volume.build_interval)

    @decorators.idempotent_id('5a0d7c2e-6b1f-4f0e-9d33-2c8e1f4b7a01')
    def test_enable_lists_targets_and_disable(self):
        group, volumes = self._replicated_group()
        self._action(group['id'], 'enable_replication')
        self._wait(group['id'], 'enabled', volumes)
        resp, body = self.admin_groups_client.post(
            'groups/%s/action' % group['id'],
            json.dumps({'list_replication_targets': {}}))
        self.assertEqual(200, resp.status)
        targets = json.loads(body)['replication_targets']
        self.assertIn(self.target, [t['backend_id'] for t in targets])
        self._action(group['id'], 'disable_replication')
        self._wait(group['id'], 'disabled', volumes)

    @decorators.idempotent_id('5a0d7c2e-6b1f-4f0e-9d33-2c8e1f4b7a02')
    def test_group_fails_over_and_back_together(self):
        group, volumes = self._replicated_group()
        self._action(group['id'], 'enable_replication')
        self._wait(group['id'], 'enabled', volumes)
        self._action(group['id'], 'failover_replication',
                     allow_attached_volume=True,
                     secondary_backend_id=self.target)
        self._wait(group['id'], 'failed-over', volumes)
        # The failed-over volumes are served by the secondary: they
        # still extend.
        self.admin_volume_client.extend_volume(
            volumes[0], new_size=CONF.volume.volume_size + 1)
        waiters.wait_for_volume_resource_status(self.admin_volume_client,
                                                volumes[0], 'available')
        self._action(group['id'], 'failover_replication',
                     allow_attached_volume=True,
                     secondary_backend_id='default')
        self._wait(group['id'], 'enabled', volumes)
        self.assertEqual(CONF.volume.volume_size + 1,
                         self.admin_volume_client.show_volume(
                             volumes[0])['volume']['size'])
