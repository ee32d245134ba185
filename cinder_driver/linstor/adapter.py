"""The LINSTOR backend's logic: Cinder objects onto LINSTOR objects.

Each volume type becomes a resource group ``<prefix><type id>`` carrying
the type's placement and DRBD properties, and each volume is spawned from
its type's group, so LINSTOR itself applies placement. Volume ``V`` is the
resource definition ``volume-<V.name_id>`` (or the name it was managed
under, kept in provider_id); snapshot ``S`` is ``snapshot-<S.id>``.
"""

import hashlib
import math
import re
import socket
import time

from cinder import exception
from cinder.i18n import _
from oslo_log import log as logging
from oslo_utils import units

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import extra_specs
from cinder_driver.common import naming
from cinder_driver.common import stats as flash_stats
from cinder_driver.linstor import client as linstor_client

LOG = logging.getLogger(__name__)
VENDOR = 'cinder-flash'
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
THIN_KINDS = ('LVM_THIN', 'ZFS_THIN', 'FILE_THIN', 'STORAGE_SPACES_THIN',
              'EBS_TARGET')
MANAGED_BY = 'Aux/cinder-flash/attached-for'
TWO_PRIMARIES = 'DrbdOptions/Net/allow-two-primaries'

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
        lowered = [item.lower() for item in layers]
        bad = [item for item in lowered if item not in LAYERS]
        if bad or lowered[-1] != 'storage':
            raise _invalid('linstor:layer_list', ','.join(layers),
                           'layers are %s, ending with storage' %
                           ', '.join(LAYERS))
        flt['layer_stack'] = [item.upper() for item in lowered]
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


def _kib(size_gib):
    return int(size_gib) * units.Mi


