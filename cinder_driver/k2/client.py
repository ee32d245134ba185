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

"""The K2 REST API v2 as operations: what the driver asks of an array.

Each method names one operation and takes and returns ids and checked
records (:mod:`cinder_driver.k2.records`); resource paths, references and
query filters exist only here and in :mod:`cinder_driver.k2.rest`. Every
create goes through ``create_unique``: an answer lost on the way back is
recovered by looking the object up, never by sending the POST again.
"""

import contextlib

from cinder_driver.common import exception
from cinder_driver.k2 import records
from cinder_driver.k2 import rest

DEFAULT_PORT = rest.DEFAULT_PORT
MIN_API_VERSION = (2, 2, 0)
# Every K2 has this volume; it is no one's.
BUILTIN_VOLUME = 'CTRL'
# What an initiator kind is called on the wire: (resource, field).
INITIATORS = {'iscsi': ('host_iqns', 'iqn'), 'fc': ('host_fc_ports', 'pwwn')}

# Kept for code that reads the wire itself (tests inspecting the array).
ref = rest.ref
ref_id = rest.ref_id
_ref = rest.ref_text


class K2Client(object):

    def __init__(self, host, username, password, port=None, verify=True,
                 connect_timeout=10.0, read_timeout=60.0, retries=4,
                 backoff=1.0, sleep=None):
        self.rest = rest.K2Rest(
            host, username, password, port=port, verify=verify,
            connect_timeout=connect_timeout, read_timeout=read_timeout,
            retries=retries, backoff=backoff, sleep=sleep)
        self.http = self.rest.http
        self.address = self.rest.address
        self.endpoint = self.rest.endpoint

    @property
    def name(self):
        return self.rest.name

    # -- reading objects -----------------------------------------------------
    @contextlib.contextmanager
    def _reading(self, operation, resource, method='GET'):
        """A reply that does not fit becomes ArrayBadReply naming the call."""
        try:
            yield
        except records.BadShape as e:
            raise self.rest.bad(method, '/' + resource, 200,
                                '%s: %s' % (operation, e))

    def _all(self, operation, resource, build, **filters):
        hits = self.rest.search(resource, **filters)
        with self._reading(operation, resource):
            return [build(hit) for hit in hits]

    def _one(self, operation, resource, build, **filters):
        found = self._all(operation, resource, build, **filters)
        return found[0] if found else None

    def _get(self, operation, resource, build, obj_id):
        obj = self.rest.get(resource, obj_id)
        with self._reading(operation, resource):
            return build(obj)

    # -- the array -----------------------------------------------------------
    def discover_capabilities(self):
        return self.rest.discover_capabilities()

    def system_state(self):
        obj = self.rest.system_state()
        with self._reading('system_state', 'system/state'):
            return records.state(obj)

    def iscsi_addresses(self):
        found = []
        for ip in self.rest.search('system/net_ips'):
            address = ip.get('ip_address')
            if isinstance(address, str) and address and \
                    not ip.get('wan_port'):
                found.append(address)
        return found

    def fc_target_wwns(self):
        """The array's FC target ports, lower case without colons."""
        return [port['pwwn'].replace(':', '').lower()
                for port in self.rest.search('system/fc_ports')
                if isinstance(port.get('pwwn'), str) and port['pwwn']]

    def capacity(self):
        obj = self.rest.find('system/capacity') or {}
        with self._reading('capacity', 'system/capacity'):
            return records.capacity(obj)

    def performance(self):
        obj = self.rest.find('stats/system') or {}
        return {key: records.number(obj, key) for key in (
            'read_iops_avg', 'write_iops_avg', 'throughput_avg',
            'latency_avg')}

    def retention_policy_id(self, name):
        found = self.rest.find('retention_policies', name=name)
        with self._reading('retention_policy_id', 'retention_policies'):
            return None if found is None else records._id(found)

    # -- volume groups -------------------------------------------------------
    def create_volume_group(self, name, dedup):
        body = {'name': name, 'quota': 0, 'is_dedup': bool(dedup)}
        return self.rest.create_unique('volume_groups', body,
                                       name=name)['id']

    def volume_group(self, group_id):
        return self._get('volume_group', 'volume_groups',
                         records.volume_group, group_id)

    def volume_group_by_name(self, name):
        return self._one('volume_group_by_name', 'volume_groups',
                         records.volume_group, name=name)

    def volume_groups(self):
        return self._all('volume_groups', 'volume_groups',
                         records.volume_group)

    def rename_volume_group(self, group_id, name):
        self.rest.update('volume_groups', group_id, {'name': name})

    def restore_volume_group(self, group_id, snapshot_id):
        self.rest.update('volume_groups', group_id, {
            'last_restored_from': ref('snapshots', snapshot_id)})

    def delete_volume_group(self, group_id):
        return self.rest.delete('volume_groups', group_id)

    # -- volumes -------------------------------------------------------------
    def create_volume(self, name, size_kib, group_id, description=None,
                      from_volume=None, from_volsnap=None):
        """A volume in ``group_id``, empty or a copy of a volume/volsnap."""
        body = {'name': name, 'size': size_kib,
                'volume_group': ref('volume_groups', group_id)}
        if description is not None:
            body['description'] = description
        if from_volume is not None:
            body['source'] = ref('volumes', from_volume)
        elif from_volsnap is not None:
            body['source'] = ref('volsnaps', from_volsnap)
        return self.rest.create_unique('volumes', body, name=name)['id']

    def volume(self, volume_id):
        return self._get('volume', 'volumes', records.volume, volume_id)

    def volume_by_name(self, name):
        return self._one('volume_by_name', 'volumes', records.volume,
                         name=name)

    def volumes_by_names(self, names):
        """{name: Volume} for many names in one call."""
        return self._by_names('volumes_by_names', 'volumes', records.volume,
                              names)

    def volumes(self):
        return self._all('volumes', 'volumes', records.volume)

    def count_volumes(self):
        """Volumes on the array, its built-in ones left out."""
        return self.rest.count('volumes', name__neq=BUILTIN_VOLUME)

    def volumes_in_group(self, group_id):
        return self._all('volumes_in_group', 'volumes', records.volume, **{
            'volume_group.ref': _ref('volume_groups', group_id)})

    def update_volume(self, volume_id, name=None, description=None,
                      size_kib=None):
        body = {key: value for key, value in (
            ('name', name), ('description', description),
            ('size', size_kib)) if value is not None}
        self.rest.update('volumes', volume_id, body)

    def move_volume(self, volume_id, group_id):
        self.rest.update('volumes', volume_id, {
            'volume_group': ref('volume_groups', group_id)})

    def delete_volume(self, volume_id):
        return self.rest.delete('volumes', volume_id)

    # -- snapshots -----------------------------------------------------------
    def create_snapshot(self, short_name, group_id, retention_policy_id,
                        description=None):
        """A snapshot of a whole volume group."""
        body = {'short_name': short_name,
                'source': ref('volume_groups', group_id),
                'retention_policy': ref('retention_policies',
                                        retention_policy_id),
                'is_auto_deleteable': False}
        if description is not None:
            body['description'] = description
        return self.rest.create_unique('snapshots', body, **{
            'short_name': short_name,
            'volume_group.ref': _ref('volume_groups', group_id)})['id']

    def create_view(self, short_name, snapshot_id, retention_policy_id):
        """A view of a snapshot: a snapshot of it that hosts can map."""
        return self.rest.create_unique('snapshots', {
            'short_name': short_name,
            'source': ref('snapshots', snapshot_id),
            'retention_policy': ref('retention_policies',
                                    retention_policy_id),
            'is_exposable': True}, short_name=short_name)['id']

    def snapshot(self, snapshot_id):
        return self._get('snapshot', 'snapshots', records.snapshot,
                         snapshot_id)

    def snapshot_by_name(self, short_name, group_id=None):
        filters = {'short_name': short_name}
        if group_id is not None:
            filters['volume_group.ref'] = _ref('volume_groups', group_id)
        return self._one('snapshot_by_name', 'snapshots', records.snapshot,
                         **filters)

    def snapshots(self):
        return self._all('snapshots', 'snapshots', records.snapshot)

    def update_snapshot(self, snapshot_id, short_name=None,
                        description=None):
        body = {key: value for key, value in (
            ('short_name', short_name), ('description', description))
            if value is not None}
        self.rest.update('snapshots', snapshot_id, body)

    def delete_snapshot(self, snapshot_id):
        return self.rest.delete('snapshots', snapshot_id)

    def volsnap_of(self, snapshot_id, volume_id=None):
        """The volsnap of ``snapshot_id`` (of ``volume_id``), or None."""
        filters = {'snapshot.ref': _ref('snapshots', snapshot_id)}
        if volume_id is not None:
            filters['source.ref'] = _ref('volumes', volume_id)
        found = self.rest.find('volsnaps', **filters)
        with self._reading('volsnap_of', 'volsnaps'):
            return None if found is None else records._id(found)

    def volsnaps_of(self, snapshot_id):
        """{volume id: volsnap id} of every member of a snapshot."""
        found = self.rest.search('volsnaps', **{
            'snapshot.ref': _ref('snapshots', snapshot_id)})
        with self._reading('volsnaps_of', 'volsnaps'):
            return {records._ref(vs, 'source'): records._id(vs)
                    for vs in found}

    # -- hosts and mappings --------------------------------------------------
    def create_host(self, name, auth_profile_id=None):
        body = {'name': name, 'type': 'Linux'}
        if auth_profile_id is not None:
            body['host_auth_profile'] = ref('host_auth_profiles',
                                            auth_profile_id)
        return self.rest.create_unique('hosts', body, name=name)['id']

    def host_by_name(self, name):
        found = self.rest.find('hosts', name=name)
        with self._reading('host_by_name', 'hosts'):
            return None if found is None else records._id(found)

    def set_host_auth_profile(self, host_id, auth_profile_id):
        self.rest.update('hosts', host_id, {
            'host_auth_profile': ref('host_auth_profiles', auth_profile_id)})

    def delete_host(self, host_id):
        return self.rest.delete('hosts', host_id)

    def add_initiator(self, kind, host_id, name):
        """Give the host an initiator (``kind`` 'iscsi' or 'fc')."""
        resource, field = INITIATORS[kind]
        return self.rest.create_unique(resource, {
            field: name, 'host': ref('hosts', host_id)}, **{field: name})['id']

    def host_of_initiators(self, kind, names):
        """The host holding any of the initiators, in one search, or None.
        """
        resource, field = INITIATORS[kind]
        found = self.rest.find(resource, **{field + '__in': ','.join(names)})
        with self._reading('host_of_initiators', resource):
            return None if found is None else records._ref(found, 'host')

    def ensure_auth_profile(self, name, username, secret):
        """The CHAP profile ``name`` with these credentials; its id."""
        body = {'name': name, 'auth_type': 'CHAP', 'username': username,
                'secret': secret}
        try:
            return self.rest.create_unique('host_auth_profiles', body,
                                           name=name)['id']
        except exception.ObjectExists:
            found = self.rest.find('host_auth_profiles', name=name)
            if found is None:
                raise
        with self._reading('ensure_auth_profile', 'host_auth_profiles'):
            profile_id = records._id(found)
        self.rest.update('host_auth_profiles', profile_id, {
            'username': username, 'secret': secret})
        return profile_id

    def _map(self, operation, host_id, resource, obj_id):
        target = ref(resource, obj_id)
        host = ref('hosts', host_id)
        key = {'volume.ref': target['ref'], 'host.ref': host['ref']}
        try:
            obj = self.rest.create_unique('mappings', {
                'volume': target, 'host': host}, **key)
        except exception.ObjectExists:
            obj = self.rest.find('mappings', **key)
            if obj is None:
                # Not mapped already: the host may be gone (ObjectNotFound).
                self.rest.get('hosts', host_id)
                raise
        with self._reading(operation, 'mappings', 'POST'):
            return records.mapping(obj)

    def map_volume(self, host_id, volume_id):
        """Map a volume to a host (or find it mapped); its LUN.

        Raises ObjectNotFound when the host no longer exists.
        """
        return self._map('map_volume', host_id, 'volumes', volume_id).lun

    def map_volsnap(self, host_id, volsnap_id):
        return self._map('map_volsnap', host_id, 'volsnaps', volsnap_id).lun

    def mappings_of(self, volume_id=None, host_id=None, volsnap_id=None):
        """Mappings of a volume (or volsnap), of a host, or of both."""
        filters = {}
        if volume_id is not None:
            filters['volume.ref'] = _ref('volumes', volume_id)
        if volsnap_id is not None:
            filters['volume.ref'] = _ref('volsnaps', volsnap_id)
        if host_id is not None:
            filters['host.ref'] = _ref('hosts', host_id)
        return self._all('mappings_of', 'mappings', records.mapping,
                         **filters)

    def mapped_volume_ids(self):
        """Ids of every volume mapped to a host."""
        prefix = '/volumes/'
        return {int(m.target[len(prefix):]) for m in self._all(
            'mapped_volume_ids', 'mappings', records.mapping)
            if m.target.startswith(prefix)}

    def unmap(self, mappings):
        for mapping in mappings:
            self.rest.delete('mappings', mapping.id)

    # -- replication ---------------------------------------------------------
    def peer_array_id(self, system_id):
        found = self.rest.find('replication/peer_k2arrays',
                               system_id=system_id)
        with self._reading('peer_array_id', 'replication/peer_k2arrays'):
            return None if found is None else records._id(found)

    def create_session(self, name, peer_array_id, group_id,
                       peer_group_name, rpo):
        return self.rest.create_unique('replication/sessions', {
            'name': name,
            'replication_peer_k2array': ref('replication/peer_k2arrays',
                                            peer_array_id),
            'local_volume_group': ref('volume_groups', group_id),
            'replication_peer_volume_group_name': peer_group_name,
            'remote_replication_session_name': name, 'rpo': rpo},
            name=name)['id']

    def add_peer_volume(self, session_id, volume_id, name):
        return self.rest.create_unique('replication/peer_volumes', {
            'local_volume': ref('volumes', volume_id), 'name': name,
            'replication_session': ref('replication/sessions', session_id)},
            **{'local_volume.ref': _ref('volumes', volume_id)})['id']

    def session(self, session_id):
        return self._get('session', 'replication/sessions', records.session,
                         session_id)

    def session_by_name(self, name):
        return self._one('session_by_name', 'replication/sessions',
                         records.session, name=name)

    def sessions_by_names(self, names):
        return self._by_names('sessions_by_names', 'replication/sessions',
                              records.session, names)

    def source_sessions(self):
        """Sessions this array replicates from."""
        return self._all('source_sessions', 'replication/sessions',
                         records.session, current_role='source')

    def set_session_state(self, session_id, state):
        self.rest.update('replication/sessions', session_id,
                         {'state': state})

    def delete_session(self, session_id):
        return self.rest.delete('replication/sessions', session_id)

    def _by_names(self, operation, resource, build, names):
        if not names:
            return {}
        found = self._all(operation, resource, build,
                          name__in=','.join(sorted(names)))
        return {obj.name: obj for obj in found}
