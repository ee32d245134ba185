"""A simulated LINSTOR cluster over the reference array's engine.

Nodes and storage pools are seeded from the array's config. Resource
definitions keep their volume definitions, resources (one per node) and
snapshots in one stored object, so every call changes one record inside
one transaction, and a refused call leaves nothing behind. Diskful
replicas of a volume share one engine layer: they hold the same bytes, and
each node's pool is charged for them.
"""

import re
import time
import uuid

from reference_array.linstor import props as linstorprops
from reference_array.linstor import wire

NODES, RGS, RDS, CTRL = 'ls_nodes', 'ls_rgs', 'ls_rds', 'ls_ctrl'
DEFAULT_RG = 'DfltRscGrp'
DEFAULT_POOL = 'DfltStorPool'
DISKLESS_POOL = 'DfltDisklessStorPool'
MINOR_BASE = 1000
PORT_BASE = 7000
DEFAULT_PLACE_COUNT = 2
THIN_RATIO = 20.0
INT64_MAX = 2 ** 63 - 1
NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_-]{1,47}$')
LAYERS = ('DRBD', 'LUKS', 'STORAGE', 'NVME', 'WRITECACHE', 'CACHE',
          'BCACHE')
PROVIDERS = {
    # kind: (thin, snapshots, clone)
    'LVM': (False, False, True),
    'LVM_THIN': (True, True, True),
    'ZFS': (False, True, True),
    'ZFS_THIN': (True, True, True),
    'FILE': (False, True, False),
    'FILE_THIN': (True, True, False),
    'DISKLESS': (False, False, False),
}
DISKLESS_FLAGS = ('DISKLESS', 'DRBD_DISKLESS')


def default_nodes(hostname):
    """Three diskful satellites and this machine as a diskless client."""
    pools = {DEFAULT_POOL: 'LVM_THIN', 'thickpool': 'LVM',
             DISKLESS_POOL: 'DISKLESS'}
    nodes = [{'name': 'sat-%d' % n, 'pools': dict(pools),
              'props': {'Aux/zone': 'zone-%d' % n}} for n in (1, 2, 3)]
    nodes.append({'name': hostname, 'pools': {DISKLESS_POOL: 'DISKLESS'},
                  'props': {}})
    return nodes


def _ts_ms():
    return int(time.time() * 1000)


def _props(body, field, where):
    value = body.get(field)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise wire.invalid('%s: %s must be an object' % (where, field),
                           wire.INVLD_PROP)
    for key, val in value.items():
        why = linstorprops.check(key, val)
        if why:
            raise wire.Failure(wire.INVLD_PROP, 'Invalid property %s=%r: %s'
                               % (key, val, why))
    return dict(value)


def _apply_props(props, body, where):
    """``override_props`` and ``delete_props`` of a modify request."""
    props.update(_props(body, 'override_props', where))
    for key in _list(body, 'delete_props', where):
        props.pop(key, None)


def _list(body, field, where):
    value = body.get(field)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str)
                                              for v in value):
        raise wire.invalid('%s: %s must be a list of strings' % (
            where, field))
    return list(value)


def _int(value, field, minimum=0):
    """Lenient integers: LINSTOR's clients send "2" for 2."""
    if isinstance(value, bool):
        raise wire.invalid('%s must be an integer, not %r' % (field, value))
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise wire.invalid('%s must be an integer, not %r' % (field, value))
    if number < minimum:
        raise wire.invalid('%s must be at least %d, not %d' % (
            field, minimum, number))
    return number


def _check_name(name, obj, what):
    if not isinstance(name, str) or not NAME.match(name):
        raise wire.Failure(
            {'rsc_dfn': wire.INVLD_RSC_NAME, 'rsc_grp': wire.INVLD_RSC_NAME,
             'snapshot': wire.INVLD_SNAPSHOT_NAME}.get(obj,
                                                       wire.INVLD_REQUEST),
            'Invalid %s name %r: 2 to 48 characters, a letter or _ first, '
            'then letters, digits, _ or -' % (what, name), obj=obj,
            op='create')
    return name


def _layers(value, where):
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise wire.Failure(wire.INVLD_LAYER_STACK, '%s: the layer list must '
                           'be a non-empty list' % where)
    layers = [str(v).upper() for v in value]
    bad = [v for v in layers if v not in LAYERS]
    if bad or layers[-1] != 'STORAGE':
        raise wire.Failure(wire.INVLD_LAYER_STACK, '%s: invalid layer list '
                           '%r; it ends with STORAGE and uses %s' % (
                               where, value, ', '.join(LAYERS)))
    return layers


