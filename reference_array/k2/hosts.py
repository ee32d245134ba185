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

"""Writes of K2 hosts, their ports and CHAP profiles, and mappings."""

import re

from reference_array.k2 import backend
from reference_array.k2 import fields
from reference_array.k2 import models
from reference_array.k2 import volumes

Ref = models.Ref
Host, HostAuthProfile = models.Host, models.HostAuthProfile
Mapping = models.Mapping

CHAP_SECRET_LENGTH = (12, 16)   # what iSCSI initiators accept
HOST_TYPES = ('Linux', 'Windows', 'ESX', 'AIX', 'Solaris', 'HPUX', 'Other')
IQN_RE = re.compile(r'^(iqn\.\d{4}-\d{2}\.[^\s]+|eui\.[0-9A-Fa-f]{16})$')
WWN_RE = re.compile(r'^([0-9a-fA-F]{2}:){7}[0-9a-fA-F]{2}$')
MAX_LUN = 16383

WRITABLE = {
    'hosts': {'create': ('name', 'type', 'description', 'host_auth_profile'),
              'update': ('name', 'type', 'description', 'host_auth_profile')},
    'host_auth_profiles': {'create': ('name', 'auth_type', 'username',
                                      'secret'),
                           'update': ('username', 'secret')},
    'host_iqns': {'create': ('iqn', 'host'), 'update': ()},
    'host_fc_ports': {'create': ('pwwn', 'host'), 'update': ()},
    'mappings': {'create': ('volume', 'host', 'lun'), 'update': ()},
}
bad = fields.bad


