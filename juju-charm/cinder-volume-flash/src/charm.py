#!/usr/bin/env python3
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

"""cinder-volume-flash: a cinder-flash backend for Sunbeam's cinder-volume.

A subordinate on the ``cinder-volume`` interface. The principal publishes
``snap-name``, the snap that runs cinder-volume on the unit; this charm
writes the backend's settings into that snap as ``flash.<app>.*`` keys
(what ``snap set`` does, through snapd's API so that no secret is ever on
a command line), then publishes ``backend`` = ``flash.<app>``. The snap
renders the ``[<app>]`` section and restarts cinder-volume; when the
relation goes, the principal unsets the keys.

The unit is active only when ``cinder-flash check``, run inside the snap,
passes for the section the snap rendered.
"""

import logging
import subprocess

import ops

import backend
import juju_secrets
import snapd

LOG = logging.getLogger(__name__)
RELATION = 'cinder-volume'
SNAP_NAME_KEY = 'snap-name'
BACKEND_KEY = 'backend'
NAMESPACE = 'flash'
# The snap app that runs `cinder-flash` on the snap's own cinder.conf.
CHECK_APP = 'cinder-flash'
CHECK_TIMEOUT = 120


class NotReady(Exception):
    """Waiting for something outside this unit's configuration."""


class CinderVolumeFlashCharm(ops.CharmBase):

    def __init__(self, framework):
        super().__init__(framework)
        for event in (self.on.config_changed, self.on.secret_changed,
                      self.on.update_status, self.on.upgrade_charm,
                      self.on[RELATION].relation_joined,
                      self.on[RELATION].relation_changed,
                      self.on[RELATION].relation_departed):
            framework.observe(event, self._reconcile)
        framework.observe(self.on[RELATION].relation_broken,
                          self._on_broken)

    @property
    def namespace(self):
        return '%s.%s' % (NAMESPACE, self.app.name)

    # -- what the snap gets ------------------------------------------------
    def snap_settings(self):
        """Keys under ``flash.<app>`` and their values (all strings)."""
        pairs = backend.section(
            dict(self.config), self.app.name,
            credentials=juju_secrets.content(self, 'credentials'),
            replication=juju_secrets.content(self,
                                             'replication-credentials'),
            chap=juju_secrets.content(self, 'chap-credentials'))
        # The snap writes every key into the section as the option of
        # the same name (kebab-case here, snake_case in cinder.conf).
        settings = {key.replace('_', '-'): value for key, value in pairs}
        pem = backend.ca_pem(self.config)
        if pem:
            # The snap writes it next to the section and points
            # driver_ssl_cert_path at it.
            settings['driver-ssl-cert'] = pem
        return settings

    def _snap_name(self, relation):
        for unit in relation.units:
            name = relation.data[unit].get(SNAP_NAME_KEY)
            if name:
                return name
        raise NotReady('waiting for %s to publish its snap name' % (
            relation.app.name if relation.app else RELATION))

    def _apply(self, client, snap, settings):
        """Set what changed and unset what is no longer wanted."""
        current = client.get(snap, self.namespace) or {}
        if not isinstance(current, dict):
            current = {}
        changes = {'%s.%s' % (self.namespace, key): value
                   for key, value in sorted(settings.items())
                   if current.get(key) != value}
        changes.update({'%s.%s' % (self.namespace, key): None
                        for key in sorted(current) if key not in settings})
        if changes:
            LOG.info('setting %d key(s) of %s in snap %s', len(changes),
                     self.namespace, snap)
            client.set(snap, changes)

    # -- events ----------------------------------------------------------
    def _reconcile(self, event):
        relation = self.model.get_relation(RELATION)
        if relation is None:
            self.unit.status = ops.BlockedStatus(
                'integrate with cinder-volume (endpoint cinder-volume)')
            return
        try:
            snap = self._snap_name(relation)
            settings = self.snap_settings()
            client = snapd.Client()
            self._require_driver(client, snap)
            self._apply(client, snap, settings)
        except NotReady as e:
            self.unit.status = ops.WaitingStatus(str(e))
            return
        except backend.ConfigError as e:
            self.unit.status = ops.BlockedStatus(str(e))
            return
        except snapd.SnapdError as e:
            if e.transient:
                self.unit.status = ops.WaitingStatus('snapd: %s' % e)
                event.defer()
            else:
                self.unit.status = ops.BlockedStatus(
                    'snap %s refused the settings: %s' % (snap, e))
            return
        relation.data[self.unit][BACKEND_KEY] = self.namespace
        verdict = self._check(snap)
        if verdict:
            self.unit.status = ops.BlockedStatus(verdict)
            return
        self.unit.status = ops.ActiveStatus('backend %s ready (%s)' % (
            settings['volume-backend-name'],
            settings['volume-driver'].rsplit('.', 1)[1]))

    def _require_driver(self, client, snap):
        try:
            apps = client.snap_apps(snap)
        except snapd.SnapdError as e:
            if e.kind == 'snap-not-found':
                raise NotReady('waiting for snap %s to be installed' % snap)
            raise
        if CHECK_APP not in apps:
            raise backend.ConfigError(
                'snap %s has no cinder-flash drivers: set the principal\'s '
                'snap-name to a cinder-volume-flash snap' % snap)

    def _on_broken(self, event):
        # The principal unsets flash.<app> when the backend leaves.
        self.unit.status = ops.BlockedStatus(
            'integrate with cinder-volume (endpoint cinder-volume)')

    def _check(self, snap):
        """None when ``cinder-flash check`` passes in the snap."""
        cmd = ['snap', 'run', '%s.%s' % (snap, CHECK_APP), 'check',
               '--backend', self.app.name]
        try:
            result = subprocess.run(cmd, capture_output=True, text=True,
                                    timeout=CHECK_TIMEOUT)
        except FileNotFoundError:
            return 'the snap command is not installed on this unit'
        except subprocess.TimeoutExpired:
            return 'cinder-flash check timed out'
        return backend.check_verdict(result.returncode, result.stdout)


if __name__ == '__main__':  # pragma: no cover
    ops.main(CinderVolumeFlashCharm)
