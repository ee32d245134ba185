"""Logic of the K2 drivers: what Cinder asks, in as few round trips as the
K2 REST API v2 allows.

Array layout: one volume group per Cinder volume (the volume group is the
K2 unit of snapshots, restore and deduplication), named after
``volume.name_id``. Array ids are kept in ``provider_id`` so most calls
need no search; a missing or stale provider_id falls back to the names.
"""

import base64
import contextlib
import hashlib
import hmac
import threading

from cinder.common import constants
from cinder import exception
from cinder.i18n import _
from cinder.objects import fields
from oslo_log import log as logging
from oslo_utils import units

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import extra_specs
from cinder_driver.common import naming
from cinder_driver.common import stats as flash_stats
from cinder_driver.common import tls
from cinder_driver.common import versions
from cinder_driver.k2 import client as k2_client
from cinder_driver.k2 import groups
from cinder_driver.k2 import hostcopy
from cinder_driver.k2 import replication
from cinder_driver.k2 import rest as k2_rest

LOG = logging.getLogger(__name__)

KIB_PER_GIB = units.Mi
HOST_NAME_LIMIT = 32
VENDOR = 'cinder-flash'

SPEC_SCOPES = ('k2:',)
SPECS = (
    extra_specs.Spec('k2:dedup', bool, default=None,
                     help='Deduplicate the volume (default: true).'),
    extra_specs.Spec('kaminario:thin_prov_type', ('dedup', 'nodedup'),
                     help='Accepted for clouds that used Cinder\'s in-tree '
                          'K2 driver.'),
    extra_specs.Spec('replication_enabled', bool, default=False,
                     help='Cinder\'s replication capability.'),
    extra_specs.Spec('kaminario:replication', ('enabled', 'disabled'),
                     help='The in-tree K2 driver\'s replication spec.'),
)


def volume_specs(volume_type, replication_ok=False):
    """Validated K2 settings of a volume type (dict or object).

    ``replication_ok``: the backend has a replication_device; without one
    a type asking for replication is refused rather than given volumes
    that are silently not replicated.
    """
    values = extra_specs.parse(extra_specs.type_specs(volume_type), SPECS,
                               SPEC_SCOPES)
    legacy = values['kaminario:thin_prov_type']
    dedup = values['k2:dedup']
    if legacy is not None and dedup is not None and \
            dedup != (legacy == 'dedup'):
        raise exception.InvalidVolumeType(reason=_(
            'extra specs contradict each other: k2:dedup=%(dedup)s but '
            'kaminario:thin_prov_type=%(legacy)s') % {
                'dedup': dedup, 'legacy': legacy})
    if dedup is None:
        dedup = legacy != 'nodedup'
    replication = (values['replication_enabled'] or
                   values['kaminario:replication'] == 'enabled')
    if replication and not replication_ok:
        asked = ('replication_enabled' if values['replication_enabled']
                 else 'kaminario:replication')
        raise exception.InvalidVolumeType(reason=_(
            'extra spec %s asks for replication, but this backend has no '
            'replication_device') % asked)
    return {'dedup': dedup, 'replication': replication}


def _qos_of(volume_type):
    """(consumer, specs) of a volume type's QoS specs, or None."""
    if isinstance(volume_type, dict):
        qos_id = volume_type.get('qos_specs_id')
        if not qos_id:
            return None
        from cinder import context
        from cinder.volume import qos_specs
        found = qos_specs.get_qos_specs(context.get_admin_context(), qos_id)
        return found['consumer'], dict(found['specs'] or {})
    if volume_type is None or not getattr(volume_type, 'qos_specs_id',
                                          None):
        return None
    found = volume_type.qos_specs
    return (found.consumer, dict(found.specs or {})) if found else None


def _refuse_backend_qos(volume_type):
    """QoS for the array cannot be honoured: say so, create nothing.

    The K2 REST API v2 documents no QoS; front-end specs (applied by the
    hypervisor) are fine.
    """
    qos = _qos_of(volume_type)
    if qos and qos[0] in ('back-end', 'both') and qos[1]:
        raise exception.InvalidVolumeType(reason=_(
            'QoS specs %(keys)s (consumer %(consumer)s) cannot be applied: '
            'K2 arrays have no QoS; use consumer front-end') % {
                'keys': ', '.join('%s=%s' % kv for kv in sorted(
                    qos[1].items())), 'consumer': qos[0]})


def _type_replicated(volume_type):
    """Whether a type asks for replication; never raises (for deletes)."""
    try:
        return volume_specs(volume_type, replication_ok=True)['replication']
    except exception.InvalidVolumeType:
        return False


OWNER_PREFIX = 'cinder:'


def _owner(volume):
    """Ownership mark kept in the array volume's description.

    Names cannot tell managed from unmanaged volumes: after unmanage the
    name stays, and Cinder may manage it again by that name.
    """
    return OWNER_PREFIX + volume.id