class LinstorAdapter(flash_stats.CachedStats):

    FAMILY = 'LINSTOR'

    def __init__(self, configuration, protocol, driver_version):
        self.configuration = configuration
        self.protocol = protocol
        self.driver_version = driver_version
        self.client = None
        self.api_version = (0, 0, 0)
        self.local_node = None
        self._sleep = time.sleep

    # -- setup ----------------------------------------------------------------
    def do_setup(self):
        conf = self.configuration
        uris = [u for u in (conf.linstor_uris or []) if u.strip()]
        for uri in uris:
            linstor_client.base_url(uri)
        cert = None
        if conf.linstor_client_cert:
            cert = (conf.linstor_client_cert, conf.linstor_client_key) \
                if conf.linstor_client_key else conf.linstor_client_cert
        elif conf.linstor_client_key:
            raise flash_exception.InvalidBackendConfig(
                option='linstor_client_key', value=conf.linstor_client_key,
                reason='linstor_client_cert must be set with it')
        verify = conf.linstor_trusted_ca or True
        if not conf.linstor_verify_tls:
            LOG.warning('TLS certificate verification of backend %s is '
                        'disabled by linstor_verify_tls=False.',
                        conf.config_group)
            verify = False
        self.client = linstor_client.LinstorClient(
            uris, username=conf.linstor_username,
            password=conf.linstor_password, verify=verify, client_cert=cert,
            connect_timeout=conf.flash_rest_connect_timeout,
            read_timeout=conf.flash_rest_read_timeout,
            retries=conf.flash_rest_retries,
            backoff=conf.flash_rest_retry_backoff)
        self.local_node = conf.linstor_local_node or socket.gethostname()

    def check_for_setup_error(self):
        version = self.client.version()
        self.api_version = linstor_client.api_version(
            version['rest_api_version'])
        if self.api_version < linstor_client.MIN_API_VERSION:
            raise flash_exception.InvalidBackendConfig(
                option='linstor_uris', value=self.client.name,
                reason='the controller speaks REST API %s; %s or later is '
                       'needed (resource definition clone)' % (
                           version['rest_api_version'], '.'.join(
                               map(str, linstor_client.MIN_API_VERSION))))
        pool = self.configuration.linstor_storage_pool
        pools = self.client.storage_pools()
        if not any(p.get('storage_pool_name') == pool for p in pools):
            raise flash_exception.InvalidBackendConfig(
                option='linstor_storage_pool', value=pool,
                reason='no node has this storage pool')

    # -- names ----------------------------------------------------------------
    @staticmethod
    def rd_name(volume):
        return volume.provider_id or naming.linstor_volume_name(volume)

    @staticmethod
    def snap_name(snapshot):
        return snapshot.provider_id or naming.linstor_snapshot_name(snapshot)

    def rg_name(self, volume_type, pool=None):
        base = self.configuration.linstor_resource_group_prefix + (
            volume_type.id if volume_type else 'default')
        if pool:
            full = '%s-%s' % (base, pool)
            # The type id stays whole; a long pool name becomes a digest.
            base = full if len(full) <= NAME_LIMIT else '%s-%s' % (
                base, hashlib.sha256(pool.encode()).hexdigest()[:4])
        return naming.fit(base, NAME_LIMIT)

    @staticmethod
    def _pool_of(host):
        host = host or ''
        return host.split('#', 1)[1] if '#' in host else None

    def _placement(self, volume_type, host):
        """(pool, (select_filter, props, remote)) of a type on a host.

        The scheduler's pool (``host#pool``) places the volume unless the
        type names its storage pools itself.
        """
        pool = self._pool_of(host)
        if extra_specs.type_specs(volume_type).get('linstor:storage_pool'):
            pool = None
        return pool, type_placement(volume_type, self.configuration, pool)

    def _ensure_group(self, volume_type, host):
        """The resource group of a type and pool, made or updated.

        The volume type is checked before anything is created.
        """
        pool, (flt, props, _remote) = self._placement(volume_type, host)
        name = self.rg_name(volume_type, pool)
        current = self.client.resource_group(name)
        description = 'cinder-flash volume type %s' % (
            volume_type.name if volume_type else '(none)')
        if current is None:
            try:
                self.client.create_resource_group(name, flt, props,
                                                  description)
                return name
            except flash_exception.ArrayAPIError as e:
                if e.error_code not in linstor_client.EXISTS_CODES:
                    raise
                current = self.client.resource_group(name) or {}
        have_flt = current.get('select_filter') or {}
        have_props = current.get('props') or {}
        stale = [k for k in have_props if k.startswith('DrbdOptions/') and
                 k not in props]
        if any(have_flt.get(k) != v for k, v in flt.items()) or stale or \
                any(have_props.get(k) != v for k, v in props.items()):
            self.client.modify_resource_group(name, flt, props, stale)
        return name

    # -- create / delete ------------------------------------------------------
    def _undo(self, name):
        try:
            self.client.delete_resource_definition(name)
        except flash_exception.ArrayAPIError as e:
            LOG.warning('could not remove %s after a failed create: %s',
                        name, e)

    def create_volume(self, volume):
        name = self.rd_name(volume)
        group = self._ensure_group(volume.volume_type, volume.host)
        try:
            self.client.spawn(group, name, _kib(volume.size))
        except flash_exception.ArrayAPIError as e:
            if e.error_code not in linstor_client.EXISTS_CODES:
                self._undo(name)
            raise
        return None

    def delete_volume(self, volume):
        self.client.delete_resource_definition(self.rd_name(volume))

    def extend_volume(self, volume, new_size):
        self.client.resize(self.rd_name(volume), _kib(new_size))

    # -- snapshots and copies -------------------------------------------------
    def create_snapshot(self, snapshot):
        self.client.create_snapshot(self.rd_name(snapshot.volume),
                                    self.snap_name(snapshot))

    def delete_snapshot(self, snapshot):
        self.client.delete_snapshot(self.rd_name(snapshot.volume),
                                    self.snap_name(snapshot))

    def _after_copy(self, volume, name, source_size):
        """Grow to the asked size and reach the type's replica count."""
        if volume.size > source_size:
            self.client.resize(name, _kib(volume.size))
        _pool, (flt, _props, _remote) = self._placement(volume.volume_type,
                                                        volume.host)
        self.client.autoplace(name, {'place_count': flt['place_count']})

    def create_volume_from_snapshot(self, volume, snapshot):
        name = self.rd_name(volume)
        group = self._ensure_group(volume.volume_type, volume.host)
        self.client.create_resource_definition(name, group)
        try:
            self.client.restore(self.rd_name(snapshot.volume),
                                self.snap_name(snapshot), name)
            self._after_copy(volume, name, snapshot.volume_size)
        except Exception:
            self._undo(name)
            raise
        return None

    def create_cloned_volume(self, volume, src_vref):
        name = self.rd_name(volume)
        group = self._ensure_group(volume.volume_type, volume.host)
        source = self.rd_name(src_vref)
        try:
            self.client.clone(source, name, group)
            self._wait_clone(source, name)
            self._after_copy(volume, name, src_vref.size)
        except flash_exception.ArrayAPIError as e:
            if e.error_code not in linstor_client.EXISTS_CODES:
                self._undo(name)
            raise
        except Exception:
            self._undo(name)
            raise
        return None

    def _wait_clone(self, source, name):
        deadline = time.monotonic() + self.configuration.linstor_clone_timeout
        delay = 0.2
        while True:
            status = self.client.clone_status(source, name)
            if status == 'COMPLETE':
                return
            if status not in ('CLONING', None) or \
                    time.monotonic() > deadline:
                raise exception.VolumeBackendAPIException(data=_(
                    'LINSTOR clone of %(src)s into %(dst)s ended as '
                    '%(status)s') % {'src': source, 'dst': name,
                                     'status': status or 'timeout'})
            self._sleep(delay)
            delay = min(delay * 2, 5.0)

    def revert_to_snapshot(self, volume, snapshot):
        name = self.rd_name(volume)
        self.client.rollback(name, self.snap_name(snapshot))
        if volume.size > snapshot.volume_size:
            self.client.resize(name, _kib(volume.size))

    # -- attach ---------------------------------------------------------------
    def _attachments_on(self, volume, host):
        """Attachments of ``volume`` by other instances on ``host``."""
        count = 0
        for attachment in volume.volume_attachment or []:
            if attachment.attach_status in ('attached', 'attaching') and \
                    (attachment.connector or {}).get('host') == host:
                count += 1
        return count

    def _other_hosts(self, volume, host):
        hosts = set()
        for attachment in volume.volume_attachment or []:
            other = (attachment.connector or {}).get('host') or \
                attachment.attached_host
            if attachment.attach_status == 'attached' and other and \
                    other != host:
                hosts.add(other)
        return hosts

    def remote_access(self, volume):
        """Whether a node without a replica may open the volume diskless."""
        _pool, (_flt, _props, remote) = self._placement(volume.volume_type,
                                                        volume.host)
        return remote

    def make_local(self, volume, node, remote_ok=True):
        """A resource of the volume on ``node``; its device path."""
        name = self.rd_name(volume)
        entries = self.client.make_available(name, node,
                                             diskful=not remote_ok)
        created = any(linstor_client.code_of(e) == 1 and
                      not linstor_client.is_error(e) for e in entries)
        if created:
            self.client.modify_resource(name, node, {MANAGED_BY: volume.id})
        return '/dev/drbd/by-res/%s/0' % name

    def release_local(self, volume, node):
        """Remove the node's resource if it is diskless and ours."""
        name = self.rd_name(volume)
        mine = [r for r in self.client.resources([name], [node])
                if r.get('node_name', '').lower() == node.lower()]
        for rsc in mine:
            flags = rsc.get('flags') or []
            ours = (rsc.get('props') or {}).get(MANAGED_BY) == volume.id
            if ours and ('DRBD_DISKLESS' in flags or 'DISKLESS' in flags):
                self.client.delete_resource(name, rsc['node_name'])

    def initialize_connection(self, volume, connector):
        host = connector.get('host')
        if not host:
            raise exception.InvalidConnectorException(missing='host')
        remote = self.remote_access(volume)
        if volume.multiattach and self._other_hosts(volume, host):
            self.client.modify_resource_definition(
                self.rd_name(volume), {'override_props': {TWO_PRIMARIES:
                                                          'yes'}})
        path = self.make_local(volume, host, remote_ok=remote)
        return {'driver_volume_type': 'local',
                'data': {'device_path': path}}

    def terminate_connection(self, volume, connector):
        if connector is None:
            # Force detach: every diskless resource we made goes.
            name = self.rd_name(volume)
            for rsc in self.client.resources([name]):
                if (rsc.get('props') or {}).get(MANAGED_BY) == volume.id \
                        and 'DRBD_DISKLESS' in (rsc.get('flags') or []):
                    self.client.delete_resource(name, rsc['node_name'])
            return
        host = connector.get('host')
        if self._attachments_on(volume, host) > 1:
            return
        self.release_local(volume, host)
        if volume.multiattach and len(self._other_hosts(volume, host)) < 2:
            # One host left: it needs no second primary.
            self.client.modify_resource_definition(
                self.rd_name(volume), {'delete_props': [TWO_PRIMARIES]})

    # -- stats ----------------------------------------------------------------
    def _down_stats(self):
        stats = self._base_stats()
        stats['pools'] = [{
            'pool_name': self.configuration.linstor_storage_pool,
            'total_capacity_gb': 0, 'free_capacity_gb': 0,
            'reserved_percentage': 0, 'replication_enabled': False,
            'backend_state': 'down'}]
        return stats

    def _base_stats(self):
        conf = self.configuration
        return {'volume_backend_name': conf.safe_get('volume_backend_name')
                or 'LINSTOR_%s' % self.protocol,
                'vendor_name': VENDOR,
                'driver_version': self.driver_version,
                'storage_protocol': self.protocol}

    def _collect_stats(self):
        pools, kinds = {}, {}
        for sp in self.client.storage_pools():
            kind = sp.get('provider_kind')
            name = sp.get('storage_pool_name')
            if kind == 'DISKLESS' or not name:
                continue
            for key in ('total_capacity', 'free_capacity'):
                if not isinstance(sp.get(key), int):
                    raise flash_exception.ArrayBadReply(
                        array=self.client.name, method='GET',
                        path='/v1/view/storage-pools', status_code=200,
                        reason='no integer %s for %s' % (key, name))
            entry = pools.setdefault(name, {'total': 0, 'free': 0,
                                            'nodes': 0, 'logical': 0,
                                            'provisioned': {}})
            entry['total'] += sp['total_capacity']
            entry['free'] += sp['free_capacity']
            entry['nodes'] += 1
            kinds.setdefault(name, set()).add(kind)
        for rsc in self.client.resources():
            if 'DRBD_DISKLESS' in (rsc.get('flags') or []):
                continue
            for vol in rsc.get('volumes') or []:
                entry = pools.get(vol.get('storage_pool_name'))
                if entry is None:
                    continue
                entry['logical'] += int(vol.get('allocated_size_kib') or 0)
                entry['provisioned'][rsc.get('name')] = int(
                    vol.get('usable_size_kib') or 0)
        count = max(self.configuration.linstor_placement_count, 1)
        stats = self._base_stats()
        stats['pools'] = []
        for name in sorted(pools):
            entry = pools[name]
            thin = any(k in THIN_KINDS for k in kinds[name])
            used = entry['total'] - entry['free']
            ratio = flash_stats.reduction_ratio(entry['logical'], used) \
                if thin else 1.0
            # Every replica holds a full copy: usable space is a share.
            replicas = min(count, entry['nodes'])
            pool = {'pool_name': name,
                    'multiattach': True,
                    'online_extend_support': True,
                    'QoS_support': False,
                    'consistent_group_snapshot_enabled': True,
                    'location_info': 'cinder-flash:linstor:%s' % (
                        self.client.name),
                    'data_reduction_ratio': ratio,
                    'logical_used_gb': flash_stats.gib(
                        entry['logical'] // replicas),
                    'physical_used_gb': flash_stats.gib(used // replicas),
                    'linstor_replicas': replicas,
                    # LINSTOR replicates within the cluster; Cinder's
                    # replication (failover to another backend) is not
                    # offered.
                    'replication_enabled': False,
                    'backend_state': 'up'}
            pool.update(flash_stats.capacity(
                entry['total'] // replicas, entry['free'] // replicas,
                sum(entry['provisioned'].values()), self.configuration,
                thin=thin))
            stats['pools'].append(pool)
        return stats

    # -- retype and manage ----------------------------------------------------
    def retype(self, volume, new_type, new_host=None):
        """Move the volume to the new type's group and placement."""
        name = self.rd_name(volume)
        host = (new_host or {}).get('host') or volume.host
        _pool, (flt, _props, _remote) = self._placement(new_type, host)
        group = self._ensure_group(new_type, host)
        self.client.modify_resource_definition(name,
                                               {'resource_group': group})
        self._replace(name, flt)
        return True, None

    def _replace(self, name, flt):
        """Diskful replicas to the filter's count, in its pools.

        New replicas are placed before any old one goes, so the volume
        never has fewer copies than before the retype.
        """
        pools = flt['storage_pool_list']
        want = flt['place_count']
        diskful = [r for r in self.client.resources([name])
                   if 'DRBD_DISKLESS' not in (r.get('flags') or [])]
        wrong = [r for r in diskful if any(
            v.get('storage_pool_name') not in pools
            for v in r.get('volumes') or [])]
        right = [r for r in diskful if r not in wrong]
        if len(right) < want:
            self.client.autoplace(name, {
                'place_count': len(diskful) + want - len(right),
                'storage_pool_list': pools})
        for rsc in wrong + right[want:]:
            self.client.delete_resource(name, rsc['node_name'])

    def _existing(self, existing_ref):
        name = (existing_ref or {}).get('source-name')
        if not name:
            raise exception.ManageExistingInvalidReference(
                existing_ref=existing_ref,
                reason=_('source-name (the resource definition) is needed'))
        rd = self.client.resource_definition(name)
        if rd is None:
            raise exception.ManageExistingInvalidReference(
                existing_ref=existing_ref,
                reason=_('no resource definition %s') % name)
        vds = rd.get('volume_definitions') or []
        if len(vds) != 1:
            raise exception.ManageExistingInvalidReference(
                existing_ref=existing_ref,
                reason=_('%(name)s has %(n)d volumes; one is needed') % {
                    'name': name, 'n': len(vds)})
        return rd, vds[0]

    def manage_existing_get_size(self, volume, existing_ref):
        _rd, vd = self._existing(existing_ref)
        return int(math.ceil(int(vd['size_kib']) / float(units.Mi)))

    def manage_existing(self, volume, existing_ref):
        rd, vd = self._existing(existing_ref)
        group = self._ensure_group(volume.volume_type, volume.host)
        self.client.modify_resource_definition(rd['name'],
                                               {'resource_group': group})
        size_kib = _kib(self.manage_existing_get_size(volume, existing_ref))
        if size_kib > int(vd['size_kib']):
            # Cinder sizes are whole GiB: round the volume up to match.
            self.client.resize(rd['name'], size_kib)
        return {'provider_id': rd['name']}

    def unmanage(self, volume):
        LOG.info('volume %s leaves Cinder; LINSTOR keeps %s', volume.id,
                 self.rd_name(volume))

    # -- groups ---------------------------------------------------------------
    def create_group_snapshot(self, group_snapshot, snapshots):
        self._consistent(group_snapshot)
        pairs = [(self.rd_name(s.volume), self.snap_name(s))
                 for s in snapshots]
        if pairs:
            self.client.create_snapshots(pairs)
        return None, [{'id': s.id, 'status': 'available'}
                      for s in snapshots]

    def delete_group_snapshot(self, group_snapshot, snapshots):
        self._consistent(group_snapshot)
        for snapshot in snapshots:
            self.delete_snapshot(snapshot)
        return None, [{'id': s.id, 'status': 'deleted'} for s in snapshots]

    @staticmethod
    def _consistent(group):
        from cinder.volume import volume_utils
        if not volume_utils.is_group_a_cg_snapshot_type(group):
            # Cinder's generic group code handles the rest.
            raise NotImplementedError()

    def create_group(self, group):
        self._consistent(group)
        return {'status': 'available'}

    def delete_group(self, group, volumes):
        self._consistent(group)
        updates = []
        for volume in volumes:
            self.delete_volume(volume)
            updates.append({'id': volume.id, 'status': 'deleted'})
        return {'status': 'deleted'}, updates

    def update_group(self, group, add_volumes, remove_volumes):
        self._consistent(group)
        return None, None, None

    def create_group_from_src(self, group, volumes, group_snapshot=None,
                              snapshots=None, source_group=None,
                              source_vols=None):
        self._consistent(group)
        made = []
        try:
            if group_snapshot is not None:
                by_volume = {s.volume_id: s for s in snapshots}
                for volume in volumes:
                    snap = by_volume.get(volume.source_volid) or next(
                        s for s in snapshots if s.id == volume.snapshot_id)
                    self.create_volume_from_snapshot(volume, snap)
                    made.append(volume)
            else:
                by_id = {v.id: v for v in source_vols}
                for volume in volumes:
                    self.create_cloned_volume(volume,
                                              by_id[volume.source_volid])
                    made.append(volume)
        except Exception:
            for volume in made:
                self._undo(self.rd_name(volume))
            raise
        return None, [{'id': v.id, 'status': 'available'} for v in volumes]