class Hosts(object):
    """Hosts, host IQNs and FC ports, CHAP profiles and mappings."""

    writable = WRITABLE

    def __init__(self, records):
        self.records = records

    def handlers(self):
        """resource -> (create, update, delete)."""
        return {
            'hosts': backend.operations(self.create_host, self.update_host,
                                        self.delete_host),
            'host_auth_profiles': backend.operations(
                self.create_profile, self.update_profile,
                self.delete_profile),
            'host_iqns': backend.operations(self.create_iqn),
            'host_fc_ports': backend.operations(self.create_fc_port),
            'mappings': backend.operations(self.create_mapping),
        }

    @staticmethod
    def _type(value):
        if value not in HOST_TYPES:
            raise bad('type %r is not one of %s' % (value,
                                                    ', '.join(HOST_TYPES)))
        return value

    # -- hosts ---------------------------------------------------------------
    def create_host(self, body):
        name = fields.name('hosts', body)
        self.records.unique(Host, 'name', name)
        host = Host(name=name, type=self._type(body.get('type', 'Linux')),
                    description=fields.text(body, 'description'))
        if body.get('host_auth_profile') is not None:
            host.host_auth_profile = self._profile_ref(body)
        return self.records.new(host)

    def _profile_ref(self, body):
        return Ref.to(self.records.deref(body, 'host_auth_profile',
                                         (HostAuthProfile,)))

    def update_host(self, host, body):
        if 'name' in body:
            host.name = fields.name('hosts', body)
            self.records.unique(Host, 'name', host.name, host.id)
        if 'type' in body:
            host.type = self._type(body['type'])
        if 'host_auth_profile' in body:
            host.host_auth_profile = (
                None if body['host_auth_profile'] is None
                else self._profile_ref(body))
        if 'description' in body:
            host.description = str(body['description'])
        return self.records.put(host)

    def delete_host(self, host):
        ref = Ref.to(host)
        if self.records.has_children(Mapping, 'host', ref):
            raise bad('host %s still has mappings' % host.name)
        for kind in (models.HostIqn, models.HostFcPort):
            for port in self.records.children(kind, 'host', ref):
                self.records.delete(port)

    # -- CHAP profiles -------------------------------------------------------
    @staticmethod
    def _chap(body, profile):
        user = body.get('username', profile.username)
        secret = body.get('secret', profile.secret)
        if not isinstance(user, str) or not user or len(user) > 255:
            raise bad('username must be a string of 1 to 255 characters')
        low, high = CHAP_SECRET_LENGTH
        if not isinstance(secret, str) or not low <= len(secret) <= high:
            raise bad('secret must be %d to %d characters long' % (
                low, high))
        profile.username, profile.secret = user, secret

    def create_profile(self, body):
        name = fields.name('host_auth_profiles', body)
        self.records.unique(HostAuthProfile, 'name', name)
        if body.get('auth_type', 'CHAP') != 'CHAP':
            raise bad('auth_type %r is not supported (CHAP only)' % (
                body.get('auth_type'),))
        profile = HostAuthProfile(name=name)
        self._chap(body, profile)
        return self.records.new(profile)

    def update_profile(self, profile, body):
        self._chap(body, profile)
        return self.records.put(profile)

    def delete_profile(self, profile):
        if self.records.has_children(Host, 'host_auth_profile',
                                     Ref.to(profile)):
            raise bad('host auth profile %s is used by a host' %
                      profile.name)

    # -- ports ---------------------------------------------------------------
    def _port(self, kind, field, value, body):
        self.records.unique(kind, field, value)
        host = self.records.deref(body, 'host', (Host,))
        return self.records.new(kind(**{field: value,
                                        'host': Ref.to(host)}))

    def create_iqn(self, body):
        iqn = body.get('iqn')
        if not isinstance(iqn, str) or not IQN_RE.match(iqn):
            raise bad('iqn %r is not an iSCSI qualified name' % (iqn,))
        return self._port(models.HostIqn, 'iqn', iqn, body)

    def create_fc_port(self, body):
        pwwn = body.get('pwwn')
        if not isinstance(pwwn, str) or not WWN_RE.match(pwwn):
            raise bad('pwwn %r is not a WWN like 10:00:00:00:c9:00:00:01' %
                      (pwwn,))
        return self._port(models.HostFcPort, 'pwwn', pwwn.lower(), body)

    # -- mappings ------------------------------------------------------------
    def create_mapping(self, body):
        """Map a volume or volsnap; a view (``/snapshots/N`` with
        ``is_exposable``) maps each of its volsnaps, as K2 does.
        """
        target = self.records.deref(body, 'volume', (
            models.Volume, models.Volsnap, models.Snapshot))
        if isinstance(target, models.Snapshot):
            if not target.is_exposable:
                raise bad('snapshot %s is not a view (is_exposable is '
                          'false); only views can be mapped' % target.name)
            targets = self.records.children(models.Volsnap, 'snapshot',
                                            Ref.to(target))
            if not targets:
                raise bad('%s has no volumes to map' % Ref.to(target).path)
        else:
            targets = [target]
        host = self.records.deref(body, 'host', (Host,))
        host_ref = Ref.to(host)
        for obj in targets:
            volumes.not_builtin(obj)
        refs = [Ref.to(obj) for obj in targets]
        for m in self.records.children_of(Mapping, 'volume', refs):
            if m.host == host_ref:
                raise bad('%s is already mapped to host %s (LUN %d)' % (
                    m.volume.path, host.name, m.lun))
        # The host's LUN numbers only: no mapping is decoded.
        used = set(self.records.store.pluck(Mapping.KIND, 'host.ref',
                                            host_ref.path, '$.lun'))
        if 'lun' in body:
            if len(targets) != 1:
                raise bad('lun is given but %s has %d volumes' % (
                    body['volume']['ref'], len(targets)))
            lun = fields.integer(body, 'lun', minimum=1, maximum=MAX_LUN)
            if lun in used:
                raise bad('LUN %d is already used on host %s' % (
                    lun, host.name))
            luns = [lun]
        else:
            luns = [n for n in range(1, MAX_LUN + 1)
                    if n not in used][:len(targets)]
            if len(luns) < len(targets):
                raise bad('host %s has no free LUN' % host.name)
        created = [self.records.new(Mapping(volume=ref, host=host_ref,
                                            lun=lun))
                   for ref, lun in zip(refs, luns)]
        return created[0]
