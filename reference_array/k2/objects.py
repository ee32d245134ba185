"""Writable K2 objects: volume groups, volumes, snapshots, hosts, mappings.

Each create/update/delete validates everything first and changes state
inside one metadata transaction, so a refused call leaves nothing behind.
Internal fields (the engine layer of a volume) start with ``_`` and are
never sent to clients.
"""

import re
import time

from reference_array.k2 import api as k2api

NAME_RE = re.compile(r'^[0-9A-Za-z_.:-]+$')
NAME_LIMITS = {'volume_groups': 42, 'volumes': 42, 'hosts': 32,
               'snapshots': 42, 'host_auth_profiles': 32}
CHAP_SECRET_LENGTH = (12, 16)   # what iSCSI initiators accept
HOST_TYPES = ('Linux', 'Windows', 'ESX', 'AIX', 'Solaris', 'HPUX', 'Other')
IQN_RE = re.compile(r'^(iqn\.\d{4}-\d{2}\.[^\s]+|eui\.[0-9A-Fa-f]{16})$')
WWN_RE = re.compile(r'^([0-9a-fA-F]{2}:){7}[0-9a-fA-F]{2}$')
MAX_LUN = 16383

WRITABLE = {
    'volume_groups': {'create': ('name', 'quota', 'is_dedup', 'description'),
                      'update': ('name', 'quota', 'description',
                                 'last_restored_from')},
    'volumes': {'create': ('name', 'size', 'volume_group', 'description',
                           'read_only', 'source'),
                'update': ('name', 'size', 'volume_group', 'description',
                           'read_only')},
    'snapshots': {'create': ('short_name', 'source', 'retention_policy',
                             'is_auto_deleteable', 'is_exposable',
                             'description'),
                  'update': ('short_name', 'is_exposable',
                             'retention_policy', 'description')},
    'hosts': {'create': ('name', 'type', 'description', 'host_auth_profile'),
              'update': ('name', 'type', 'description', 'host_auth_profile')},
    'host_auth_profiles': {'create': ('name', 'auth_type', 'username',
                                      'secret'),
                           'update': ('username', 'secret')},
    'host_iqns': {'create': ('iqn', 'host'), 'update': ()},
    'host_fc_ports': {'create': ('pwwn', 'host'), 'update': ()},
    'mappings': {'create': ('volume', 'host', 'lun'), 'update': ()},
}

FIELDS = {
    'volume_groups': ('id', 'name', 'quota', 'is_dedup', 'description',
                      'volumes_count', 'snapshots_count', 'logical_capacity',
                      'volumes_provisioned_capacity', 'replication_session',
                      'last_restored_from', 'capacity_state'),
    'volumes': ('id', 'name', 'size', 'volume_group', 'is_dedup',
                'description', 'read_only', 'logical_capacity', 'scsi_sn',
                'scsi_suffix', 'avg_compressed_ratio', 'no_dedup'),
    'snapshots': ('id', 'short_name', 'name', 'source', 'volume_group',
                  'retention_policy', 'is_auto_deleteable', 'is_exposable',
                  'is_deleted', 'generation_number', 'creation_time',
                  'description', 'wwn'),
    'volsnaps': ('id', 'name', 'snapshot', 'source', 'scsi_sn'),
    'hosts': ('id', 'name', 'type', 'host_group', 'description',
              'host_auth_profile'),
    'host_auth_profiles': ('id', 'name', 'auth_type', 'username'),
    'host_iqns': ('id', 'iqn', 'host'),
    'host_fc_ports': ('id', 'pwwn', 'host'),
    'mappings': ('id', 'volume', 'host', 'lun', 'unique_target'),
}


def bad(message):
    return k2api.error(400, message)


def check_fields(writable, resource, body, action):
    """Refuse fields the ``writable`` table does not allow for ``action``."""
    allowed = writable[resource][action]
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise bad('unknown or read-only field(s) for %s %s: %s' % (
            action, resource, ', '.join(unknown)))