class LinstorModel(object):

    def __init__(self, store, engine, system_id, nodes, pool_kib):
        self.store = store
        self.engine = engine
        self.system_id = system_id
        self.pool_kib = pool_kib
        self._seed(nodes)

    # -- storage -----------------------------------------------------------
    def _find(self, kind, name):
        if not isinstance(name, str):
            return None
        return self.store.first(kind, 'name.folded', name.lower())

    def find(self, name):
        return self._find(RDS, name)

    def on_node(self, node):
        return self.store.find(RDS, 'resources.key', node)

    def node_names(self):
        return [n['name'] for n in self.store.all(NODES)]

    def _put(self, kind, obj):
        if 'id' not in obj:
            obj['id'] = self.store.next_id(kind)
        self.store.put(kind, obj['id'], obj)
        return obj

    def _seed(self, nodes):
        with self.store.transaction():
            for spec in nodes:
                if self._find(NODES, spec['name']) is None:
                    self._put(NODES, {
                        'name': spec['name'], 'flags': [],
                        'props': dict(spec.get('props') or {}),
                        'uuid': str(uuid.uuid4()),
                        'pools': {name: {'provider_kind': kind,
                                         'uuid': str(uuid.uuid4()),
                                         'props': {} if kind == 'DISKLESS'
                                         else {'StorDriver/StorPoolName':
                                               'vg-%s' % name.lower()}}
                                  for name, kind in spec['pools'].items()}})
            if self._find(RGS, DEFAULT_RG) is None:
                self._put(RGS, {'name': DEFAULT_RG, 'description': '',
                                'props': {}, 'select_filter': {},
                                'uuid': str(uuid.uuid4()),
                                'volume_groups': []})
            if not self.store.all(CTRL):
                self.store.put(CTRL, 1, {'id': 1, 'name': 'controller',
                                         'props': {}})

    # kind: (wire object, what it is called, obj_refs key)
    _KINDS = {NODES: ('node', 'Node', 'Node'),
              RDS: ('rsc_dfn', 'Resource definition', 'RscDfn'),
              RGS: ('rsc_grp', 'Resource group', 'RscGrp')}

    def _must(self, kind, name, op=None):
        found = self._find(kind, name)
        if found is None:
            obj, what, ref = self._KINDS[kind]
            raise wire.not_found(obj, "%s '%s'" % (what, name), op=op,
                                 refs={ref: name})
        return found

    def _node(self, name):
        return self._must(NODES, name)

    def _rd(self, name, op=None):
        return self._must(RDS, name, op)

    def _rg(self, name, op=None):
        return self._must(RGS, name, op)

    # -- capacity ------------------------------------------------------------
    def _pool_usage(self, node_name, pool_name):
        """(used KiB, layers) of one node's pool."""
        thin = PROVIDERS[self._node(node_name)['pools'][pool_name][
            'provider_kind']][0]
        layers, fat = [], 0
        for rd in self.store.all(RDS):
            rsc = rd['resources'].get(node_name)
            if rsc and rsc.get('pool') == pool_name:
                layers += [vd['_layer'] for vd in rd['vds']]
                fat += sum(vd['size_kib'] for vd in rd['vds'])
            for snap in rd['snapshots'].values():
                if node_name in snap['nodes'] and snap.get(
                        'pools', {}).get(node_name) == pool_name:
                    layers += [v['_layer'] for v in snap['vds']]
        if not thin:
            return fat, layers
        _logical, physical = self.engine.usage(layers)
        return -(-physical // 1024), layers

    def _pool_view(self, node, name):
        pool = node['pools'][name]
        kind = pool['provider_kind']
        thin, snaps, _clone = PROVIDERS[kind]
        view = {'storage_pool_name': name, 'node_name': node['name'],
                'provider_kind': kind, 'props': dict(pool['props']),
                'static_traits': {'Provisioning': 'Thin' if thin else 'Fat',
                                  'SupportsSnapshots': str(snaps).lower()},
                'free_space_mgr_name': '%s;%s' % (node['name'], name),
                'uuid': pool['uuid'], 'reports': [],
                'supports_snapshots': snaps,
                'external_locking': False}
        if kind == 'DISKLESS':
            view['free_capacity'] = view['total_capacity'] = INT64_MAX
        else:
            used, _layers = self._pool_usage(node['name'], name)
            view['total_capacity'] = self.pool_kib
            view['free_capacity'] = max(self.pool_kib - used, 0)
        return view

    def storage_pools(self, nodes=(), pools=()):
        out = []
        for node in self.store.all(NODES):
            if nodes and node['name'].lower() not in [n.lower()
                                                      for n in nodes]:
                continue
            for name in sorted(node['pools']):
                if pools and name.lower() not in [p.lower() for p in pools]:
                    continue
                out.append(self._pool_view(node, name))
        return out

    def pool_definitions(self):
        names = sorted({p for n in self.store.all(NODES) for p in n['pools']})
        return [{'storage_pool_name': n, 'props': {}} for n in names]

    # -- nodes ---------------------------------------------------------------
    def node_view(self, node):
        kinds = sorted({p['provider_kind'] for p in node['pools'].values()})
        return {'name': node['name'], 'type': 'Satellite',
                'flags': list(node['flags']), 'props': dict(node['props']),
                'net_interfaces': [{'name': 'default',
                                    'address': '127.0.0.1',
                                    'satellite_port': 3366,
                                    'satellite_encryption_type': 'PLAIN',
                                    'is_active': True}],
                'connection_status': 'ONLINE', 'uuid': node['uuid'],
                'storage_providers': kinds,
                'resource_layers': ['DRBD', 'STORAGE'],
                'unsupported_providers': {}, 'unsupported_layers': {}}

    def _named(self, kind, names):
        """Objects of ``kind`` (all, or those named; any case)."""
        wanted = {n.lower() for n in names}
        return [o for o in self.store.all(kind)
                if not wanted or o['name'].lower() in wanted]

    def nodes(self, names=()):
        return [self.node_view(n) for n in self._named(NODES, names)]

    def node(self, name):
        return self.node_view(self._node(name))

    def node_flag(self, name, action):
        with self.store.transaction():
            node = self._node(name)
            if action == 'evacuate':
                node['flags'] = sorted(set(node['flags']) | {'EVACUATE'})
            else:
                node['flags'] = [f for f in node['flags']
                                 if f not in ('EVACUATE', 'EVICTED')]
            self._put(NODES, node)
        return [wire.rc('ok', wire.MODIFIED, "Node '%s' %s." % (
            name, 'evacuating' if action == 'evacuate' else 'restored'),
            obj='node', op='modify', refs={'Node': name})]

    # -- controller -----------------------------------------------------------
    def controller_props(self):
        return dict(self.store.get(CTRL, 1)['props'])

    def set_controller_props(self, body):
        with self.store.transaction():
            ctrl = self.store.get(CTRL, 1)
            _apply_props(ctrl['props'], body, 'controller')
            self.store.put(CTRL, 1, ctrl)
        return [wire.rc('ok', wire.MODIFIED, 'Controller properties '
                        'applied.', obj='ctrl_conf', op='modify')]

    def delete_controller_prop(self, key):
        return self.set_controller_props({'delete_props': [key]})

    # -- resource groups ------------------------------------------------------
    def _filter(self, value, where):
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise wire.invalid('%s: select_filter must be an object' % where)
        out = {}
        for key, val in value.items():
            if val is None:
                continue
            if key in ('place_count', 'additional_place_count'):
                out[key] = _int(val, key, 0 if key.startswith('add') else 1)
                if key == 'place_count' and out[key] > 16:
                    raise wire.Failure(wire.INVLD_PLACE_COUNT,
                                       'place_count %d is above 16' %
                                       out[key])
            elif key == 'storage_pool':
                out['storage_pool_list'] = [str(val)]
            elif key in ('storage_pool_list', 'storage_pool_diskless_list',
                         'node_name_list', 'not_place_with_rsc',
                         'replicas_on_same', 'replicas_on_different',
                         'provider_list'):
                out[key] = _list(value, key, where)
            elif key == 'layer_stack':
                out[key] = _layers(val, where)
            elif key == 'not_place_with_rsc_regex':
                try:
                    re.compile(str(val))
                except re.error:
                    raise wire.invalid('%s: bad regex %r' % (where, val))
                out[key] = str(val)
            elif key == 'diskless_on_remaining':
                out[key] = bool(val)
            else:
                out[key] = val
        for pool in out.get('storage_pool_list', []):
            if not any(pool in n['pools'] for n in self.store.all(NODES)):
                raise wire.Failure(wire.NOT_FOUND['stor_pool'],
                                   "Storage pool '%s' not found." % pool,
                                   obj='stor_pool')
        return out

    def rg_view(self, rg):
        view = {'name': rg['name'], 'description': rg['description'],
                'props': dict(rg['props']),
                'select_filter': dict(rg['select_filter']),
                'uuid': rg['uuid']}
        return view

    def resource_groups(self, names=()):
        return [self.rg_view(rg) for rg in self._named(RGS, names)]

    def resource_group(self, name):
        return self.rg_view(self._rg(name))

    def create_rg(self, body):
        name = _check_name(body.get('name'), 'rsc_grp', 'resource group')
        with self.store.transaction():
            if self._find(RGS, name):
                raise wire.exists('rsc_grp', "Resource group '%s'" % name,
                                  refs={'RscGrp': name})
            self._put(RGS, {
                'name': name, 'description': str(body.get('description')
                                                 or ''),
                'props': _props(body, 'props', name),
                'select_filter': self._filter(body.get('select_filter'),
                                              name),
                'uuid': str(uuid.uuid4()), 'volume_groups': []})
        return [wire.rc('ok', wire.CREATED, "New resource group '%s' "
                        "created." % name, obj='rsc_grp', op='create',
                        refs={'RscGrp': name})]

    def modify_rg(self, name, body):
        with self.store.transaction():
            rg = self._rg(name, op='modify')
            if body.get('description') is not None:
                rg['description'] = str(body['description'])
            _apply_props(rg['props'], body, name)
            if body.get('select_filter') is not None:
                rg['select_filter'].update(self._filter(
                    body['select_filter'], name))
            self._put(RGS, rg)
        return [wire.rc('ok', wire.MODIFIED, "Resource group '%s' "
                        "modified." % name, obj='rsc_grp', op='modify',
                        refs={'RscGrp': name})]

    def delete_rg(self, name):
        with self.store.transaction():
            rg = self._find(RGS, name)
            if rg is None:
                return [wire.rc('warn', wire.WARN_NOT_FOUND, "Resource group "
                                "'%s' not found." % name, obj='rsc_grp',
                                op='delete', refs={'RscGrp': name})]
            if name.lower() == DEFAULT_RG.lower():
                raise wire.Failure(wire.IN_USE, 'The default resource group '
                                   'cannot be deleted.', obj='rsc_grp',
                                   op='delete')
            users = [rd['name'] for rd in self.store.all(RDS)
                     if rd['rg'].lower() == name.lower()]
            if users:
                raise wire.Failure(wire.IN_USE, "Resource group '%s' still "
                                   "has resource definitions: %s" % (
                                       name, ', '.join(users)),
                                   obj='rsc_grp', op='delete')
            self.store.delete(RGS, rg['id'])
        return [wire.rc('ok', wire.DELETED, "Resource group '%s' deleted." %
                        name, obj='rsc_grp', op='delete',
                        refs={'RscGrp': name})]

    def volume_groups(self, name):
        return [dict(vg) for vg in self._rg(name)['volume_groups']]

    def create_vg(self, name, body):
        with self.store.transaction():
            rg = self._rg(name, op='create')
            number = body.get('volume_number')
            number = len(rg['volume_groups']) if number is None else _int(
                number, 'volume_number')
            if any(vg['volume_number'] == number
                   for vg in rg['volume_groups']):
                raise wire.exists('vlm_grp', 'Volume group %d of %s' % (
                    number, name))
            rg['volume_groups'].append({
                'volume_number': number,
                'props': _props(body, 'props', name),
                'flags': _list(body, 'flags', name),
                'uuid': str(uuid.uuid4())})
            self._put(RGS, rg)
        return [wire.rc('ok', wire.CREATED, 'Volume group %d of %s created.'
                        % (number, name), obj='vlm_grp', op='create',
                        refs={'RscGrp': name, 'VlmNr': str(number)})]

    # -- resource definitions -------------------------------------------------
    def _layer_data(self, rd):
        out = []
        for layer in rd['layers']:
            entry = {'type': layer}
            if layer == 'DRBD':
                entry['data'] = {'peer_slots': 7, 'al_stripes': 1,
                                 'al_stripe_size_kib': 32,
                                 'port': rd['port'],
                                 'transport_type': 'IP',
                                 'secret': rd['secret'], 'down': False}
            out.append(entry)
        return out

    def vd_view(self, rd, vd):
        layer_data = [{'type': layer} for layer in rd['layers']]
        for entry in layer_data:
            if entry['type'] == 'DRBD':
                entry['data'] = {'minor_number': vd['minor']}
        return {'volume_number': vd['volume_number'],
                'size_kib': vd['size_kib'], 'props': dict(vd['props']),
                'flags': list(vd['flags']), 'layer_data': layer_data,
                'uuid': vd['uuid']}

    def rd_view(self, rd, with_vds=False):
        view = {'name': rd['name'], 'props': dict(rd['props']),
                'flags': [], 'layer_data': self._layer_data(rd),
                'uuid': rd['uuid'], 'resource_group_name': rd['rg']}
        if rd.get('external_name'):
            view['external_name'] = rd['external_name']
        if with_vds:
            view['volume_definitions'] = [self.vd_view(rd, vd)
                                          for vd in rd['vds']]
        return view

    def resource_definitions(self, names=(), with_vds=False):
        return [self.rd_view(rd, with_vds) for rd in self._named(RDS, names)]

    def resource_definition(self, name):
        return self.rd_view(self._rd(name), with_vds=True)

    def _generated_name(self, external):
        try:
            candidate = 'LS_' + str(uuid.UUID(external)).upper()
        except ValueError:
            candidate = re.sub(r'[^A-Za-z0-9_-]', '_', external)[:48]
            if not candidate or not re.match(r'[A-Za-z_]', candidate):
                candidate = ('_' + candidate)[:48]
        if len(candidate) < 2 or self._find(RDS, candidate):
            candidate = 'LS_' + str(uuid.uuid4()).upper()
        return candidate

    def _new_rd(self, name, external, rg_name, props, layers, refs_op):
        if not name:
            if not external:
                raise wire.Failure(wire.INVLD_RSC_NAME, 'A resource '
                                   'definition needs a name or an external '
                                   'name.', obj='rsc_dfn', op='create')
            name = self._generated_name(str(external))
        _check_name(name, 'rsc_dfn', 'resource definition')
        if self._find(RDS, name):
            raise wire.exists('rsc_dfn', "Resource definition '%s'" % name,
                              refs={'RscDfn': name})
        rg = self._rg(rg_name or DEFAULT_RG, op='create')
        if layers is None:
            layers = rg['select_filter'].get('layer_stack') or ['DRBD',
                                                                'STORAGE']
        port = PORT_BASE + self.store.next_id('ls_port')
        rd = {'name': name, 'rg': rg['name'], 'props': dict(props),
              'layers': layers, 'uuid': str(uuid.uuid4()), 'port': port,
              'secret': uuid.uuid4().hex[:20], 'vds': [], 'resources': {},
              'snapshots': {}, 'clones': {}}
        if external:
            rd['external_name'] = str(external)
        return self._put(RDS, rd)

    def create_rd(self, body):
        spec = body.get('resource_definition')
        if not isinstance(spec, dict):
            raise wire.invalid('resource_definition must be an object')
        layers = None
        if spec.get('layer_data'):
            if not isinstance(spec['layer_data'], list):
                raise wire.invalid('layer_data must be a list')
            layers = _layers([e.get('type') if isinstance(e, dict) else e
                              for e in spec['layer_data']], 'layer_data')
        with self.store.transaction():
            rd = self._new_rd(spec.get('name'), spec.get('external_name'),
                              spec.get('resource_group_name'),
                              _props(spec, 'props', 'resource definition'),
                              layers, 'create')
        return [wire.rc('ok', wire.CREATED, "New resource definition '%s' "
                        "created." % rd['name'], obj='rsc_dfn', op='create',
                        refs={'RscDfn': rd['name']})]

    def modify_rd(self, name, body):
        with self.store.transaction():
            rd = self._rd(name, op='modify')
            _apply_props(rd['props'], body, name)
            for space in _list(body, 'delete_namespaces', name):
                for key in [k for k in rd['props']
                            if k.startswith(space.rstrip('/') + '/')]:
                    del rd['props'][key]
            if body.get('resource_group'):
                rd['rg'] = self._rg(body['resource_group'],
                                    op='modify')['name']
            if body.get('layer_stack'):
                if rd['resources']:
                    raise wire.Failure(wire.INVLD_LAYER_STACK, 'The layer '
                                       'stack of a deployed resource '
                                       'cannot change.', obj='rsc_dfn',
                                       op='modify')
                rd['layers'] = _layers(body['layer_stack'], name)
            self._put(RDS, rd)
        return [wire.rc('ok', wire.MODIFIED, "Resource definition '%s' "
                        "modified." % rd['name'], obj='rsc_dfn', op='modify',
                        refs={'RscDfn': rd['name']})]

    def delete_rd(self, name):
        with self.store.transaction():
            rd = self._find(RDS, name)
            if rd is None:
                return [wire.rc('warn', wire.WARN_NOT_FOUND, "Resource "
                                "definition '%s' not found." % name,
                                obj='rsc_dfn', op='delete',
                                refs={'RscDfn': name})]
            if rd['snapshots']:
                raise wire.Failure(wire.IN_USE, "Resource definition '%s' "
                                   "still has snapshots: %s" % (
                                       rd['name'],
                                       ', '.join(sorted(rd['snapshots']))),
                                   obj='rsc_dfn', op='delete',
                                   refs={'RscDfn': rd['name']})
            for vd in rd['vds']:
                self.engine.release(vd['_layer'])
            self.store.delete(RDS, rd['id'])
        return [wire.rc('ok', wire.DELETED, "Resource definition '%s' "
                        "deleted." % rd['name'], obj='rsc_dfn', op='delete',
                        refs={'RscDfn': rd['name']})]

    # -- volume definitions ---------------------------------------------------
    def _vd(self, rd, number):
        for vd in rd['vds']:
            if vd['volume_number'] == number:
                return vd
        raise wire.not_found('vlm_dfn', 'Volume definition %d of %s' % (
            number, rd['name']), refs={'RscDfn': rd['name'],
                                       'VlmNr': str(number)})

    def _add_vd(self, rd, number, size_kib, props=None, flags=(),
                layer=None):
        if number is None:
            number = max([vd['volume_number'] for vd in rd['vds']] + [-1]) + 1
        if any(vd['volume_number'] == number for vd in rd['vds']):
            raise wire.exists('vlm_dfn', 'Volume definition %d of %s' % (
                number, rd['name']))
        size_kib = _int(size_kib, 'size_kib')
        if size_kib <= 0 or size_kib > self.pool_kib * 1000:
            raise wire.Failure(wire.INVLD_VLM_SIZE, 'Invalid volume size '
                               '%d KiB' % size_kib, obj='vlm_dfn',
                               op='create')
        vd = {'volume_number': number, 'size_kib': size_kib,
              'props': dict(props or {}), 'flags': list(flags),
              'uuid': str(uuid.uuid4()),
              'minor': MINOR_BASE - 1 + self.store.next_id('ls_minor'),
              '_layer': layer if layer is not None
              else self.engine.new_layer(dedup=True)}
        rd['vds'].append(vd)
        return vd

    def volume_definitions(self, name):
        rd = self._rd(name)
        return [self.vd_view(rd, vd) for vd in rd['vds']]

    def volume_definition(self, name, number):
        rd = self._rd(name)
        return self.vd_view(rd, self._vd(rd, number))

    def create_vd(self, name, body):
        spec = body.get('volume_definition')
        if not isinstance(spec, dict):
            raise wire.invalid('volume_definition must be an object')
        with self.store.transaction():
            rd = self._rd(name, op='create')
            number = spec.get('volume_number')
            vd = self._add_vd(
                rd, None if number is None else _int(number,
                                                     'volume_number'),
                spec.get('size_kib'), _props(spec, 'props', name),
                _list(spec, 'flags', name))
            self._check_space(rd, None)
            self._put(RDS, rd)
        return [wire.rc('ok', wire.CREATED, 'New volume definition %d of '
                        "'%s' created." % (vd['volume_number'], rd['name']),
                        obj='vlm_dfn', op='create',
                        refs={'RscDfn': rd['name'],
                              'VlmNr': str(vd['volume_number'])})]

    def modify_vd(self, name, number, body):
        with self.store.transaction():
            rd = self._rd(name, op='modify')
            vd = self._vd(rd, number)
            if body.get('size_kib') is not None:
                size = _int(body['size_kib'], 'size_kib', 1)
                if size < vd['size_kib'] and rd['resources']:
                    raise wire.Failure(wire.INVLD_VLM_SIZE, 'Volume %d of %s '
                                       'is deployed and cannot shrink from '
                                       '%d to %d KiB' % (
                                           number, rd['name'],
                                           vd['size_kib'], size),
                                       obj='vlm_dfn', op='modify')
                vd['size_kib'] = size
                self._check_space(rd, None)
            _apply_props(vd['props'], body, name)
            self._put(RDS, rd)
        return [wire.rc('ok', wire.MODIFIED, 'Volume definition %d of %s '
                        'modified.' % (number, rd['name']), obj='vlm_dfn',
                        op='modify', refs={'RscDfn': rd['name'],
                                           'VlmNr': str(number)})]

    def delete_vd(self, name, number):
        with self.store.transaction():
            rd = self._find(RDS, name)
            vd = None if rd is None else next(
                (v for v in rd['vds'] if v['volume_number'] == number), None)
            if vd is None:
                return [wire.rc('warn', wire.WARN_NOT_FOUND, 'Volume '
                                'definition %d of %s not found.' % (
                                    number, name), obj='vlm_dfn',
                                op='delete')]
            rd['vds'].remove(vd)
            self.engine.release(vd['_layer'])
            self._put(RDS, rd)
        return [wire.rc('ok', wire.DELETED, 'Volume definition %d of %s '
                        'deleted.' % (number, rd['name']), obj='vlm_dfn',
                        op='delete')]

    # -- placement ------------------------------------------------------------
    def _check_space(self, rd, nodes):
        """Thick pools must hold every volume of their replicas."""
        need = sum(vd['size_kib'] for vd in rd['vds'])
        for node_name, rsc in rd['resources'].items():
            if nodes is not None and node_name not in nodes:
                continue
            pool = rsc.get('pool')
            if not pool:
                continue
            kind = self._node(node_name)['pools'][pool]['provider_kind']
            if PROVIDERS[kind][0]:
                continue
            used, _layers = self._pool_usage(node_name, pool)
            if used > self.pool_kib:
                raise wire.Failure(wire.NOT_ENOUGH_FREE_SPACE, 'Not enough '
                                   'free space in %s on %s for %d KiB' % (
                                       pool, node_name, need),
                                   obj='rsc', op='create')

    def _merged_filter(self, rd, override):
        merged = dict(self._rg(rd['rg'])['select_filter'])
        merged.update(override or {})
        return merged

    def _candidates(self, rd, flt):
        pools = flt.get('storage_pool_list') or []
        providers = flt.get('provider_list') or []
        nodes = [n.lower() for n in flt.get('node_name_list') or []]
        avoid = [r.lower() for r in flt.get('not_place_with_rsc') or []]
        regex = flt.get('not_place_with_rsc_regex')
        size = sum(vd['size_kib'] for vd in rd['vds'])
        out = []
        for node in self.store.all(NODES):
            name = node['name']
            if name in rd['resources'] or set(node['flags']) & {
                    'EVACUATE', 'EVICTED'} or str(node['props'].get(
                        'AutoplaceTarget', 'true')).lower() == 'false':
                continue
            if nodes and name.lower() not in nodes:
                continue
            others = [r['name'] for r in self.store.all(RDS)
                      if name in r['resources']]
            if any(o.lower() in avoid for o in others) or (
                    regex and any(re.match(regex, o) for o in others)):
                continue
            best = None
            for pool_name, pool in sorted(node['pools'].items()):
                kind = pool['provider_kind']
                if kind == 'DISKLESS' or (pools and pool_name not in pools) \
                        or (providers and kind not in providers):
                    continue
                if not pools and pool_name != DEFAULT_POOL and \
                        DEFAULT_POOL in node['pools']:
                    continue
                used, _layers = self._pool_usage(name, pool_name)
                free = self.pool_kib - used
                if not PROVIDERS[kind][0] and free < size:
                    continue
                if best is None or free > best[1]:
                    best = (pool_name, free)
            if best:
                out.append((name, best[0], best[1], node['props']))
        out.sort(key=lambda c: (-c[2], c[0]))
        return out

    def _pick(self, rd, flt, count):
        chosen = []
        placed = [self._node(n)['props'] for n, r in rd['resources'].items()
                  if not r['diskless']]
        for cand in self._candidates(rd, flt):
            props = cand[3]
            group = placed + [c[3] for c in chosen]
            if any(props.get(k) != g.get(k) for k in
                   flt.get('replicas_on_same') or [] for g in group):
                continue
            if any(props.get(k) is not None and props.get(k) == g.get(k)
                   for k in flt.get('replicas_on_different') or []
                   for g in group):
                continue
            chosen.append(cand)
            if len(chosen) == count:
                return chosen
        raise wire.Failure(wire.NOT_ENOUGH_NODES, 'Not enough available '
                           'nodes: %d more replicas of %s needed, %d '
                           'possible' % (count, rd['name'], len(chosen)),
                           obj='rsc', op='create',
                           refs={'RscDfn': rd['name']})

    def _add_resource(self, rd, node_name, pool, diskless, props=None):
        node = self._node(node_name)
        if diskless:
            pool = DISKLESS_POOL if DISKLESS_POOL in node['pools'] else None
        elif pool not in node['pools'] or \
                node['pools'][pool]['provider_kind'] == 'DISKLESS':
            raise wire.Failure(wire.NOT_FOUND['stor_pool'], "Storage pool "
                               "'%s' not found on node '%s'." % (
                                   pool, node_name), obj='stor_pool')
        ids = [r['node_id'] for r in rd['resources'].values()]
        rd['resources'][node['name']] = {
            'diskless': bool(diskless), 'pool': pool,
            'props': dict(props or {}), 'uuid': str(uuid.uuid4()),
            'node_id': max(ids + [-1]) + 1, 'created': _ts_ms()}
        return node['name']

    def _place(self, rd, flt):
        """Reach place_count diskful replicas; entries for the reply."""
        diskful = [n for n, r in rd['resources'].items() if not r['diskless']]
        want = flt.get('place_count', DEFAULT_PLACE_COUNT)
        if flt.get('additional_place_count'):
            want = len(diskful) + flt['additional_place_count']
        entries = []
        if want < len(diskful):
            raise wire.Failure(wire.INVLD_PLACE_COUNT, 'Resource %s has %d '
                               'replicas, more than the %d asked' % (
                                   rd['name'], len(diskful), want),
                               obj='rsc', op='create')
        if want == len(diskful):
            entries.append(wire.rc('info', wire.WARN_RSC_ALREADY_DEPLOYED,
                                   "Resource '%s' was already "
                                   "deployed on %d nodes" % (rd['name'],
                                                             want),
                                   obj='rsc', op='create',
                                   refs={'RscDfn': rd['name']}))
        else:
            for name, pool, _free, _props in self._pick(
                    rd, flt, want - len(diskful)):
                self._add_resource(rd, name, pool, False)
                entries.append(wire.rc('ok', wire.CREATED, "Resource '%s' "
                                       "created on node '%s'." % (
                                           rd['name'], name), obj='rsc',
                                       op='create',
                                       refs={'RscDfn': rd['name'],
                                             'Node': name}))
        if flt.get('diskless_on_remaining') and 'DRBD' in rd['layers']:
            for node in self.store.all(NODES):
                if node['name'] not in rd['resources']:
                    self._add_resource(rd, node['name'], None, True)
        self._check_space(rd, None)
        return entries

    def autoplace(self, name, body):
        body = body or {}
        with self.store.transaction():
            rd = self._rd(name, op='create')
            flt = self._filter(body.get('select_filter'), name)
            if body.get('diskless_on_remaining') is not None:
                flt['diskless_on_remaining'] = bool(
                    body['diskless_on_remaining'])
            if body.get('layer_list'):
                layers = _layers(body['layer_list'], name)
                if not rd['resources']:
                    rd['layers'] = layers
            entries = self._place(rd, self._merged_filter(rd, flt))
            self._put(RDS, rd)
        return entries

    def spawn(self, rg_name, body):
        name = body.get('resource_definition_name')
        sizes = body.get('volume_sizes') or []
        if not isinstance(sizes, list):
            raise wire.invalid('volume_sizes must be a list')
        with self.store.transaction():
            rg = self._rg(rg_name, op='create')
            rd = self._new_rd(name, body.get(
                'resource_definition_external_name'), rg['name'],
                _props(body, 'resource_definition_props', str(name)), None,
                'create')
            groups = rg['volume_groups']
            if groups and len(sizes) != len(groups) and not body.get(
                    'partial'):
                raise wire.invalid('%d volume sizes for %d volume groups of '
                                   '%s' % (len(sizes), len(groups), rg_name))
            for number, size in enumerate(sizes):
                self._add_vd(rd, number, size)
            entries = [wire.rc('ok', wire.CREATED, "Resource definition '%s' "
                               "created." % rd['name'], obj='rsc_dfn',
                               op='create', refs={'RscDfn': rd['name']})]
            if not body.get('definitions_only'):
                flt = self._filter(body.get('select_filter'), rg_name)
                entries += self._place(rd, self._merged_filter(rd, flt))
            self._put(RDS, rd)
        return entries

    def query_size_info(self, rg_name, body):
        rg = self._rg(rg_name)
        flt = dict(rg['select_filter'])
        flt.update(self._filter((body or {}).get('select_filter'), rg_name))
        count = flt.get('place_count', DEFAULT_PLACE_COUNT)
        probe = {'name': '', 'resources': {}, 'vds': [], 'layers': []}
        cands = self._candidates(probe, flt)
        thin = []
        for name, pool, _free, _props in cands:
            kind = self._node(name)['pools'][pool]['provider_kind']
            thin.append(PROVIDERS[kind][0])
        info = {'default_max_oversubscription_ratio': THIN_RATIO,
                'max_oversubscription_ratio': THIN_RATIO,
                'max_free_capacity_oversubscription_ratio': THIN_RATIO,
                'max_total_capacity_oversubscription_ratio': THIN_RATIO}
        if len(cands) < count:
            info.update(max_vlm_size_in_kib=0, available_size_in_kib=0,
                        capacity_in_kib=0, next_spawn_result=[])
        else:
            nth = cands[count - 1]
            ratio = THIN_RATIO if all(thin[:count]) else 1.0
            info.update(max_vlm_size_in_kib=int(nth[2] * ratio),
                        available_size_in_kib=nth[2],
                        capacity_in_kib=self.pool_kib,
                        next_spawn_result=[{'node_name': c[0],
                                            'stor_pool_name': c[1]}
                                           for c in cands[:count]])
        return {'space_info': info, 'reports': []}

    # -- resources ------------------------------------------------------------
    def _device_path(self, rd, vd, rsc_node):
        if 'DRBD' in rd['layers']:
            return '/dev/drbd%d' % vd['minor']
        pool = rd['resources'][rsc_node]['pool'] or DEFAULT_POOL
        return '/dev/vg-%s/%s_%05d' % (pool.lower(), rd['name'],
                                       vd['volume_number'])

    def resource_view(self, rd, node_name, with_volumes=True):
        rsc = rd['resources'][node_name]
        flags = list(DISKLESS_FLAGS) if rsc['diskless'] else []
        drbd = 'DRBD' in rd['layers']
        layer = {'type': rd['layers'][0], 'children': []}
        if drbd:
            layer['drbd'] = {'node_id': rsc['node_id'],
                             'peer_slots': 7, 'al_stripes': 1,
                             'al_size': 32, 'flags': [],
                             'drbd_volumes': [{
                                 'device_path': '/dev/drbd%d' % vd['minor'],
                                 'allocated_size_kib': vd['size_kib'],
                                 'usable_size_kib': vd['size_kib'],
                                 'disk_state': 'Diskless' if rsc['diskless']
                                 else 'UpToDate'} for vd in rd['vds']],
                             'promotion_score': 0, 'may_promote': False}
        view = {'name': rd['name'], 'node_name': node_name,
                'props': dict(rsc['props']), 'flags': flags,
                'layer_object': layer, 'state': {'in_use': False},
                'uuid': rsc['uuid'], 'create_timestamp': rsc['created']}
        if not with_volumes:
            return view
        volumes = []
        pool = rsc['pool']
        kind = 'DISKLESS' if rsc['diskless'] else self._node(node_name)[
            'pools'][pool]['provider_kind']
        for vd in rd['vds']:
            if rsc['diskless']:
                allocated = 0
            elif PROVIDERS[kind][0]:
                allocated = -(-self.engine.layer_written(vd['_layer']) //
                              1024)
            else:
                allocated = vd['size_kib']
            path = self._device_path(rd, vd, node_name)
            volumes.append({
                'volume_number': vd['volume_number'],
                'storage_pool_name': pool or DISKLESS_POOL,
                'provider_kind': kind, 'device_path': path,
                'allocated_size_kib': allocated,
                'usable_size_kib': vd['size_kib'],
                'props': {'Satellite/Device/Symlinks/0':
                          '/dev/drbd/by-res/%s/%d' % (rd['name'],
                                                      vd['volume_number'])
                          if drbd else path},
                'flags': [],
                'state': {'disk_state': 'Diskless' if rsc['diskless']
                          else 'UpToDate'},
                'layer_data_list': self._volume_layers(rd, vd, rsc, path,
                                                       allocated),
                'uuid': str(uuid.uuid5(uuid.NAMESPACE_OID, '%s/%s/%d' % (
                    rsc['uuid'], node_name, vd['volume_number']))),
                'reports': []})
        view['volumes'] = volumes
        return view

    @staticmethod
    def _volume_layers(rd, vd, rsc, path, allocated):
        state = 'Diskless' if rsc['diskless'] else 'UpToDate'
        out = []
        for layer in rd['layers']:
            data = {'device_path': path, 'allocated_size_kib': allocated,
                    'usable_size_kib': vd['size_kib'], 'disk_state': state}
            if layer == 'DRBD':
                data.update(drbd_volume_definition={
                    'resource_name_suffix': '',
                    'volume_number': vd['volume_number'],
                    'minor_number': vd['minor']},
                    device_path='/dev/drbd%d' % vd['minor'],
                    meta_disk='internal')
                if not rsc['diskless']:
                    data['backing_device'] = '/dev/vg-%s/%s_%05d' % (
                        (rsc['pool'] or '').lower(), rd['name'],
                        vd['volume_number'])
            elif layer == 'STORAGE' and 'DRBD' in rd['layers']:
                data['device_path'] = '/dev/vg-%s/%s_%05d' % (
                    (rsc['pool'] or 'diskless').lower(), rd['name'],
                    vd['volume_number'])
            out.append({'type': layer, 'data': data})
        return out

    def resources_view(self, nodes=(), rds=(), pools=()):
        nodes = [n.lower() for n in nodes]
        rds = [r.lower() for r in rds]
        out = []
        for rd in self.store.all(RDS):
            if rds and rd['name'].lower() not in rds:
                continue
            for node_name in sorted(rd['resources']):
                rsc = rd['resources'][node_name]
                if nodes and node_name.lower() not in nodes:
                    continue
                if pools and (rsc['pool'] or DISKLESS_POOL) not in pools:
                    continue
                out.append(self.resource_view(rd, node_name))
        return out

    def resource(self, rd_name, node_name):
        rd = self._rd(rd_name)
        node = self._node(node_name)['name']
        if node not in rd['resources']:
            raise wire.not_found('rsc', "Resource '%s' on node '%s'" % (
                rd_name, node_name))
        return self.resource_view(rd, node)

    def _default_pool(self, rd):
        pool = rd['props'].get('StorPoolName')
        if pool:
            return pool
        pools = self._rg(rd['rg'])['select_filter'].get('storage_pool_list')
        return pools[0] if pools else DEFAULT_POOL

    def create_resources(self, name, body):
        if isinstance(body, dict):
            body = [body]
        if not isinstance(body, list):
            raise wire.invalid('the body must be a list of resources')
        entries = []
        with self.store.transaction():
            rd = self._rd(name, op='create')
            for item in body:
                spec = item.get('resource') if isinstance(item, dict) \
                    else None
                if not isinstance(spec, dict):
                    raise wire.invalid('each entry needs a "resource" '
                                       'object')
                node = self._node(spec.get('node_name'))['name']
                if node in rd['resources']:
                    raise wire.exists('rsc', "Resource '%s' on node '%s'" % (
                        rd['name'], node))
                flags = _list(spec, 'flags', name)
                props = _props(spec, 'props', name)
                diskless = bool(set(flags) & set(DISKLESS_FLAGS)) or bool(
                    item.get('drbd_client'))
                if diskless and 'DRBD' not in rd['layers']:
                    raise wire.Failure(wire.INVLD_LAYER_STACK, 'A diskless '
                                       'resource needs the DRBD layer',
                                       obj='rsc', op='create')
                pool = props.pop('StorPoolName', None) or \
                    self._default_pool(rd)
                self._add_resource(rd, node, pool, diskless, props)
                if 'DISKLESS' in flags:
                    entries.append(wire.rc(
                        'warn', wire.WARN_DEPRECATED, 'The DISKLESS flag is '
                        'deprecated; DRBD_DISKLESS was used.', obj='rsc',
                        op='create'))
                entries.append(wire.rc('ok', wire.CREATED, "Resource '%s' "
                                       "created on node '%s'." % (
                                           rd['name'], node), obj='rsc',
                                       op='create',
                                       refs={'RscDfn': rd['name'],
                                             'Node': node}))
            self._check_space(rd, None)
            self._put(RDS, rd)
        return entries

    def make_available(self, name, node_name, body):
        body = body or {}
        with self.store.transaction():
            rd = self._rd(name, op='create')
            node = self._node(node_name)
            have = rd['resources'].get(node['name'])
            diskful = bool(body.get('diskful'))
            if have is not None:
                if diskful and have['diskless']:
                    have['diskless'] = False
                    have['pool'] = self._default_pool(rd)
                    self._check_space(rd, None)
                    self._put(RDS, rd)
                return [wire.rc('info', wire.WARN_RSC_ALREADY_DEPLOYED,
                                "Resource '%s' already available on "
                                "node '%s'." % (rd['name'], node['name']),
                                obj='rsc', op='create')]
            pool = self._default_pool(rd)
            diskless = not diskful and 'DRBD' in rd['layers']
            if not diskless and pool not in node['pools']:
                raise wire.Failure(wire.NOT_FOUND['stor_pool'], "Node '%s' "
                                   "has no storage pool '%s' for a diskful "
                                   "resource." % (node['name'], pool),
                                   obj='stor_pool')
            self._add_resource(rd, node['name'], pool, diskless)
            self._check_space(rd, None)
            self._put(RDS, rd)
        return [wire.rc('ok', wire.CREATED, "Resource '%s' made available "
                        "on node '%s'." % (rd['name'], node['name']),
                        obj='rsc', op='create',
                        refs={'RscDfn': rd['name'], 'Node': node['name']})]

    def _rsc(self, rd, node_name):
        """(node name, resource) of ``rd`` on a node, or not found."""
        node = self._node(node_name)['name']
        rsc = rd['resources'].get(node)
        if rsc is None:
            raise wire.not_found('rsc', "Resource '%s' on node '%s'" % (
                rd['name'], node_name))
        return node, rsc

    def modify_resource(self, name, node_name, body):
        with self.store.transaction():
            rd = self._rd(name, op='modify')
            node, rsc = self._rsc(rd, node_name)
            _apply_props(rsc['props'], body, name)
            self._put(RDS, rd)
        return [wire.rc('ok', wire.MODIFIED, "Resource '%s' on node '%s' "
                        "modified." % (name, node), obj='rsc', op='modify')]

    def toggle_disk(self, name, node_name, body):
        operation = str((body or {}).get('operation') or '')
        with self.store.transaction():
            rd = self._rd(name, op='modify')
            node, rsc = self._rsc(rd, node_name)
            if operation == 'INTO_DRBD_DISKFUL':
                pool = body.get('storage_pool') or self._default_pool(rd)
                kind = self._node(node)['pools'].get(pool, {}).get(
                    'provider_kind')
                if kind in (None, 'DISKLESS'):
                    raise wire.Failure(wire.NOT_FOUND['stor_pool'], "Node "
                                       "'%s' has no storage pool '%s' for a "
                                       "disk." % (node, pool),
                                       obj='stor_pool')
                rsc['diskless'] = False
                rsc['pool'] = pool
                source = body.get('migrate_from')
                if source:
                    source = self._node(source)['name']
                    if source not in rd['resources']:
                        raise wire.not_found('rsc', "Resource '%s' on node "
                                             "'%s'" % (name, source))
                    del rd['resources'][source]
            elif operation in ('INTO_DRBD_DISKLESS', 'INTO_DRBD_CLIENT'):
                rsc['diskless'] = True
                rsc['pool'] = DISKLESS_POOL
            else:
                raise wire.invalid('unknown toggle-disk operation %r' %
                                   operation)
            self._check_space(rd, None)
            self._put(RDS, rd)
        return [wire.rc('ok', wire.MODIFIED, "Resource '%s' on node '%s' "
                        "toggled." % (name, node), obj='rsc', op='modify')]

    def delete_resource(self, name, node_name):
        with self.store.transaction():
            rd = self._find(RDS, name)
            node = self._find(NODES, node_name)
            key = node['name'] if node else node_name
            if rd is None or key not in rd['resources']:
                return [wire.rc('warn', wire.WARN_NOT_FOUND, "Resource '%s' "
                                "on node '%s' not found." % (
                                    name, node_name), obj='rsc',
                                op='delete')]
            del rd['resources'][key]
            self._put(RDS, rd)
        return [wire.rc('ok', wire.DELETED, "Resource '%s' on node '%s' "
                        "deleted." % (rd['name'], key), obj='rsc',
                        op='delete', refs={'RscDfn': rd['name'],
                                           'Node': key})]

    # -- snapshots ------------------------------------------------------------
    def snapshot_view(self, rd, snap):
        return {'name': snap['name'], 'resource_name': rd['name'],
                'nodes': list(snap['nodes']), 'props': dict(snap['props']),
                'flags': ['SUCCESSFUL'],
                'volume_definitions': [{'volume_number': v['volume_number'],
                                        'size_kib': v['size_kib']}
                                       for v in snap['vds']],
                'uuid': snap['uuid'],
                'snapshots': [{'snapshot_name': snap['name'],
                               'node_name': n,
                               'create_timestamp': snap['created'],
                               'flags': ['SUCCESSFUL'],
                               'uuid': str(uuid.uuid5(uuid.NAMESPACE_OID,
                                                      snap['uuid'] + n))}
                              for n in snap['nodes']]}

    def snapshots(self, rds=(), nodes=()):
        rds = [r.lower() for r in rds]
        nodes = [n.lower() for n in nodes]
        out = []
        for rd in self.store.all(RDS):
            if rds and rd['name'].lower() not in rds:
                continue
            for snap in sorted(rd['snapshots'].values(),
                               key=lambda s: s['created']):
                if nodes and not any(n.lower() in nodes
                                     for n in snap['nodes']):
                    continue
                out.append(self.snapshot_view(rd, snap))
        return out

    def snapshot(self, rd_name, snap_name):
        rd = self._rd(rd_name)
        snap = rd['snapshots'].get(snap_name)
        if snap is None:
            raise wire.not_found('snapshot', "Snapshot '%s' of '%s'" % (
                snap_name, rd_name))
        return self.snapshot_view(rd, snap)

    def _take_snapshot(self, rd, name, nodes):
        _check_name(name, 'snapshot', 'snapshot')
        if name in rd['snapshots']:
            raise wire.exists('snapshot', "Snapshot '%s' of '%s'" % (
                name, rd['name']))
        diskful = {n: r for n, r in rd['resources'].items()
                   if not r['diskless']}
        if not diskful:
            raise wire.Failure(wire.NOT_ENOUGH_NODES, "Resource '%s' has no "
                               "diskful replica to snapshot." % rd['name'],
                               obj='snapshot', op='create')
        chosen = [self._node(n)['name'] for n in nodes] if nodes else sorted(
            diskful)
        for node_name in chosen:
            rsc = diskful.get(node_name)
            if rsc is None:
                raise wire.not_found('rsc', "Resource '%s' on node '%s'" % (
                    rd['name'], node_name))
            kind = self._node(node_name)['pools'][rsc['pool']][
                'provider_kind']
            if not PROVIDERS[kind][1]:
                raise wire.Failure(wire.SNAPSHOTS_NOT_SUPPORTED, "Storage "
                                   "pool '%s' (%s) on '%s' does not support "
                                   "snapshots." % (rsc['pool'], kind,
                                                   node_name),
                                   obj='snapshot', op='create')
        vds = []
        for vd in rd['vds']:
            frozen = vd['_layer']
            vd['_layer'] = self.engine.freeze(frozen)
            vds.append({'volume_number': vd['volume_number'],
                        'size_kib': vd['size_kib'], '_layer': frozen})
        rd['snapshots'][name] = {
            'name': name, 'nodes': chosen, 'props': {},
            'pools': {n: diskful[n]['pool'] for n in chosen},
            'uuid': str(uuid.uuid4()), 'created': _ts_ms(), 'vds': vds,
            'rd_props': dict(rd['props'])}
        return wire.rc('ok', wire.CREATED, "New snapshot '%s' of resource "
                       "'%s' successfully created." % (name, rd['name']),
                       obj='snapshot', op='create',
                       refs={'RscDfn': rd['name'], 'Snapshot': name})

    def create_snapshot(self, rd_name, body):
        with self.store.transaction():
            rd = self._rd(rd_name, op='create')
            entry = self._take_snapshot(rd, body.get('name'),
                                        _list(body, 'nodes', rd_name))
            self._put(RDS, rd)
        return [entry]

    def create_multi_snapshot(self, body):
        items = body.get('snapshots')
        if not isinstance(items, list) or not items:
            raise wire.invalid('snapshots must be a non-empty list')
        entries = []
        with self.store.transaction():
            for item in items:
                if not isinstance(item, dict):
                    raise wire.invalid('each snapshot must be an object')
                rd = self._rd(item.get('resource_name'), op='create')
                entries.append(self._take_snapshot(
                    rd, item.get('name'), _list(item, 'nodes', rd['name'])))
                self._put(RDS, rd)
        return entries

    def delete_snapshot(self, rd_name, snap_name):
        with self.store.transaction():
            rd = self._find(RDS, rd_name)
            snap = None if rd is None else rd['snapshots'].get(snap_name)
            if snap is None:
                return [wire.rc('warn', wire.WARN_NOT_FOUND, "Snapshot '%s' "
                                "of resource '%s' not found." % (
                                    snap_name, rd_name), obj='snapshot',
                                op='delete')]
            for vd in snap['vds']:
                self.engine.release(vd['_layer'])
            del rd['snapshots'][snap_name]
            self._put(RDS, rd)
        return [wire.rc('ok', wire.DELETED, "Snapshot '%s' of resource '%s' "
                        "deleted." % (snap_name, rd['name']),
                        obj='snapshot', op='delete')]

    def _snap(self, rd, name):
        snap = rd['snapshots'].get(name)
        if snap is None:
            raise wire.not_found('snapshot', "Snapshot '%s' of '%s'" % (
                name, rd['name']))
        return snap

    def restore_vds(self, rd_name, snap_name, body):
        with self.store.transaction():
            rd = self._rd(rd_name, op='create')
            snap = self._snap(rd, snap_name)
            target = self._rd(str(body.get('to_resource')), op='create')
            if target['vds']:
                raise wire.exists('vlm_dfn', "Volume definitions of '%s'" %
                                  target['name'])
            for sv in snap['vds']:
                self._add_vd(target, sv['volume_number'], sv['size_kib'],
                             layer=self.engine.new_layer(
                                 parent=sv['_layer'], dedup=True))
            self._put(RDS, target)
        return [wire.rc('ok', wire.CREATED, "Volume definitions of '%s' "
                        "restored from snapshot '%s'." % (
                            target['name'], snap_name), obj='vlm_dfn',
                        op='create', refs={'RscDfn': target['name']})]

    def restore_resources(self, rd_name, snap_name, body):
        with self.store.transaction():
            rd = self._rd(rd_name, op='create')
            snap = self._snap(rd, snap_name)
            target = self._rd(str(body.get('to_resource')), op='create')
            if not target['vds']:
                for sv in snap['vds']:
                    self._add_vd(target, sv['volume_number'], sv['size_kib'],
                                 layer=self.engine.new_layer(
                                     parent=sv['_layer'], dedup=True))
            nodes = _list(body, 'nodes', rd_name) or snap['nodes']
            renames = body.get('stor_pool_rename') or {}
            entries = []
            for node_name in nodes:
                node = self._node(node_name)['name']
                if node not in snap['nodes']:
                    raise wire.not_found('snapshot', "Snapshot '%s' on node "
                                         "'%s'" % (snap_name, node))
                pool = snap['pools'][node]
                self._add_resource(target, node, renames.get(pool, pool),
                                   False)
                entries.append(wire.rc('ok', wire.CREATED, "Resource '%s' "
                                       "restored on node '%s'." % (
                                           target['name'], node),
                                       obj='rsc', op='create'))
            self._check_space(target, None)
            self._put(RDS, target)
        return entries

    def rollback(self, rd_name, snap_name):
        with self.store.transaction():
            rd = self._rd(rd_name, op='modify')
            snap = self._snap(rd, snap_name)
            latest = max(rd['snapshots'].values(),
                         key=lambda s: s['created'])
            if latest['name'] != snap['name']:
                raise wire.Failure(wire.INVLD_SNAPSHOT_NAME, "Only the "
                                   "latest snapshot of '%s' (%s) can be "
                                   "rolled back to, not '%s'." % (
                                       rd['name'], latest['name'],
                                       snap_name), obj='snapshot',
                                   op='modify')
            for vd in rd['vds']:
                source = next((v for v in snap['vds'] if v['volume_number']
                               == vd['volume_number']), None)
                if source is None:
                    continue
                self.engine.release(vd['_layer'])
                vd['_layer'] = self.engine.new_layer(parent=source['_layer'],
                                                     dedup=True)
                vd['size_kib'] = source['size_kib']
            self._put(RDS, rd)
        return [wire.rc('ok', wire.MODIFIED, "Resource '%s' rolled back to "
                        "snapshot '%s'." % (rd['name'], snap_name),
                        obj='rsc_dfn', op='modify')]

    # -- clone ----------------------------------------------------------------
    def clone(self, src_name, body):
        with self.store.transaction():
            src = self._rd(src_name, op='create')
            props = dict(src['props'])
            props.update(_props(body, 'override_props', src_name))
            for key in _list(body, 'delete_props', src_name):
                props.pop(key, None)
            layers = _layers(body.get('layer_list'), src_name) or \
                list(src['layers'])
            rd = self._new_rd(body.get('name'), body.get('external_name'),
                              body.get('resource_group') or src['rg'],
                              props, layers, 'create')
            for vd in src['vds']:
                frozen = vd['_layer']
                vd['_layer'] = self.engine.freeze(frozen)
                copy = self.engine.new_layer(parent=frozen, dedup=True)
                self.engine.release(frozen)
                self._add_vd(rd, vd['volume_number'], vd['size_kib'],
                             dict(vd['props']), vd['flags'], layer=copy)
            for node_name, rsc in src['resources'].items():
                if not rsc['diskless']:
                    self._add_resource(rd, node_name, rsc['pool'], False)
            self._check_space(rd, None)
            src['clones'][rd['name']] = 'COMPLETE'
            self._put(RDS, src)
            self._put(RDS, rd)
        location = '/v1/resource-definitions/%s/clone/%s' % (
            src['name'], rd['name'])
        return {'location': location, 'source_name': src['name'],
                'clone_name': rd['name'],
                'messages': [wire.rc('ok', wire.CREATED, "Clone '%s' of "
                                     "'%s' started." % (rd['name'],
                                                        src['name']),
                                     obj='rsc_dfn', op='create',
                                     refs={'RscDfn': rd['name']})]}

    def clone_status(self, src_name, clone_name):
        src = self._rd(src_name)
        status = src['clones'].get(clone_name)
        if status is None:
            raise wire.not_found('rsc_dfn', "Clone '%s' of '%s'" % (
                clone_name, src_name))
        return {'status': status}

    def sync_status(self, name):
        self._rd(name)
        return {'synced_on_all': True}

    # -- data path ------------------------------------------------------------
    def usage(self):
        """(logical, physical) bytes of every LINSTOR volume."""
        layers = []
        for rd in self.store.all(RDS):
            layers += [vd['_layer'] for vd in rd['vds']]
            for snap in rd['snapshots'].values():
                layers += [v['_layer'] for v in snap['vds']]
        return self.engine.usage(layers)
