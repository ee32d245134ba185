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

"""Volume types onto LINSTOR resource groups.

Each volume type (and scheduler pool) is a resource group
``<prefix><type id>[-<pool>]`` carrying the type's placement filter and
DRBD properties, so LINSTOR itself applies placement to every volume
spawned from it. The group follows its type: keys the type drops are
cleared from the group, and groups of deleted types are removed once no
volume uses them.
"""

import hashlib
import re

from cinder import exception
from cinder.i18n import _
from oslo_log import log as logging

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import extra_specs
from cinder_driver.common import naming
from cinder_driver.linstor import apicallrc
from cinder_driver.linstor import client as linstor_client

LOG = logging.getLogger(__name__)
NAME_LIMIT = 48
SCOPE = 'linstor:'
PROPERTY_PREFIX = 'linstor:property:'
# The one key outside LINSTOR's own namespaces a type may set.
PROPERTY_KEY = re.compile(
    r'^DrbdOptions/((Resource|Net|Disk|PeerDevice|Handlers)/)?[A-Za-z-]+$')
LAYERS = ('drbd', 'luks', 'storage', 'nvme', 'writecache', 'cache',
          'bcache')
PROVIDERS = ('LVM', 'LVM_THIN', 'ZFS', 'ZFS_THIN', 'FILE', 'FILE_THIN',
             'SPDK', 'REMOTE_SPDK', 'EXOS', 'STORAGE_SPACES',
             'STORAGE_SPACES_THIN', 'EBS_INIT', 'EBS_TARGET')
DESCRIPTION = 'cinder-flash volume type '
# LINSTOR keeps a filter key that a modify leaves out, so a key the type
# no longer sets is sent with its "unset" value. A resource group cannot
# drop its regex; one that no resource name (2-48 characters) can match
# stands for none.
UNSET = {'diskless_on_remaining': False,
         'not_place_with_rsc_regex': '^$',
         'layer_stack': [], 'provider_list': [],
         'replicas_on_same': [], 'replicas_on_different': []}
_TYPE_ID = re.compile(r'^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                      r'[0-9a-f]{12})(-|$)')

SPECS = (
    extra_specs.Spec('linstor:redundancy', int, minimum=1, maximum=16,
                     help='diskful replicas'),
    extra_specs.Spec('linstor:storage_pool', list,
                     help='storage pools replicas may use'),
    extra_specs.Spec('linstor:diskless_on_remaining', bool, False,
                     help='a diskless resource on every other node'),
    extra_specs.Spec('linstor:do_not_place_with_regex', str,
                     help='never share a node with these resources'),
    extra_specs.Spec('linstor:layer_list', list,
                     help='layer stack, e.g. drbd,storage'),
    extra_specs.Spec('linstor:provider_list', list,
                     help='storage provider kinds replicas may use'),
    extra_specs.Spec('linstor:replicas_on_same', list,
                     help='node properties replicas share'),
    extra_specs.Spec('linstor:replicas_on_different', list,
                     help='node properties replicas differ in'),
    extra_specs.Spec('linstor:allow_remote_access', bool, True,
                     help='attach diskless where no replica is local'),
)


def _invalid(key, value, why):
    return exception.InvalidVolumeType(reason=_(
        'extra spec %(key)s=%(value)r is invalid: %(why)s') % {
            'key': key, 'value': value, 'why': why})


def _aux(names):
    """Node property names; bare names live in LINSTOR's Aux/ space."""
    return [n if '/' in n else 'Aux/' + n for n in names]


def type_placement(volume_type, configuration, pool=None):
    """The resource group a volume type stands for.

    Returns (select_filter, props, allow_remote_access); raises
    InvalidVolumeType naming the bad key before anything is created.
    """
    specs = extra_specs.type_specs(volume_type)
    props = {}
    for key in [k for k in specs if k.startswith(PROPERTY_PREFIX)]:
        value = specs.pop(key)
        name = key[len(PROPERTY_PREFIX):].replace(':', '/')
        if not PROPERTY_KEY.match(name):
            raise _invalid(key, value, 'only DrbdOptions/<section>/<option> '
                           'properties can be set through a volume type')
        if not isinstance(value, str) or not value.strip():
            raise _invalid(key, value, 'expected a non-empty value')
        props[name] = value.strip()
    values = extra_specs.parse(specs, SPECS, (SCOPE,))
    flt = {'place_count': values['linstor:redundancy'] or
           configuration.linstor_placement_count}
    pools = values['linstor:storage_pool'] or (
        [pool] if pool else [configuration.linstor_storage_pool])
    flt['storage_pool_list'] = pools
    if values['linstor:diskless_on_remaining']:
        flt['diskless_on_remaining'] = True
    if values['linstor:do_not_place_with_regex']:
        try:
            re.compile(values['linstor:do_not_place_with_regex'])
        except re.error as e:
            raise _invalid('linstor:do_not_place_with_regex',
                           values['linstor:do_not_place_with_regex'], str(e))
        flt['not_place_with_rsc_regex'] = values[
            'linstor:do_not_place_with_regex']
    layers = values['linstor:layer_list']
    if layers:
        flt['layer_stack'] = layer_stack(layers, 'linstor:layer_list')
    elif configuration.linstor_layer_list:
        flt['layer_stack'] = layer_stack(configuration.linstor_layer_list,
                                         'linstor_layer_list')
    providers = values['linstor:provider_list']
    if providers:
        bad = [p for p in providers if p.upper() not in PROVIDERS]
        if bad:
            raise _invalid('linstor:provider_list', ','.join(providers),
                           'unknown provider %s' % ', '.join(bad))
        flt['provider_list'] = [p.upper() for p in providers]
    for key, field in (('linstor:replicas_on_same', 'replicas_on_same'),
                       ('linstor:replicas_on_different',
                        'replicas_on_different')):
        if values[key]:
            flt[field] = _aux(values[key])
    return flt, props, values['linstor:allow_remote_access']


