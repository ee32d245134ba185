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
from reference_array.k2 import refs
from reference_array.k2 import volumes

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
        self.records.unique('hosts', 'name', name)
        host = {'name': name, 'type': self._type(body.get('type', 'Linux')),
                'host_group': None,
                'description': body.get('description', ''),
                'host_auth_profile': None}
        if body.get('host_auth_profile') is not None:
            host['host_auth_profile'] = self._profile_ref(body)
        return self.records.new('hosts', host)

    def _profile_ref(self, body):
        _res, profile = self.records.deref(body, 'host_auth_profile',
                                           ('host_auth_profiles',))
        return refs.ref('host_auth_profiles', profile['id'])

    def update_host(self, host, body):
        if 'name' in body:
            host['name'] = fields.name('hosts', body)
            self.records.unique('hosts', 'name', host['name'], host['id'])
        if 'type' in body:
            host['type'] = self._type(body['type'])
        if 'host_auth_profile' in body:
            host['host_auth_profile'] = (
                None if body['host_auth_profile'] is None
                else self._profile_ref(body))
        if 'description' in body:
            host['description'] = str(body['description'])
        return self.records.put('hosts', host)

    def delete_host(self, host):
        ref = refs.path('hosts', host['id'])
        if self.records.has_children('mappings', 'host', ref):
            raise bad('host %s still has mappings' % host['name'])
        for kind in ('host_iqns', 'host_fc_ports'):
            for port in self.records.children(kind, 'host', ref):
                self.records.delete(kind, port['id'])

    # -- CHAP profiles -------------------------------------------------------
    @staticmethod
    def _chap(body, profile):
        user = body.get('username', profile.get('username'))
        secret = body.get('secret', profile.get('_secret'))
        if not isinstance(user, str) or not user or len(user) > 255:
            raise bad('username must be a string of 1 to 255 characters')
        low, high = CHAP_SECRET_LENGTH
        if not isinstance(secret, str) or not low <= len(secret) <= high:
            raise bad('secret must be %d to %d characters long' % (
                low, high))
        profile['username'], profile['_secret'] = user, secret

    def create_profile(self, body):
        name = fields.name('host_auth_profiles', body)
        self.records.unique('host_auth_profiles', 'name', name)
        if body.get('auth_type', 'CHAP') != 'CHAP':
            raise bad('auth_type %r is not supported (CHAP only)' % (
                body.get('auth_type'),))
        profile = {'name': name, 'auth_type': 'CHAP'}
        self._chap(body, profile)
        return self.records.new('host_auth_profiles', profile)

    def update_profile(self, profile, body):
        self._chap(body, profile)
        return self.records.put('host_auth_profiles', profile)

    def delete_profile(self, profile):
        ref = refs.path('host_auth_profiles', profile['id'])
        if self.records.has_children('hosts', 'host_auth_profile', ref):
            raise bad('host auth profile %s is used by a host' %
                      profile['name'])

    # -- ports ---------------------------------------------------------------
    def _port(self, resource, field, value, body):
        self.records.unique(resource, field, value)
        _res, host = self.records.deref(body, 'host', ('hosts',))
        return self.records.new(resource, {
            field: value, 'host': refs.ref('hosts', host['id'])})

    def create_iqn(self, body):
        iqn = body.get('iqn')
        if not isinstance(iqn, str) or not IQN_RE.match(iqn):
            raise bad('iqn %r is not an iSCSI qualified name' % (iqn,))
        return self._port('host_iqns', 'iqn', iqn, body)

    def create_fc_port(self, body):
        pwwn = body.get('pwwn')
        if not isinstance(pwwn, str) or not WWN_RE.match(pwwn):
            raise bad('pwwn %r is not a WWN like 10:00:00:00:c9:00:00:01' %
                      (pwwn,))
        return self._port('host_fc_ports', 'pwwn', pwwn.lower(), body)

    # -- mappings ------------------------------------------------------------
    def create_mapping(self, body):
        """Map a volume or volsnap; a view (``/snapshots/N`` with
        ``is_exposable``) maps each of its volsnaps, as K2 does.
        """
        res, target = self.records.deref(body, 'volume', (
            'volumes', 'volsnaps', 'snapshots'))
        if res == 'snapshots':
            if not target.get('is_exposable'):
                raise bad('snapshot %s is not a view (is_exposable is '
                          'false); only views can be mapped' %
                          target['name'])
            targets = [('volsnaps', vs) for vs in self.records.children(
                'volsnaps', 'snapshot', refs.path('snapshots',
                                                  target['id']))]
        else:
            targets = [(res, target)]
        _hres, host = self.records.deref(body, 'host', ('hosts',))
        host_ref = refs.path('hosts', host['id'])
        mapped = self.records.children('mappings', 'host', host_ref)
        used = {m['lun'] for m in mapped}
        if 'lun' in body:
            if len(targets) != 1:
                raise bad('lun is given but %s has %d volumes' % (
                    body['volume']['ref'], len(targets)))
            lun = fields.integer(body, 'lun', minimum=1, maximum=MAX_LUN)
            if lun in used:
                raise bad('LUN %d is already used on host %s' % (
                    lun, host['name']))
            luns = [lun]
        else:
            luns = [n for n in range(1, MAX_LUN + 1)
                    if n not in used][:len(targets)]
            if len(luns) < len(targets):
                raise bad('host %s has no free LUN' % host['name'])
        created = []
        for (res, obj), lun in zip(targets, luns):
            volumes.not_builtin(obj)
            target_ref = refs.path(res, obj['id'])
            for m in mapped:
                if m['volume']['ref'] == target_ref:
                    raise bad('%s is already mapped to host %s (LUN %d)' % (
                        target_ref, host['name'], m['lun']))
            created.append(self.records.new('mappings', {
                'volume': {'ref': target_ref}, 'host': {'ref': host_ref},
                'lun': lun, 'unique_target': False}))
        if not created:
            raise bad('%s has no volumes to map' % body['volume']['ref'])
        return created[0]
