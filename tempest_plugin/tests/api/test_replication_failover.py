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

"""Failover and failback of a replicating cinder-flash backend.

A failover changes the whole backend, so these tests must run alone
(the gate runs them in its serial pass). A clustered backend (its pools
carry the cluster's name) is failed over by cluster: one member moves
the volumes (the driver's ``failover``), then every member switches
array (``failover_completed``), and every member must report it.
"""

import time

from tempest.api.volume import base
from tempest.common import waiters
from tempest import config
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

CONF = config.CONF


class ReplicationFailoverTest(base.BaseVolumeAdminTest):

    volume_min_microversion = '3.26'
    volume_max_microversion = 'latest'

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.volume_feature_enabled.replication:
            raise cls.skipException('replication is not enabled')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.services = cls.os_admin.volume_services_client_latest
        cls.stats = cls.os_admin.volume_scheduler_stats_client_latest

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        pools = cls.stats.list_pools(detail=True)['pools']
        replicating = [p for p in pools
                       if p['capabilities'].get('replication_enabled') and
                       p['capabilities'].get('replication_targets')]
        if not replicating:
            raise cls.skipException('no pool replicates to a target')
        pool = replicating[0]
        cls.host = pool['name'].split('#', 1)[0]
        services = cls.services.list_services(
            binary='cinder-volume')['services']
        cls.by = 'cluster' if any(s.get('cluster') == cls.host
                                  for s in services) else 'host'
        cls.backend = pool['capabilities']['volume_backend_name']
        cls.target = pool['capabilities']['replication_targets'][0]

    def _members(self):
        """The backend's service, or every member of its cluster."""
        found = [s for s in self.services.list_services(
            binary='cinder-volume')['services'] if s.get(self.by) == self.host]
        self.assertTrue(found, 'no cinder-volume service for %s' % self.host)
        return found

    def _service(self):
        return self._members()[0]

    def _wait_service(self, status):
        deadline = time.time() + CONF.volume.build_timeout
        while True:
            members = self._members()
            states = {s['replication_status'] for s in members}
            if states == {status}:
                # Every member took the same array and the same state.
                self.assertEqual(1, len({(s['active_backend_id'] or None,
                                          s['status']) for s in members}))
                return members[0]
            if 'error' in states:
                self.fail('failover of %s ended in error' % self.host)
            if time.time() > deadline:
                raise lib_exc.TimeoutException(
                    '%s stayed %s, not %s' % (
                        self.host, ', '.join(sorted(states)), status))
            time.sleep(CONF.volume.build_interval)

    def _failover(self, backend_id, status):
        self.services.failover_host(backend_id=backend_id,
                                    **{self.by: self.host})
        return self._wait_service(status)

    @decorators.idempotent_id('2f0b1a36-3f55-4c1e-9a2a-8f1f6b7f2e01')
    def test_failover_then_failback(self):
        vtype = self.create_volume_type(extra_specs={
            'replication_enabled': '<is> True',
            'volume_backend_name': self.backend})
        volume = self.create_volume(volume_type=vtype['id'])
        self.assertEqual('enabled', self.admin_volume_client.show_volume(
            volume['id'])['volume']['replication_status'])

        service = self._failover(self.target, 'failed-over')
        self.assertEqual(self.target, service['active_backend_id'])
        self.addCleanup(self._back_to_primary)
        shown = self.admin_volume_client.show_volume(volume['id'])['volume']
        self.assertEqual('failed-over', shown['replication_status'])

        # Cinder takes a failed-over backend out of scheduling.
        self.assertEqual('disabled', service['status'])

        service = self._failover('default', 'enabled')
        self.assertIn(service['active_backend_id'], (None, ''))
        self.assertEqual('enabled', service['status'])
        shown = self.admin_volume_client.show_volume(volume['id'])['volume']
        self.assertEqual('enabled', shown['replication_status'])
        self.assertEqual('available', shown['status'])
        # The primary serves the volume again.
        self.volumes_client.extend_volume(volume['id'],
                                          new_size=volume['size'] + 1)
        waiters.wait_for_volume_resource_status(self.volumes_client,
                                                volume['id'], 'available')
        shown = self.admin_volume_client.show_volume(volume['id'])['volume']
        self.assertEqual(volume['size'] + 1, shown['size'])
        self.create_snapshot(volume['id'])

    def _back_to_primary(self):
        if self._service()['replication_status'] == 'failed-over':
            self._failover('default', 'enabled')

    @decorators.attr(type='negative')
    @decorators.idempotent_id('7d3c5e92-0a64-4f0e-b0f4-5b8e9c1d2a02')
    def test_failover_to_unknown_target_is_refused(self):
        self.services.failover_host(backend_id='nowhere',
                                    **{self.by: self.host})
        # The volume service refuses the target; the backend stays as
        # it was, replicating to its configured target.
        service = self._wait_service('enabled')
        self.assertIn(service['active_backend_id'], (None, ''))