def _parse(provider_id):
    """((group_id, object_id), shared, array tag) of a provider_id.

    The ids are None when unusable. A provider_id is ``first/second``,
    with ``/g`` for a member of a consistent group and ``@<backend_id>``
    when the ids are those of the replication target's array.
    """
    text, _sep, tag = str(provider_id).partition('@')
    parts = text.split('/')
    shared = len(parts) == 3 and parts[2] == groups.SHARED
    try:
        first, second = parts[:2] if shared else parts
        return (int(first), int(second)), shared, tag or None
    except (TypeError, ValueError):
        return None, shared, tag or None


def _is_shared(provider_id):
    return _parse(provider_id)[1]


class K2Adapter(flash_stats.CachedStats, groups.GroupOps,
                replication.ReplicationOps, hostcopy.HostCopyOps):

    FAMILY = 'K2'
    KIB_PER_GIB = KIB_PER_GIB
    OWNER_PREFIX = OWNER_PREFIX

    def __init__(self, configuration, protocol, driver_version,
                 active_backend_id=None):
        self.configuration = configuration
        self.active_backend_id = active_backend_id
        self.protocol = protocol
        self.driver_version = driver_version
        self.client = None
        self.capabilities = {}
        self.target_iqn = None
        self.portals = []
        self.fc_targets = []
        self.retention_policy = None
        self.location = None
        self._hosts = {}
        self._hosts_lock = threading.Lock()

    # -- setup ---------------------------------------------------------------
    def do_setup(self):
        conf = self.configuration
        for option in ('san_ip', 'san_login', 'san_password'):
            if not conf.safe_get(option):
                raise flash_exception.InvalidBackendConfig(
                    option=option, value=conf.safe_get(option),
                    reason='required by the K2 driver')

        def make_client(host, login, password, port, verify):
            return k2_rest.K2Rest(
                host, login, password, port=port, verify=verify,
                connect_timeout=conf.flash_rest_connect_timeout,
                read_timeout=conf.flash_rest_read_timeout,
                retries=conf.flash_rest_retries,
                backoff=conf.flash_rest_retry_backoff)

        self.primary = self.client = make_client(
            conf.san_ip, conf.san_login, conf.san_password,
            conf.safe_get('san_api_port'), tls.verify(conf, tls.K2))
        self._setup_replication(make_client)

    def check_for_setup_error(self):
        self._load_active()
        self._check_replication()

    def _load_active(self):
        """What the driver needs from the array it talks to."""
        self.capabilities = self.client.discover_capabilities()
        state = self.client.system_state()
        version = state.get('rest_api_version')
        if not versions.at_least(version, k2_client.MIN_API_VERSION):
            raise flash_exception.ArrayAPIError(
                array=self.client.http.array_name, method='GET',
                path='/system/state', reason=_(
                    'REST API %(version)s is older than the %(minimum)s this '
                    'driver needs') % {'version': version, 'minimum':
                                       versions.dotted(
                                           k2_client.MIN_API_VERSION)})
        self._load_targets(state)
        # Backends on the same array can hand volumes to each other.
        self.location = 'cinder-flash:k2:%s' % state.get('system_id')
        name = self.configuration.k2_retention_policy
        policy = self.client.find('retention_policies', name=name)
        if policy is None:
            raise flash_exception.InvalidBackendConfig(
                option='k2_retention_policy', value=name,
                reason='no retention policy of that name on the array')
        self.retention_policy = k2_rest.ref('retention_policies',
                                            policy['id'])

    def _load_targets(self, state):
        if self.protocol == constants.ISCSI:
            self.target_iqn = state.get('iscsi_qualified_target_name')
            if not self.target_iqn:
                raise flash_exception.ArrayAPIError(
                    array=self.client.http.array_name, method='GET',
                    path='/system/state',
                    reason=_('the array reports no iSCSI target'))
            found = self.client.iscsi_addresses()
            wanted = self.configuration.k2_iscsi_portals
            portals = []
            for item in wanted or found:
                address, _sep, port = item.partition(':') \
                    if item.count(':') == 1 else (item, '', '')
                if address not in found:
                    raise flash_exception.InvalidBackendConfig(
                        option='k2_iscsi_portals', value=item,
                        reason='not an iSCSI address of the array (it has '
                               '%s)' % ', '.join(found))
                portals.append('%s:%s' % (address, port or 3260))
            if not portals:
                raise flash_exception.ArrayAPIError(
                    array=self.client.http.array_name, method='GET',
                    path='/system/net_ips',
                    reason=_('the array has no iSCSI portal'))
            self.portals = portals
        else:
            self.fc_targets = [
                p['pwwn'].replace(':', '').lower()
                for p in self.client.search('system/fc_ports')
                if p.get('pwwn')]
            if not self.fc_targets:
                raise flash_exception.ArrayAPIError(
                    array=self.client.http.array_name, method='GET',
                    path='/system/fc_ports',
                    reason=_('the array has no FC target port'))

    def _specs(self, volume_type):
        _refuse_backend_qos(volume_type)
        return volume_specs(volume_type, replication_ok=bool(self.replica))

    def _type_dedup(self, volume_type):
        return self._specs(volume_type)['dedup']

    @staticmethod
    def _owner(obj):
        return _owner(obj)

    @staticmethod
    def _shared(volume):
        return _is_shared(volume.provider_id)

    # -- lookups -------------------------------------------------------------
    def _pid(self, first, second, shared=False, on_secondary=None):
        """A provider_id for array ids of the active (or named) array."""
        pid = '%d/%d' % (first, second)
        if shared:
            pid += '/' + groups.SHARED
        if self.failed_over if on_secondary is None else on_secondary:
            pid += '@' + self.replica['backend_id']
        return pid

    def _ids(self, provider_id):
        """The provider_id's ids if they are the active array's, or None.

        Ids of one array mean other objects on another: after a failover
        or a failback, ids kept from the other array are not used; the
        objects are found by name instead.
        """
        ids, _shared, tag = _parse(provider_id)
        active = self.replica['backend_id'] if self.failed_over else None
        return ids if tag == active else None

    def _volume_ids(self, volume, required=True):
        """(group_id, volume_id) of a Cinder volume on the array."""
        ids = self._ids(volume.provider_id)
        if ids is not None:
            return ids
        found = self.client.find('volumes', name=naming.volume_name(volume))
        if found is None:
            if required:
                raise exception.VolumeNotFound(volume_id=volume.id)
            return None
        return k2_rest.ref_id(found['volume_group']), found['id']

    def _snapshot_ids(self, snapshot):
        """(snapshot_id, volsnap_id) of a Cinder snapshot on the array."""
        ids = self._ids(snapshot.provider_id)
        if ids is not None:
            return ids
        found = self.client.find('snapshots',
                                 short_name=naming.snapshot_name(snapshot))
        if found is None:
            raise exception.SnapshotNotFound(snapshot_id=snapshot.id)
        volsnap = self.client.find('volsnaps', **{
            'snapshot.ref': '/snapshots/%d' % found['id']})
        if volsnap is None:
            raise exception.SnapshotNotFound(snapshot_id=snapshot.id)
        return found['id'], volsnap['id']

    # -- volumes -------------------------------------------------------------
    def _create(self, volume, size_gib, source=None):
        specs = self._specs(volume.volume_type)
        group = self.client.create_unique('volume_groups', {
            'name': naming.group_name(volume), 'quota': 0,
            'is_dedup': specs['dedup']}, name=naming.group_name(volume))
        body = {'name': naming.volume_name(volume),
                'description': _owner(volume),
                'size': size_gib * KIB_PER_GIB,
                'volume_group': k2_rest.ref('volume_groups',
                                            group['id'])}
        if source is not None:
            body['source'] = source
        # Nothing half-created: the empty group goes with a failure.
        with self._undo_on_error('volume_groups', group['id']):
            vol = self.client.create_unique('volumes', body,
                                            name=body['name'])
            update = {'provider_id': self._pid(group['id'], vol['id'])}
            if specs['replication']:
                with self._undo_on_error('volumes', vol['id']):
                    update.update(self._replicate(volume, group['id'],
                                                  vol['id']))
        return update

    @contextlib.contextmanager
    def _undo_on_error(self, resource, obj_id):
        """Delete what was just created if the next step fails."""
        try:
            yield
        except Exception:
            with _suppressed('removing %s %s' % (resource, obj_id)):
                self.client.delete(resource, obj_id)
            raise

    def create_volume(self, volume):
        if volume.group_id and groups.is_consistent(volume.group):
            return self._create_in_group(volume)
        return self._create(volume, volume.size)

    def _create_in_group(self, volume):
        if self._specs(volume.volume_type)['replication']:
            raise exception.InvalidVolume(reason=_(
                'replicated volumes cannot be members of consistent group '
                '%s: a K2 group replicates as one') % volume.group_id)
        vg = self._group_vg(volume.group)
        if self._type_dedup(volume.volume_type) != vg['is_dedup']:
            raise exception.InvalidVolume(reason=_(
                'the volume type does not match the deduplication of group '
                '%s') % volume.group_id)
        vol = self.client.create('volumes', {
            'name': naming.volume_name(volume),
            'description': _owner(volume),
            'size': volume.size * KIB_PER_GIB,
            'volume_group': k2_rest.ref('volume_groups', vg['id'])})
        return {'provider_id': self._pid(vg['id'], vol['id'], shared=True)}

    def delete_volume(self, volume):
        # A replicated type's create that failed half-way may have left a
        # session (which keeps its volume group) or a copy on the peer.
        if self.replica and (self._is_replicated(volume) or
                             _type_replicated(volume.volume_type)):
            self._unreplicate(volume)
        ids = self._volume_ids(volume, required=False)
        if ids is None:
            self._remove_leftover_group(volume)
            return
        group_id, volume_id = ids
        try:
            self.client.delete('volumes', volume_id)
        except flash_exception.ObjectBusy:
            raise exception.VolumeIsBusy(volume_name=volume.name)
        if self._shared(volume):
            return
        try:
            self.client.delete('volume_groups', group_id)
        except flash_exception.ObjectBusy as e:
            # Cinder deletes its snapshots before their volume, so what
            # is left was made on the array by someone else: keep it.
            LOG.warning('Volume %(vol)s deleted; its volume group %(vg)s is '
                        'kept because the array refused to delete it: '
                        '%(err)s', {'vol': volume.id,
                                    'vg': naming.group_name(volume),
                                    'err': e.msg})

    def _remove_leftover_group(self, volume):
        """A create that failed half-way may have left its empty group."""
        group = self.client.find('volume_groups',
                                 name=naming.group_name(volume))
        if group is not None and not group.get('volumes_count'):
            LOG.info('Removing the empty volume group %s left by a failed '
                     'create of volume %s.', group['name'], volume.id)
            self.client.delete('volume_groups', group['id'])
        else:
            LOG.info('Volume %s is not on the array; nothing to delete.',
                     volume.id)

    def extend_volume(self, volume, new_size):
        _group, volume_id = self._volume_ids(volume)
        self.client.update('volumes', volume_id,
                           {'size': new_size * KIB_PER_GIB})

    def create_cloned_volume(self, volume, src_vref):
        _group, src_id = self._volume_ids(src_vref)
        if not self.capabilities.get('volume_source'):
            return self._create_by_host_copy(volume, source_volume=src_vref)
        return self._create(volume, volume.size,
                            source=k2_rest.ref('volumes', src_id))

    def create_volume_from_snapshot(self, volume, snapshot):
        _snap_id, volsnap_id = self._snapshot_ids(snapshot)
        if not self.capabilities.get('volume_source'):
            return self._create_by_host_copy(volume, volsnap_id=volsnap_id)
        return self._create(volume, volume.size,
                            source=k2_rest.ref('volsnaps', volsnap_id))

    # -- snapshots -----------------------------------------------------------
    def create_snapshot(self, snapshot):
        group_id, _volume_id = self._volume_ids(snapshot.volume)
        snap = self.client.create_unique('snapshots', {
            'short_name': naming.snapshot_name(snapshot),
            'source': k2_rest.ref('volume_groups', group_id),
            'retention_policy': self.retention_policy,
            'is_auto_deleteable': False, 'description': _owner(snapshot)},
            short_name=naming.snapshot_name(snapshot))
        with self._undo_on_error('snapshots', snap['id']):
            # A volume in a consistency group shares its volume group: pick
            # this volume's member of the snapshot.
            volsnap = self.client.find('volsnaps', **{
                'snapshot.ref': '/snapshots/%d' % snap['id'],
                'source.ref': '/volumes/%d' % _volume_id})
            if volsnap is None:
                raise flash_exception.ArrayBadReply(
                    array=self.client.http.array_name, method='GET',
                    path='/volsnaps', status_code=200,
                    reason='snapshot %d has no volume member' % snap['id'])
        return {'provider_id': self._pid(snap['id'], volsnap['id'])}

    def delete_snapshot(self, snapshot):
        try:
            snap_id, _volsnap = self._snapshot_ids(snapshot)
        except exception.SnapshotNotFound:
            LOG.info('Snapshot %s is not on the array; nothing to delete.',
                     snapshot.id)
            return
        try:
            self.client.delete('snapshots', snap_id)
        except flash_exception.ObjectBusy:
            raise exception.SnapshotIsBusy(snapshot_name=snapshot.name)

    def revert_to_snapshot(self, volume, snapshot):
        if self._shared(volume) or _is_shared(snapshot.provider_id):
            raise exception.VolumeDriverException(message=_(
                'volume %s is in a consistency group: restoring its K2 volume '
                'group would revert every member') % volume.id)
        group_id, _volume_id = self._volume_ids(volume)
        snap_id, _volsnap = self._snapshot_ids(snapshot)
        self.client.update('volume_groups', group_id, {
            'last_restored_from': k2_rest.ref('snapshots', snap_id)})

    # -- attach --------------------------------------------------------------
    def _initiators(self, connector):
        if self.protocol == constants.ISCSI:
            initiator = connector.get('initiator')
            if not initiator:
                raise exception.InvalidConnectorException(
                    missing='initiator')
            return 'host_iqns', 'iqn', [initiator]
        wwpns = [w.lower() for w in connector.get('wwpns') or []]
        if not wwpns:
            raise exception.InvalidConnectorException(missing='wwpns')
        return 'host_fc_ports', 'pwwn', [_colons(w) for w in wwpns]

    def _host_id(self, connector, create):
        """Array host of the connector's initiators (cached per process)."""
        kind, field, ports = self._initiators(connector)
        key = (kind, tuple(ports))
        with self._hosts_lock:
            cached = self._hosts.get(key)
        if cached is not None:
            return cached
        if create:
            host_id = self._create_host(connector, kind, field, ports)
        else:
            host_id = self._find_host(kind, field, ports)
            if host_id is None:
                return None
        with self._hosts_lock:
            self._hosts[key] = host_id
        return host_id

    def _find_host(self, kind, field, ports):
        """The host that holds any of the initiators, in one search."""
        found = self.client.search(kind, **{field + '__in': ','.join(ports)})
        return k2_rest.ref_id(found[0]['host']) if found else None

    def _chap(self, host_name):
        """(username, secret) the host must log in with, or None.

        Without chap_username/chap_password each host gets its own
        secret, derived from san_password: every cinder-volume service of
        the backend computes the same one and none is stored.
        """
        conf = self.configuration
        if not conf.safe_get('use_chap_auth'):
            return None
        if conf.safe_get('chap_username') and conf.safe_get('chap_password'):
            return conf.chap_username, conf.chap_password
        digest = hmac.new(conf.san_password.encode(),
                          ('chap:' + host_name).encode(),
                          hashlib.sha256).digest()
        return host_name, base64.b32encode(digest).decode()[:16].lower()

    def _create_host(self, connector, kind, field, ports):
        """The connector's host, created if the array has none.

        Creating first costs no lookup for a new host (host, initiators)
        and one for a known one (its name is taken: find it by initiator),
        so a first attach takes at most three calls either way.
        """
        name = naming.host_name(connector, HOST_NAME_LIMIT)
        body = {'name': name, 'type': 'Linux'}
        chap = self._chap(name)
        if chap is not None:
            body['host_auth_profile'] = self._auth_profile(name, chap)
        try:
            host = self.client.create_unique('hosts', body, name=name)
        except flash_exception.ObjectExists:
            return self._known_host(name, chap, body, kind, field, ports)
        for port in ports:
            try:
                self.client.create_unique(
                    kind, {field: port, 'host': k2_rest.ref('hosts',
                                                            host['id'])},
                    **{field: port})
            except flash_exception.ObjectExists:
                # The initiator belongs to a host of another name: that
                # one is the host, the new one goes.
                found = self._find_host(kind, field, ports)
                if found is None or found == host['id']:
                    raise
                with _suppressed('removing host %s' % host['id']):
                    self.client.delete('hosts', host['id'])
                return found
        return host['id']

    def _known_host(self, name, chap, body, kind, field, ports):
        host_id = self._find_host(kind, field, ports)
        if host_id is None:
            # A host of that name without these initiators (a reinstalled
            # node, say): they are added to it.
            host = self.client.find('hosts', name=name)
            if host is None:
                raise exception.VolumeBackendAPIException(data=_(
                    'the array refused host %s and has none of that name')
                    % name)
            host_id = host['id']
            for port in ports:
                self.client.create_unique(
                    kind, {field: port, 'host': k2_rest.ref('hosts',
                                                            host_id)},
                    **{field: port})
        if chap is not None:
            # A host made before CHAP was turned on gets its profile.
            self.client.update('hosts', host_id, {
                'host_auth_profile': body['host_auth_profile']})
        return host_id

    def _auth_profile(self, name, chap):
        user, secret = chap
        body = {'name': name, 'auth_type': 'CHAP', 'username': user,
                'secret': secret}
        try:
            profile = self.client.create_unique('host_auth_profiles', body,
                                                name=name)
        except flash_exception.ObjectExists:
            profile = self.client.find('host_auth_profiles', name=name)
            if profile is None:
                raise
            self.client.update('host_auth_profiles', profile['id'], {
                'username': user, 'secret': secret})
        return k2_rest.ref('host_auth_profiles', profile['id'])

    def _forget_host(self, connector):
        kind, _field, ports = self._initiators(connector)
        with self._hosts_lock:
            self._hosts.pop((kind, tuple(ports)), None)

    def _map(self, volume_id, host_id):
        volume_ref = k2_rest.ref('volumes', volume_id)
        host_ref = k2_rest.ref('hosts', host_id)
        try:
            return self.client.create_unique(
                'mappings', {'volume': volume_ref, 'host': host_ref},
                **{'volume.ref': volume_ref['ref'],
                   'host.ref': host_ref['ref']})['lun']
        except flash_exception.ObjectExists:
            existing = self.client.find('mappings', **{
                'volume.ref': volume_ref['ref'],
                'host.ref': host_ref['ref']})
            if existing is None:
                raise
            return existing['lun']

    def initialize_connection(self, volume, connector):
        _group, volume_id = self._volume_ids(volume)
        host_id = self._host_id(connector, create=True)
        try:
            lun = self._map(volume_id, host_id)
        except flash_exception.ObjectExists:
            # The cached host may have been removed on the array.
            self._forget_host(connector)
            lun = self._map(volume_id, self._host_id(connector, True))
        return self._connection_info(volume, connector, lun)

    def _connection_info(self, volume, connector, lun):
        if self.protocol == constants.ISCSI:
            count = len(self.portals)
            data = {'target_discovered': False,
                    'target_iqn': self.target_iqn,
                    'target_portal': self.portals[0],
                    'target_lun': lun,
                    'target_iqns': [self.target_iqn] * count,
                    'target_portals': list(self.portals),
                    'target_luns': [lun] * count,
                    'volume_id': volume.id,
                    'discard': True}
            chap = self._chap(naming.host_name(connector, HOST_NAME_LIMIT))
            if chap is not None:
                data.update(auth_method='CHAP', auth_username=chap[0],
                            auth_password=chap[1])
            return {'driver_volume_type': 'iscsi', 'data': data}
        initiators = [w.lower() for w in connector['wwpns']]
        data = {'target_discovered': True, 'target_lun': lun,
                'target_wwn': list(self.fc_targets),
                'initiator_target_map': {
                    i: list(self.fc_targets) for i in initiators},
                'volume_id': volume.id, 'discard': True}
        return {'driver_volume_type': 'fibre_channel', 'data': data}

    def terminate_connection(self, volume, connector):
        """Unmap; with no connector, remove every mapping of the volume.

        Returns True when the connector's host has no mapping left (FC
        zones can go), False otherwise.
        """
        ids = self._volume_ids(volume, required=False)
        if ids is None:
            return False
        volume_ref = '/volumes/%d' % ids[1]
        if connector is None:
            mappings = self.client.search('mappings',
                                          **{'volume.ref': volume_ref})
        else:
            host_id = self._host_id(connector, create=False)
            if host_id is None:
                return False
            mappings = self.client.search('mappings', **{
                'volume.ref': volume_ref,
                'host.ref': '/hosts/%d' % host_id})
        for mapping in mappings:
            self.client.delete('mappings', mapping['id'])
        if connector is None or self.protocol != constants.FC:
            return False
        return not self.client.search('mappings', **{
            'host.ref': '/hosts/%d' % host_id})

    # -- stats ---------------------------------------------------------------
    def _base_stats(self):
        conf = self.configuration
        stats = {
            'volume_backend_name': conf.safe_get('volume_backend_name') or
            'K2_%s' % self.protocol,
            'vendor_name': VENDOR,
            'driver_version': self.driver_version,
            'storage_protocol': self.protocol,
        }
        # Cinder reads the backend's replication state from the top level
        # (service replication_status), the scheduler from the pool.
        self._replication_stats(stats)
        return stats

    def _down_stats(self):
        stats = self._base_stats()
        stats['pools'] = [{'pool_name': stats['volume_backend_name'],
                           'total_capacity_gb': 0, 'free_capacity_gb': 0,
                           'reserved_percentage': 0,
                           'backend_state': 'down'}]
        return stats

    def _collect_stats(self):
        cap = self.client.find('system/capacity') or {}
        perf = self.client.find('stats/system') or {}
        for key in ('total', 'free', 'provisioned', 'logical', 'physical'):
            if not isinstance(cap.get(key), int):
                raise flash_exception.ArrayBadReply(
                    array=self.client.http.array_name, method='GET',
                    path='/system/capacity', status_code=200,
                    reason='no integer %s' % key)
        ratio = flash_stats.reduction_ratio(cap['logical'], cap['physical'])
        auto = ratio if self.configuration.k2_auto_max_over_subscription_ratio\
            else None
        stats = self._base_stats()
        pool = {'pool_name': stats['volume_backend_name'],
                'multiattach': True,
                'online_extend_support': True,
                'QoS_support': False,
                'consistent_group_snapshot_enabled': True,
                'location_info': self.location,
                'sparse_copy_volume': True,
                'compression_support': True,
                'deduplication_support': True,
                'data_reduction_ratio': ratio,
                'logical_used_gb': flash_stats.gib(cap['logical']),
                'physical_used_gb': flash_stats.gib(cap['physical']),
                'read_iops': perf.get('read_iops_avg', 0),
                'write_iops': perf.get('write_iops_avg', 0),
                'throughput_bytes_per_sec': perf.get('throughput_avg', 0),
                'latency_usec': perf.get('latency_avg', 0),
                'backend_state': 'up'}
        pool.update(flash_stats.capacity(cap['total'], cap['free'],
                                         cap['provisioned'],
                                         self.configuration, auto))
        self._replication_stats(pool)
        stats['pools'] = [pool]
        return stats

    # -- type changes and manage ------------------------------------------
    def retype(self, volume, new_type, host=None):
        """(retyped, model update): in place, or False so Cinder migrates.

        A change of deduplication is an array-side copy into a new volume
        group, swapped in under the same names; it needs the array's
        volume_source capability and a volume that is not attached, not in
        a consistency group and without snapshots.
        """
        new = self._specs(new_type)
        group_id, volume_id = self._volume_ids(volume)
        group = self.client.get('volume_groups', group_id)
        replicated = bool(group.get('replication_session'))
        if group.get('is_dedup') == new['dedup']:
            if new['replication'] == replicated:
                return True, None
            if new['replication']:
                if self._shared(volume):
                    return False, None
                return True, self._replicate(volume, group_id, volume_id)
            self._unreplicate(volume)
            return True, {'replication_status':
                          fields.ReplicationStatus.DISABLED}
        if replicated or new['replication']:
            # The copy-and-swap below would leave the session behind.
            return False, None
        if (self._shared(volume) or not self.capabilities.get(
                'volume_source') or group.get('snapshots_count') or
                self.client.search('mappings', **{
                    'volume.ref': '/volumes/%d' % volume_id})):
            return False, None
        return True, self._copy_swap(volume, group, volume_id, new['dedup'])

    def _copy_swap(self, volume, group, volume_id, dedup):
        old = self.client.get('volumes', volume_id)
        temp_group = self.client.create_unique('volume_groups', {
            'name': naming.group_name(volume) + '-r', 'quota': 0,
            'is_dedup': dedup}, name=naming.group_name(volume) + '-r')
        with self._undo_on_error('volume_groups', temp_group['id']):
            copy = self.client.create_unique('volumes', {
                'name': naming.volume_name(volume) + '-r',
                'size': old['size'],
                'volume_group': k2_rest.ref('volume_groups',
                                            temp_group['id']),
                'source': k2_rest.ref('volumes', volume_id)},
                name=naming.volume_name(volume) + '-r')
        try:
            self.client.delete('volumes', volume_id)
        except Exception:
            # The original is intact: drop the copy and give up.
            with _suppressed('removing copy %s' % copy['id']):
                self.client.delete('volumes', copy['id'])
                self.client.delete('volume_groups', temp_group['id'])
            raise
        # From here the copy is the volume: whatever fails now must not
        # fail the retype, or Cinder would keep pointing at the deleted
        # original. Names are tidied on a best-effort basis.
        for what, call in (
                ('removing volume group %s' % group['id'],
                 lambda: self.client.delete('volume_groups', group['id'])),
                ('renaming volume group %s' % temp_group['id'],
                 lambda: self.client.update(
                     'volume_groups', temp_group['id'],
                     {'name': naming.group_name(volume)})),
                ('renaming volume %s' % copy['id'],
                 lambda: self.client.update('volumes', copy['id'], {
                     'name': naming.volume_name(volume),
                     'description': _owner(volume)}))):
            with _suppressed(what):
                call()
        return {'provider_id': self._pid(temp_group['id'], copy['id'])}

    def migrate_volume(self, volume, host):
        """Between backends on the same array nothing has to move."""
        dest = (host or {}).get('capabilities', {}).get('location_info')
        if self.location is None or dest != self.location:
            return False, None
        return True, None

    def _by_reference(self, resource, existing_ref, name_field, **scope):
        """The array object a manage reference names, or None."""
        if 'source-id' in existing_ref:
            try:
                return self.client.get(resource,
                                       int(existing_ref['source-id']))
            except (ValueError, TypeError):
                raise exception.ManageExistingInvalidReference(
                    existing_ref=existing_ref,
                    reason=_('source-id must be a K2 %s id') % resource)
            except flash_exception.ObjectNotFound:
                return None
        if 'source-name' in existing_ref:
            return self.client.find(resource, **dict(
                scope, **{name_field: existing_ref['source-name']}))
        raise exception.ManageExistingInvalidReference(
            existing_ref=existing_ref,
            reason=_('give source-name or source-id'))

    def _manage_target(self, existing_ref):
        vol = self._by_reference('volumes', existing_ref, 'name')
        if vol is None:
            raise exception.ManageExistingInvalidReference(
                existing_ref=existing_ref,
                reason=_('no such volume on the array'))
        return vol

    def manage_existing_get_size(self, volume, existing_ref):
        vol = self._manage_target(existing_ref)
        return -(-vol['size'] // KIB_PER_GIB)

    def manage_existing(self, volume, existing_ref):
        vol = self._manage_target(existing_ref)
        if not vol.get('volume_group'):
            raise exception.ManageExistingInvalidReference(
                existing_ref=existing_ref,
                reason=_('%s is not in a volume group (a built-in volume)')
                % vol['name'])
        group_id = k2_rest.ref_id(vol['volume_group'])
        group = self.client.get('volume_groups', group_id)
        reason = None
        owner = vol.get('description') or ''
        if owner.startswith(OWNER_PREFIX) and owner != _owner(volume):
            reason = _('it is managed by Cinder already (as volume %s)') % (
                owner[len(OWNER_PREFIX):])
        elif group.get('volumes_count', 1) != 1:
            reason = _('its volume group %s holds other volumes') % (
                group['name'])
        elif group.get('replication_session'):
            reason = _('its volume group is replicated')
        elif self.client.search('mappings', **{
                'volume.ref': '/volumes/%d' % vol['id']}):
            reason = _('it is mapped to a host; unmap it first')
        elif group.get('is_dedup') != self._type_dedup(volume.volume_type):
            reason = _('its deduplication setting differs from the volume '
                       'type')
        if reason:
            raise exception.ManageExistingInvalidReference(
                existing_ref=existing_ref, reason=reason)
        size = -(-vol['size'] // KIB_PER_GIB) * KIB_PER_GIB
        self.client.update('volume_groups', group_id,
                           {'name': naming.group_name(volume)})
        changes = {'name': naming.volume_name(volume),
                   'description': _owner(volume)}
        if size != vol['size']:
            changes['size'] = size
        self.client.update('volumes', vol['id'], changes)
        update = {'provider_id': self._pid(group_id, vol['id'])}
        if self._specs(volume.volume_type)['replication']:
            update.update(self._replicate(volume, group_id, vol['id']))
        return update

    def unmanage(self, volume):
        """Cinder lets go: the volume stays, without our ownership mark."""
        ids = self._volume_ids(volume, required=False)
        if ids is not None:
            self.client.update('volumes', ids[1], {'description': ''})

    def _manage_snapshot_target(self, snapshot, existing_ref):
        group_id, _volume_id = self._volume_ids(snapshot.volume)
        group_ref = '/volume_groups/%d' % group_id
        snap = self._by_reference('snapshots', existing_ref, 'short_name',
                                  **{'volume_group.ref': group_ref})
        reason = None
        if snap is None:
            reason = _('no such snapshot of volume %s on the array') % (
                snapshot.volume_id)
        elif snap['volume_group']['ref'] != group_ref:
            reason = _('it is a snapshot of another volume')
        elif snap.get('is_exposable'):
            reason = _('it is a view, not a snapshot')
        elif (snap.get('description') or '').startswith(OWNER_PREFIX) and \
                snap['description'] != _owner(snapshot):
            reason = _('it is managed by Cinder already (as snapshot %s)') % (
                snap['description'][len(OWNER_PREFIX):])
        if reason:
            raise exception.ManageExistingInvalidReference(
                existing_ref=existing_ref, reason=reason)
        return snap

    def manage_existing_snapshot_get_size(self, snapshot, existing_ref):
        self._manage_snapshot_target(snapshot, existing_ref)
        _group, volume_id = self._volume_ids(snapshot.volume)
        return -(-self.client.get('volumes', volume_id)['size'] //
                 KIB_PER_GIB)

    def manage_existing_snapshot(self, snapshot, existing_ref):
        snap = self._manage_snapshot_target(snapshot, existing_ref)
        volsnap = self.client.find('volsnaps', **{
            'snapshot.ref': '/snapshots/%d' % snap['id']})
        if volsnap is None:
            raise exception.ManageExistingInvalidReference(
                existing_ref=existing_ref,
                reason=_('the snapshot has no volume member'))
        self.client.update('snapshots', snap['id'], {
            'short_name': naming.snapshot_name(snapshot),
            'description': _owner(snapshot)})
        return {'provider_id': self._pid(snap['id'], volsnap['id'])}

    def unmanage_snapshot(self, snapshot):
        try:
            snap_id, _volsnap = self._snapshot_ids(snapshot)
        except exception.SnapshotNotFound:
            return
        self.client.update('snapshots', snap_id, {'description': ''})

    def get_manageable_snapshots(self, cinder_snapshots, marker, limit,
                                 offset, sort_keys, sort_dirs):
        from cinder.volume import volume_utils
        known = {naming.snapshot_name(s): s.id for s in cinder_snapshots}
        groups = {'/volume_groups/%d' % g['id']: g['name']
                  for g in self.client.search('volume_groups')}
        entries = []
        for snap in self.client.search('snapshots'):
            group = groups.get(snap['volume_group']['ref'], '')
            if snap.get('is_exposable') or not group.startswith(
                    naming.GROUP_PREFIX):
                continue
            owner = snap.get('description') or ''
            owner = owner[len(OWNER_PREFIX):] \
                if owner.startswith(OWNER_PREFIX) else None
            cinder_id = known.get(snap['short_name']) or owner
            entries.append({
                'reference': {'source-name': snap['short_name']},
                'size': 0, 'cinder_id': cinder_id,
                'safe_to_manage': cinder_id is None,
                'reason_not_safe': 'already managed' if cinder_id else None,
                'extra_info': None,
                'source_reference': {'source-name': naming.VOLUME_PREFIX +
                                     group[len(naming.GROUP_PREFIX):]}})
        return volume_utils.paginate_entries_list(
            entries, marker, limit, offset, sort_keys, sort_dirs)

    def get_manageable_volumes(self, cinder_volumes, marker, limit, offset,
                               sort_keys, sort_dirs):
        from cinder.volume import volume_utils
        known = {naming.volume_name(v): v.id for v in cinder_volumes}
        mapped = {m['volume']['ref'] for m in self.client.search('mappings')}
        entries = []
        for vol in self.client.search('volumes'):
            if vol['name'] == 'CTRL':
                continue
            owner = vol.get('description') or ''
            if owner.startswith(OWNER_PREFIX):
                owner = owner[len(OWNER_PREFIX):]
            else:
                owner = None
            entry = {'reference': {'source-name': vol['name']},
                     'size': -(-vol['size'] // KIB_PER_GIB),
                     'safe_to_manage': True, 'reason_not_safe': None,
                     'cinder_id': known.get(vol['name']) or owner,
                     'extra_info': None}
            if entry['cinder_id']:
                entry['safe_to_manage'] = False
                entry['reason_not_safe'] = 'already managed'
            elif '/volumes/%d' % vol['id'] in mapped:
                entry['safe_to_manage'] = False
                entry['reason_not_safe'] = 'volume is mapped'
            entries.append(entry)
        return volume_utils.paginate_entries_list(
            entries, marker, limit, offset, sort_keys, sort_dirs)


def _colons(wwn):
    wwn = wwn.replace(':', '')
    return ':'.join(wwn[i:i + 2] for i in range(0, len(wwn), 2))


class _suppressed(object):
    """Cleanup after a failure: log, never mask the original error."""

    def __init__(self, what):
        self.what = what

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is not None:
            LOG.warning('Cleanup failed while %s: %s', self.what, exc)
        return True
