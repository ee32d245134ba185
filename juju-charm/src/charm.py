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

"""cinder-flash: a storage-backend subordinate of the cinder charm.

It installs the cinder-flash package on the cinder unit and publishes the
backend's cinder.conf section on the ``storage-backend`` relation in the
cinder-backend interface's format; the cinder charm writes cinder.conf and
restarts cinder-volume. Credentials come from Juju user secrets and are
never logged.
"""

import grp
import json
import logging
import os
import subprocess
import tempfile

import ops

import backend
import juju_secrets

LOG = logging.getLogger(__name__)
RELATION = 'storage-backend'
WHEEL = 'cinder-flash-wheel'
PACKAGE = 'cinder-flash'
CA_DIR = '/etc/cinder'
PYTHON = '/usr/bin/python3'
CHECK = 'cinder-flash'
# cinder-volume's group: it reads the client key, nobody else does.
CINDER_GROUP = 'cinder'


class CinderFlashCharm(ops.CharmBase):

    def __init__(self, framework):
        super().__init__(framework)
        for event in (self.on.install, self.on.upgrade_charm):
            framework.observe(event, self._on_install)
        for event in (self.on.config_changed, self.on.secret_changed,
                      self.on.update_status,
                      self.on[RELATION].relation_joined,
                      self.on[RELATION].relation_changed):
            framework.observe(event, self._reconcile)

    # -- install -------------------------------------------------------
    def _on_install(self, event):
        self.unit.status = ops.MaintenanceStatus('installing cinder-flash')
        try:
            self._install()
        except (subprocess.CalledProcessError, OSError) as e:
            self.unit.status = ops.BlockedStatus(
                'installing cinder-flash failed: %s' % _short(e))
            return
        self._reconcile(event)

    def _install(self):
        """The wheel resource if attached, else the pinned version."""
        try:
            target = str(self.model.resources.fetch(WHEEL))
            if not os.path.getsize(target):
                raise ops.ModelError('empty resource')
        except (ops.ModelError, NameError):
            target = '%s==%s' % (PACKAGE, self.config['package-version'])
        # The cinder charm runs cinder-volume from the distribution's
        # python3: the drivers go where it imports from.
        subprocess.run([PYTHON, '-m', 'pip', 'install', '--quiet',
                        '--break-system-packages', target],
                       check=True, capture_output=True, text=True)

    # -- configuration -------------------------------------------------
    def _ca_path(self):
        if backend.ca_pem(self.config) is None:
            return None
        return os.path.join(CA_DIR, 'cinder-flash-%s-ca.pem' % self.app.name)

    def _write_ca(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(backend.ca_pem(self.config) + '\n')

    def _client_paths(self):
        base = os.path.join(CA_DIR, 'cinder-flash-%s-client' % self.app.name)
        return base + '.pem', base + '.key'

    def _write_client(self, paths, pems):
        """The certificate world-readable, the key 0640 root:cinder (0600
        where the unit has no cinder group), written under that mode from
        the start.
        """
        os.makedirs(CA_DIR, exist_ok=True)
        try:
            gid = grp.getgrnam(CINDER_GROUP).gr_gid
        except KeyError:
            gid = None
        for path, pem, mode in zip(paths, pems, (0o644, 0o600)):
            tmp = path + '.tmp'
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, 'w') as f:
                os.fchmod(f.fileno(), mode)
                if mode == 0o600 and gid is not None:
                    os.fchown(f.fileno(), 0, gid)
                    os.fchmod(f.fileno(), 0o640)
                f.write(pem + '\n')
            os.replace(tmp, path)

    def _section(self):
        ca_path = self._ca_path()
        client = backend.client_certificate(juju_secrets.content(
            self, 'linstor-client-certificate'))
        pairs = backend.section(
            dict(self.config), self.app.name,
            credentials=juju_secrets.content(self, 'credentials'),
            replication=juju_secrets.content(self,
                                             'replication-credentials'),
            ca_path=ca_path,
            client_paths=self._client_paths() if client else None)
        return pairs, ca_path, client

    def _reconcile(self, event):
        try:
            pairs, ca_path, client = self._section()
        except backend.ConfigError as e:
            self.unit.status = ops.BlockedStatus(str(e))
            return
        if ca_path:
            self._write_ca(ca_path)
        if client:
            self._write_client(self._client_paths(), client)
        name = dict(pairs)['volume_backend_name']
        section_name = self.app.name
        data = {
            'backend_name': section_name,
            # Every cinder-flash driver supports active/active, so the
            # cinder units may share one host name.
            'stateless': 'true',
            'subordinate_configuration': json.dumps({'cinder': {
                '/etc/cinder/cinder.conf': {'sections': {
                    section_name: pairs}}}}),
        }
        for relation in self.model.relations[RELATION]:
            relation.data[self.unit].update(data)
        verdict = self._check(section_name, pairs)
        if verdict:
            self.unit.status = ops.BlockedStatus(verdict)
        elif not self.model.relations[RELATION]:
            self.unit.status = ops.BlockedStatus(
                'relate to cinder (storage-backend)')
        else:
            self.unit.status = ops.ActiveStatus(
                'backend %s ready (%s)' % (name, dict(pairs)[
                    'volume_driver'].rsplit('.', 1)[1]))

    def _check(self, section_name, pairs):
        """None when ``cinder-flash check`` passes, else why not."""
        fd, path = tempfile.mkstemp(prefix='cinder-flash-check-',
                                    suffix='.conf')
        try:
            with os.fdopen(fd, 'w') as f:
                f.write(backend.render(section_name, pairs))
            try:
                result = subprocess.run(
                    [CHECK, 'check', '--config-file', path, '--backend',
                     section_name], capture_output=True, text=True,
                    timeout=120)
            except FileNotFoundError:
                return 'cinder-flash is not installed on this unit'
            except subprocess.TimeoutExpired:
                return 'cinder-flash check timed out'
        finally:
            os.unlink(path)
        return backend.check_verdict(result.returncode, result.stdout)


def _short(error):
    text = getattr(error, 'stderr', None) or str(error)
    return text.strip().splitlines()[-1][:120] if text.strip() else \
        type(error).__name__


if __name__ == '__main__':  # pragma: no cover
    ops.main(CinderFlashCharm)