def layer_stack(layers, key):
    """LINSTOR's layer stack from a list such as drbd,storage.

    ``key`` names the extra spec or option the list came from.
    """
    lowered = [item.strip().lower() for item in layers]
    if not lowered or any(item not in LAYERS for item in lowered) or \
            lowered[-1] != 'storage':
        why = 'layers are %s, ending with storage' % ', '.join(LAYERS)
        if key.startswith(SCOPE):
            raise _invalid(key, ','.join(layers), why)
        raise flash_exception.InvalidBackendConfig(
            option=key, value=','.join(layers), reason=why)
    return [item.upper() for item in lowered]


def filter_update(have, want):
    """The select_filter a modify sends to turn ``have`` into ``want``."""
    update = {k: v for k, v in want.items() if not _same(have.get(k), v)}
    for key, unset in UNSET.items():
        if key not in want and have.get(key) not in (None, '', [], False,
                                                     unset):
            update[key] = unset
    return update


def _same(have, want):
    """Filter values compare as LINSTOR stores them (upper-case kinds)."""
    if isinstance(have, list) and isinstance(want, list):
        return [str(v).upper() for v in have] == [str(v).upper()
                                                  for v in want]
    return have == want


class ResourceGroups(object):
    """The resource groups of volume types, on one controller."""

    def __init__(self, client, configuration):
        self.client = client
        self.configuration = configuration

    @property
    def prefix(self):
        return self.configuration.linstor_resource_group_prefix

    def name(self, volume_type, pool=None):
        base = self.prefix + (volume_type.id if volume_type else 'default')
        if pool:
            full = '%s-%s' % (base, pool)
            # The type id stays whole; a long pool name becomes a digest.
            base = full if len(full) <= NAME_LIMIT else '%s-%s' % (
                base, hashlib.sha256(pool.encode()).hexdigest()[:4])
        return naming.fit(base, NAME_LIMIT)

    @staticmethod
    def pool_of(host):
        host = host or ''
        return host.split('#', 1)[1] if '#' in host else None

    def placement(self, volume_type, host):
        """(pool, (select_filter, props, remote)) of a type on a host.

        The scheduler's pool (``host#pool``) places the volume unless the
        type names its storage pools itself.
        """
        pool = self.pool_of(host)
        if extra_specs.type_specs(volume_type).get('linstor:storage_pool'):
            pool = None
        return pool, type_placement(volume_type, self.configuration, pool)

    def ensure(self, volume_type, host):
        """The group of a type and pool, made or brought up to date.

        The type is checked before anything is created. LINSTOR ignores
        properties in a group create, so they are set by a modify whose
        answer is checked; a group this call made is removed again when
        LINSTOR refuses one of them.
        """
        pool, (flt, props, _remote) = self.placement(volume_type, host)
        name = self.name(volume_type, pool)
        current = self.client.resource_group(name)
        created = False
        if current is None:
            description = DESCRIPTION + (volume_type.name if volume_type
                                         else '(none)')
            try:
                self.client.create_resource_group(name, flt, description)
                created = True
                current = {'select_filter': flt}
            except linstor_client.LinstorRefusal as e:
                if not e.has(apicallrc.FAIL_EXISTS_RSC_GRP):
                    raise
                current = self.client.resource_group(name) or {}
        have_flt = current.get('select_filter') or {}
        update = filter_update(have_flt, flt)
        have_props = current.get('props') or {}
        stale = sorted(k for k in have_props
                       if k.startswith('DrbdOptions/') and k not in props)
        changed = {k: v for k, v in props.items() if have_props.get(k) != v}
        if update or stale or changed:
            try:
                self.client.modify_resource_group(name, update or None,
                                                  changed, stale)
            except Exception:
                if created:
                    self._remove_made(name)
                raise
        return name

    def _remove_made(self, name):
        try:
            self.client.delete_resource_group(name)
        except Exception as e:
            LOG.warning('could not remove resource group %s after a failed '
                        'create: %s', name, e)

    def type_id(self, group):
        """The volume type id a group of ours was made for, or None."""
        name = group.get('name') or ''
        if not name.startswith(self.prefix) or not str(
                group.get('description') or '').startswith(DESCRIPTION):
            return None
        match = _TYPE_ID.match(name[len(self.prefix):])
        return match.group(1) if match else None

    def sweep(self, type_exists, definitions=None):
        """Remove our groups whose volume type is gone and that are empty.

        ``type_exists(type_id) -> bool``; ``definitions``: the resource
        definitions, when the caller has them. Returns the removed names.
        """
        groups = [g for g in self.client.resource_groups()
                  if self.type_id(g)]
        gone = [g['name'] for g in groups
                if not type_exists(self.type_id(g))]
        if not gone:
            return []
        if definitions is None:
            definitions = self.client.resource_definitions()
        used = {str(rd.get('resource_group_name') or '').lower()
                for rd in definitions}
        removed = []
        for name in gone:
            if name.lower() in used:
                continue
            try:
                self.client.delete_resource_group(name)
                removed.append(name)
            except linstor_client.LinstorRefusal as e:
                # A volume spawned meanwhile keeps it.
                LOG.info('resource group %s of a deleted volume type '
                         'stays: %s', name, e)
        return removed