def public(obj):
    return {k: v for k, v in obj.items() if not k.startswith('_')}


def _bool(body, field, default=None):
    value = body.get(field, default)
    if isinstance(value, str) and value.lower() in ('true', 'false'):
        return value.lower() == 'true'
    if not isinstance(value, bool):
        raise bad('%s must be a boolean, not %r' % (field, value))
    return value


def _int(body, field, minimum=None, maximum=None):
    value = body.get(field)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad('%s must be an integer, not %r' % (field, value))
    if minimum is not None and value < minimum:
        raise bad('%s=%d is below the minimum %d' % (field, value, minimum))
    if maximum is not None and value > maximum:
        raise bad('%s=%d is above the maximum %d' % (field, value, maximum))
    return value


def _name(resource, body, field='name'):
    value = body.get(field)
    limit = NAME_LIMITS[resource]
    if not isinstance(value, str) or not value:
        raise bad('%s must be a non-empty string, not %r' % (field, value))
    if len(value) > limit:
        raise bad('%s %r is longer than %d characters' % (field, value,
                                                          limit))
    if not NAME_RE.match(value):
        raise bad('%s %r has characters outside [0-9A-Za-z_.:-]' % (
            field, value))
    return value


class K2Objects(object):
    """Writes to the K2 object model, on the metadata store and engine."""

    volume_source = True

    def __init__(self, store, engine, max_volume_kib):
        self.store = store
        self.engine = engine
        self.max_volume_kib = max_volume_kib

    # -- helpers -------------------------------------------------------------
    def _check_fields(self, resource, body, action):
        check_fields(WRITABLE, resource, body, action)

    def _deref(self, body, field, resources):
        value = body.get(field)
        if not isinstance(value, dict) or not isinstance(
                value.get('ref'), str):
            raise bad('%s must be a reference {"ref": "/<resource>/<id>"}, '
                      'not %r' % (field, value))
        match = re.match(r'^/(.+)/(\d+)$', value['ref'])
        if not match or match.group(1) not in resources:
            raise bad('%s must refer to %s, not %s' % (
                field, ' or '.join(resources), value['ref']))
        obj = self.store.get(match.group(1), int(match.group(2)))
        if obj is None:
            raise bad('%s %s does not exist' % (field, value['ref']))
        return match.group(1), obj

    def _unique(self, resource, field, value, skip_id=None):
        for obj in self.store.all(resource):
            if obj.get(field) == value and obj['id'] != skip_id:
                raise bad('%s %s=%r already exists (id %d)' % (
                    resource, field, value, obj['id']))

    def _children(self, resource, field, ref):
        return [o for o in self.store.all(resource)
                if isinstance(o.get(field), dict)
                and o[field].get('ref') == ref]

    def _existing(self, resource, obj_id):
        obj = self.store.get(resource, obj_id)
        if obj is None:
            raise k2api.error(404, '%s %d does not exist' % (resource,
                                                             obj_id))
        return obj

    def _rename(self, resource, obj, body):
        if 'name' in body:
            obj['name'] = _name(resource, body)
            self._unique(resource, 'name', obj['name'], obj['id'])

    def _save(self, resource, obj, body):
        if 'description' in body:
            obj['description'] = str(body['description'])
        self.store.put(resource, obj['id'], obj)
        return obj

    def _new(self, resource, obj):
        obj['id'] = self.store.next_id(resource)
        self.store.put(resource, obj['id'], obj)
        return obj

    # -- dispatch ------------------------------------------------------------
    def create(self, resource, body):
        if resource not in WRITABLE:
            raise k2api.error(405, 'creating %s is not supported' % resource)
        self._check_fields(resource, body, 'create')
        with self.store.transaction():
            return getattr(self, '_create_' + resource)(body)

    def update(self, resource, obj_id, body):
        if resource not in WRITABLE or not WRITABLE[resource]['update']:
            raise k2api.error(405, 'changing %s is not supported' % resource)
        self._check_fields(resource, body, 'update')
        with self.store.transaction():
            obj = self._existing(resource, obj_id)
            return getattr(self, '_update_' + resource)(obj, body)

    def delete(self, resource, obj_id):
        if resource not in WRITABLE:
            raise k2api.error(405, 'deleting %s is not supported' % resource)
        with self.store.transaction():
            obj = self._existing(resource, obj_id)
            handler = getattr(self, '_delete_' + resource, None)
            if handler is not None:
                handler(obj)
            self.store.delete(resource, obj_id)

    # -- volume groups -------------------------------------------------------
    def _create_volume_groups(self, body):
        name = _name('volume_groups', body)
        self._unique('volume_groups', 'name', name)
        if 'quota' not in body:
            raise bad('quota is mandatory (0 means unlimited)')
        quota = _int(body, 'quota', minimum=0)
        return self._new('volume_groups', {
            'name': name, 'quota': quota,
            'is_dedup': _bool(body, 'is_dedup', True),
            'description': body.get('description', ''),
            'replication_session': None, 'last_restored_from': None,
            'capacity_state': 'ok'})

    def _update_volume_groups(self, vg, body):
        self._rename('volume_groups', vg, body)
        if 'quota' in body:
            vg['quota'] = _int(body, 'quota', minimum=0)
        if 'last_restored_from' in body:
            self._restore_group(vg, body)
        return self._save('volume_groups', vg, body)

    def _restore_group(self, vg, body):
        _res, snap = self._deref(body, 'last_restored_from', ('snapshots',))
        vg_ref = '/volume_groups/%d' % vg['id']
        if snap['volume_group']['ref'] != vg_ref:
            raise bad('snapshot %d is not a snapshot of volume group %d' % (
                snap['id'], vg['id']))
        volsnaps = self._children('volsnaps', 'snapshot',
                                  '/snapshots/%d' % snap['id'])
        by_volume = {vs['source']['ref']: vs for vs in volsnaps}
        for vol in self._children('volumes', 'volume_group', vg_ref):
            vs = by_volume.get('/volumes/%d' % vol['id'])
            if vs is None:
                continue
            old = vol['_layer']
            vol['_layer'] = self.engine.new_layer(parent=vs['_layer'],
                                                  dedup=vg['is_dedup'])
            self.engine.release(old)
            self.store.put('volumes', vol['id'], vol)
        vg['last_restored_from'] = {'ref': '/snapshots/%d' % snap['id']}

    def _delete_volume_groups(self, vg):
        ref = '/volume_groups/%d' % vg['id']
        if self._children('volumes', 'volume_group', ref):
            raise bad('volume group %s still has volumes' % vg['name'])
        if self._children('snapshots', 'volume_group', ref):
            raise bad('volume group %s still has snapshots' % vg['name'])
        if vg.get('replication_session'):
            raise bad('volume group %s is replicated; delete its session '
                      'first' % vg['name'])

    # -- volumes -------------------------------------------------------------
    def _size(self, body):
        return _int(body, 'size', minimum=1, maximum=self.max_volume_kib)

    def _create_volumes(self, body):
        name = _name('volumes', body)
        self._unique('volumes', 'name', name)
        size = self._size(body)
        _res, vg = self._deref(body, 'volume_group', ('volume_groups',))
        if 'source' in body:
            if not self.volume_source:
                raise bad('source is not supported by this array')
            layer = self._copy_of(body, size, vg['is_dedup'])
        else:
            layer = self.engine.new_layer(dedup=vg['is_dedup'])
        vol = self._new('volumes', {
            'name': name, 'size': size,
            'volume_group': {'ref': '/volume_groups/%d' % vg['id']},
            'is_dedup': vg['is_dedup'], 'no_dedup': not vg['is_dedup'],
            'description': body.get('description', ''),
            'read_only': _bool(body, 'read_only', False),
            '_layer': layer})
        vol['scsi_sn'] = 'REFA%012X' % vol['id']
        vol['scsi_suffix'] = vol['id']
        self.store.put('volumes', vol['id'], vol)
        return vol

    def _copy_of(self, body, size, dedup):
        """A layer holding a point-in-time copy of a volume or volsnap.

        Copy-on-write: its cost does not depend on the data in the source.
        A writable source (a volume, or a volsnap of an exposed view) is
        frozen first so later writes to it do not show in the copy.
        """
        res, src = self._deref(body, 'source', ('volumes', 'volsnaps'))
        self._not_builtin(src)
        if size < src['_size' if res == 'volsnaps' else 'size']:
            raise bad('size %d KiB is smaller than the source %s' % (
                size, body['source']['ref']))
        frozen = src['_layer']
        writable = res == 'volumes' or self.store.get(
            'snapshots', int(src['snapshot']['ref'].rsplit('/', 1)[1])
        ).get('is_exposable')
        if writable:
            src['_layer'] = self.engine.freeze(frozen)
            self.store.put(res, src['id'], src)
        layer = self.engine.new_layer(parent=frozen, dedup=dedup)
        if writable:
            self.engine.release(frozen)
        return layer

    @staticmethod
    def _not_builtin(obj):
        if obj.get('_builtin'):
            raise bad('%s is a built-in volume' % obj['name'])

    def _update_volumes(self, vol, body):
        self._not_builtin(vol)
        if 'size' in body:
            size = self._size(body)
            if size < vol['size']:
                raise bad('size %d KiB is smaller than the current %d KiB; '
                          'volumes cannot shrink' % (size, vol['size']))
            vol['size'] = size
        self._rename('volumes', vol, body)
        if 'volume_group' in body:
            _res, vg = self._deref(body, 'volume_group', ('volume_groups',))
            if vg['is_dedup'] != vol['is_dedup']:
                raise bad('volume %s cannot move between dedup and no-dedup '
                          'volume groups' % vol['name'])
            vol['volume_group'] = {'ref': '/volume_groups/%d' % vg['id']}
        if 'read_only' in body:
            vol['read_only'] = _bool(body, 'read_only')
        return self._save('volumes', vol, body)

    def _delete_volumes(self, vol):
        self._not_builtin(vol)
        ref = '/volumes/%d' % vol['id']
        if self._children('mappings', 'volume', ref):
            raise bad('volume %s is mapped; unmap it first' % vol['name'])
        for pv in self._children('replication/peer_volumes', 'local_volume',
                                 ref):
            if pv.get('_base'):
                self.engine.release(pv['_base'])
            self.store.delete('replication/peer_volumes', pv['id'])
        self.engine.release(vol['_layer'])

    # -- snapshots -----------------------------------------------------------
    def _create_snapshots(self, body):
        short = _name('snapshots', body, 'short_name')
        res, source = self._deref(body, 'source', ('volume_groups',
                                                   'snapshots'))
        if 'retention_policy' in body:
            self._deref(body, 'retention_policy', ('retention_policies',))
        if res == 'volume_groups':
            vg, parent_snap = source, None
        else:
            parent_snap = source
            vg = self.store.get('volume_groups', int(
                source['volume_group']['ref'].rsplit('/', 1)[1]))
        full = '%s:%s' % (vg['name'], short)
        self._unique('snapshots', 'name', full)
        snap = self._new('snapshots', {
            'short_name': short, 'name': full,
            'source': {'ref': '/%s/%d' % (res, source['id'])},
            'volume_group': {'ref': '/volume_groups/%d' % vg['id']},
            'retention_policy': body.get('retention_policy'),
            'is_auto_deleteable': _bool(body, 'is_auto_deleteable', False),
            'is_exposable': _bool(body, 'is_exposable',
                                  parent_snap is not None),
            'is_deleted': False,
            'description': body.get('description', ''),
            'generation_number': self.store.next_id('generation'),
            'creation_time': int(time.time())})
        snap['wwn'] = '6%031x' % (0x5000 << 64 | snap['id'])
        self.store.put('snapshots', snap['id'], snap)
        snap_ref = {'ref': '/snapshots/%d' % snap['id']}
        if parent_snap is None:
            members = self._children('volumes', 'volume_group',
                                     '/volume_groups/%d' % vg['id'])
            for vol in members:
                frozen = vol['_layer']
                vol['_layer'] = self.engine.freeze(frozen)
                self.store.put('volumes', vol['id'], vol)
                self._new_volsnap(snap, snap_ref, vol['name'],
                                  {'ref': '/volumes/%d' % vol['id']},
                                  frozen, vol['size'])
        else:
            for vs in self._children('volsnaps', 'snapshot',
                                     '/snapshots/%d' % parent_snap['id']):
                layer = self.engine.new_layer(parent=vs['_layer'],
                                              dedup=vg['is_dedup'])
                self._new_volsnap(snap, snap_ref,
                                  vs['name'].rsplit(':', 1)[1],
                                  vs['source'], layer, vs['_size'])
        return snap

    def _new_volsnap(self, snap, snap_ref, volume_name, source, layer, size):
        vs = self._new('volsnaps', {
            'name': '%s:%s' % (snap['name'], volume_name),
            'snapshot': snap_ref, 'source': source, '_layer': layer,
            '_size': size})
        vs['scsi_sn'] = 'REFS%012X' % vs['id']
        self.store.put('volsnaps', vs['id'], vs)

    def _update_snapshots(self, snap, body):
        if 'short_name' in body:
            short = _name('snapshots', body, 'short_name')
            vg_name = snap['name'].rsplit(':', 1)[0]
            snap['short_name'] = short
            snap['name'] = '%s:%s' % (vg_name, short)
            self._unique('snapshots', 'name', snap['name'], snap['id'])
        if 'is_exposable' in body:
            snap['is_exposable'] = _bool(body, 'is_exposable')
        return self._save('snapshots', snap, body)

    def _delete_snapshots(self, snap):
        ref = '/snapshots/%d' % snap['id']
        volsnaps = self._children('volsnaps', 'snapshot', ref)
        for vs in volsnaps:
            if self._children('mappings', 'volume',
                              '/volsnaps/%d' % vs['id']):
                raise bad('snapshot %s is mapped; unmap it first' %
                          snap['name'])
        if self._children('snapshots', 'source', ref):
            raise bad('snapshot %s has views; delete them first' %
                      snap['name'])
        for vs in volsnaps:
            self.engine.release(vs['_layer'])
            self.store.delete('volsnaps', vs['id'])

    # -- hosts ---------------------------------------------------------------
    def _create_hosts(self, body):
        name = _name('hosts', body)
        self._unique('hosts', 'name', name)
        host_type = body.get('type', 'Linux')
        if host_type not in HOST_TYPES:
            raise bad('type %r is not one of %s' % (host_type,
                                                    ', '.join(HOST_TYPES)))
        host = {'name': name, 'type': host_type, 'host_group': None,
                'description': body.get('description', ''),
                'host_auth_profile': None}
        if body.get('host_auth_profile') is not None:
            host['host_auth_profile'] = self._profile_ref(body)
        return self._new('hosts', host)

    def _profile_ref(self, body):
        _res, profile = self._deref(body, 'host_auth_profile',
                                    ('host_auth_profiles',))
        return {'ref': '/host_auth_profiles/%d' % profile['id']}

    def _chap(self, body, profile):
        user = body.get('username', profile.get('username'))
        secret = body.get('secret', profile.get('_secret'))
        if not isinstance(user, str) or not user or len(user) > 255:
            raise bad('username must be a string of 1 to 255 characters')
        low, high = CHAP_SECRET_LENGTH
        if not isinstance(secret, str) or not low <= len(secret) <= high:
            raise bad('secret must be %d to %d characters long' % (
                low, high))
        profile['username'], profile['_secret'] = user, secret

    def _create_host_auth_profiles(self, body):
        name = _name('host_auth_profiles', body)
        self._unique('host_auth_profiles', 'name', name)
        if body.get('auth_type', 'CHAP') != 'CHAP':
            raise bad('auth_type %r is not supported (CHAP only)' % (
                body.get('auth_type'),))
        profile = {'name': name, 'auth_type': 'CHAP'}
        self._chap(body, profile)
        return self._new('host_auth_profiles', profile)

    def _update_host_auth_profiles(self, profile, body):
        self._chap(body, profile)
        self.store.put('host_auth_profiles', profile['id'], profile)
        return profile

    def _delete_host_auth_profiles(self, profile):
        ref = '/host_auth_profiles/%d' % profile['id']
        if self._children('hosts', 'host_auth_profile', ref):
            raise bad('host auth profile %s is used by a host' %
                      profile['name'])

    def _update_hosts(self, host, body):
        self._rename('hosts', host, body)
        if 'type' in body:
            if body['type'] not in HOST_TYPES:
                raise bad('type %r is not one of %s' % (
                    body['type'], ', '.join(HOST_TYPES)))
            host['type'] = body['type']
        if 'host_auth_profile' in body:
            host['host_auth_profile'] = (
                None if body['host_auth_profile'] is None
                else self._profile_ref(body))
        return self._save('hosts', host, body)

    def _delete_hosts(self, host):
        ref = '/hosts/%d' % host['id']
        if self._children('mappings', 'host', ref):
            raise bad('host %s still has mappings' % host['name'])
        for kind in ('host_iqns', 'host_fc_ports'):
            for port in self._children(kind, 'host', ref):
                self.store.delete(kind, port['id'])

    def _create_host_iqns(self, body):
        iqn = body.get('iqn')
        if not isinstance(iqn, str) or not IQN_RE.match(iqn):
            raise bad('iqn %r is not an iSCSI qualified name' % (iqn,))
        self._unique('host_iqns', 'iqn', iqn)
        _res, host = self._deref(body, 'host', ('hosts',))
        return self._new('host_iqns', {
            'iqn': iqn, 'host': {'ref': '/hosts/%d' % host['id']}})

    def _create_host_fc_ports(self, body):
        pwwn = body.get('pwwn')
        if not isinstance(pwwn, str) or not WWN_RE.match(pwwn):
            raise bad('pwwn %r is not a WWN like 10:00:00:00:c9:00:00:01' %
                      (pwwn,))
        pwwn = pwwn.lower()
        self._unique('host_fc_ports', 'pwwn', pwwn)
        _res, host = self._deref(body, 'host', ('hosts',))
        return self._new('host_fc_ports', {
            'pwwn': pwwn, 'host': {'ref': '/hosts/%d' % host['id']}})

    # -- mappings ------------------------------------------------------------
    def _create_mappings(self, body):
        res, target = self._deref(body, 'volume', ('volumes', 'volsnaps'))
        self._not_builtin(target)
        _hres, host = self._deref(body, 'host', ('hosts',))
        target_ref = '/%s/%d' % (res, target['id'])
        host_ref = '/hosts/%d' % host['id']
        used = {m['lun'] for m in self._children('mappings', 'host',
                                                 host_ref)}
        for m in self._children('mappings', 'host', host_ref):
            if m['volume']['ref'] == target_ref:
                raise bad('%s is already mapped to host %s (LUN %d)' % (
                    target_ref, host['name'], m['lun']))
        if 'lun' in body:
            lun = _int(body, 'lun', minimum=1, maximum=MAX_LUN)
            if lun in used:
                raise bad('LUN %d is already used on host %s' % (
                    lun, host['name']))
        else:
            lun = next(n for n in range(1, MAX_LUN + 2) if n not in used)
            if lun > MAX_LUN:
                raise bad('host %s has no free LUN' % host['name'])
        return self._new('mappings', {
            'volume': {'ref': target_ref}, 'host': {'ref': host_ref},
            'lun': lun, 'unique_target': False})
