"""LINSTOR resource definitions and their volume definitions."""

import re
import uuid

from reference_array.linstor import fields
from reference_array.linstor import outcomes
from reference_array.linstor import records as rec


class Definitions(object):

    def __init__(self, records, engine, pool_kib, nodes):
        self.records = records
        self.engine = engine
        self.pool_kib = pool_kib
        self.nodes = nodes
        self.store = records.store

    def _layer_data(self, rd):
        out = []
        for layer in rd['layers']:
            entry = {'type': layer}
            if layer == 'DRBD':
                entry['data'] = {
                    'peer_slots': 7,
                    'al_stripes': 1,
                    'al_stripe_size_kib': 32,
                    'port': rd['port'],
                    'transport_type': 'IP',
                    'secret': rd['secret'],
                    'down': False
                }
            out.append(entry)
        return out

    def vd_view(self, rd, vd):
        layer_data = [{'type': layer} for layer in rd['layers']]
        for entry in layer_data:
            if entry['type'] == 'DRBD':
                entry['data'] = {'minor_number': vd['minor']}
        return {
            'volume_number': vd['volume_number'],
            'size_kib': vd['size_kib'],
            'props': dict(vd['props']),
            'flags': list(vd['flags']),
            'layer_data': layer_data,
            'uuid': vd['uuid']
        }

    def rd_view(self, rd, with_vds=False):
        view = {
            'name': rd['name'],
            'props': dict(rd['props']),
            'flags': [],
            'layer_data': self._layer_data(rd),
            'uuid': rd['uuid'],
            'resource_group_name': rd['rg']
        }
        if rd.get('external_name'):
            view['external_name'] = rd['external_name']
        if with_vds:
            view['volume_definitions'] = [
                self.vd_view(rd, vd) for vd in rd['vds']
            ]
        return view

    def resource_definitions(self, names=(), with_vds=False):
        return [
            self.rd_view(rd, with_vds)
            for rd in self.records.named(rec.RDS, names)
        ]

    def resource_definition(self, name):
        return self.rd_view(self.records.rd(name), with_vds=True)

    def _generated_name(self, external):
        try:
            candidate = 'LS_' + str(uuid.UUID(external)).upper()
        except ValueError:
            candidate = re.sub(r'[^A-Za-z0-9_-]', '_', external)[:48]
            if not candidate or not re.match(r'[A-Za-z_]', candidate):
                candidate = ('_' + candidate)[:48]
        if len(candidate) < 2 or self.records.find(rec.RDS, candidate):
            candidate = 'LS_' + str(uuid.uuid4()).upper()
        return candidate

    def new_rd(self, name, external, rg_name, props, layers, refs_op):
        if not name:
            if not external:
                raise outcomes.refused(
                    'rsc_name', 'A resource '
                    'definition needs a name or an external '
                    'name.', obj='rsc_dfn', op='create')
            name = self._generated_name(str(external))
        fields.check_name(name, 'rsc_dfn', 'resource definition')
        if self.records.find(rec.RDS, name):
            raise outcomes.exists('rsc_dfn', "Resource definition '%s'" % name,
                                  refs={'RscDfn': name})
        rg = self.records.rg(rg_name or rec.DEFAULT_RG, op='create')
        if layers is None:
            layers = rg['select_filter'].get('layer_stack') or [
                'DRBD', 'STORAGE'
            ]
        port = rec.PORT_BASE + self.store.next_id('ls_port')
        rd = {
            'name': name,
            'rg': rg['name'],
            'props': dict(props),
            'layers': layers,
            'uuid': str(uuid.uuid4()),
            'port': port,
            'secret': uuid.uuid4().hex[:20],
            'vds': [],
            'resources': {},
            'snapshots': {},
            'clones': {}
        }
        if external:
            rd['external_name'] = str(external)
        return self.records.put(rec.RDS, rd)

    def create_rd(self, body):
        spec = body.get('resource_definition')
        if not isinstance(spec, dict):
            raise outcomes.invalid('resource_definition must be an object')
        layers = None
        if spec.get('layer_data'):
            if not isinstance(spec['layer_data'], list):
                raise outcomes.invalid('layer_data must be a list')
            layers = fields.layers([
                e.get('type') if isinstance(e, dict) else e
                for e in spec['layer_data']
            ], 'layer_data')
        with self.store.transaction():
            rd = self.new_rd(
                spec.get('name'), spec.get('external_name'),
                spec.get('resource_group_name'),
                fields.properties(spec, 'props', 'resource definition'),
                layers, 'create')
        return [
            outcomes.report(
                'ok', 'created', "New resource definition '%s' "
                "created." % rd['name'], obj='rsc_dfn', op='create',
                refs={'RscDfn': rd['name']})
        ]

    def modify_rd(self, name, body):
        with self.store.transaction():
            rd = self.records.rd(name, op='modify')
            fields.apply_props(rd['props'], body, name)
            for space in fields.strings(body, 'delete_namespaces', name):
                for key in [
                        k for k in rd['props']
                        if k.startswith(space.rstrip('/') + '/')
                ]:
                    del rd['props'][key]
            if body.get('resource_group'):
                rd['rg'] = self.records.rg(body['resource_group'],
                                           op='modify')['name']
            if body.get('layer_stack'):
                if rd['resources']:
                    raise outcomes.refused(
                        'layer_stack', 'The layer '
                        'stack of a deployed resource '
                        'cannot change.', obj='rsc_dfn', op='modify')
                rd['layers'] = fields.layers(body['layer_stack'], name)
            self.records.put(rec.RDS, rd)
        return [
            outcomes.report(
                'ok', 'modified', "Resource definition '%s' "
                "modified." % rd['name'], obj='rsc_dfn', op='modify',
                refs={'RscDfn': rd['name']})
        ]

    def delete_rd(self, name):
        with self.store.transaction():
            rd = self.records.find(rec.RDS, name)
            if rd is None:
                return [
                    outcomes.report(
                        'warn', 'not_found', "Resource "
                        "definition '%s' not found." % name, obj='rsc_dfn',
                        op='delete', refs={'RscDfn': name})
                ]
            if rd['snapshots']:
                raise outcomes.refused(
                    'in_use', "Resource definition '%s' "
                    "still has snapshots: %s" %
                    (rd['name'], ', '.join(sorted(rd['snapshots']))),
                    obj='rsc_dfn', op='delete', refs={'RscDfn': rd['name']})
            for vd in rd['vds']:
                self.engine.release(vd['_layer'])
            self.store.delete(rec.RDS, rd['id'])
        return [
            outcomes.report(
                'ok', 'deleted', "Resource definition '%s' "
                "deleted." % rd['name'], obj='rsc_dfn', op='delete',
                refs={'RscDfn': rd['name']})
        ]

    def _vd(self, rd, number):
        for vd in rd['vds']:
            if vd['volume_number'] == number:
                return vd
        raise outcomes.not_found(
            'vlm_dfn', 'Volume definition %d of %s' % (number, rd['name']),
            refs={
                'RscDfn': rd['name'],
                'VlmNr': str(number)
            })

    def _size(self, value, op):
        """A volume size: positive, and at most 1000 pools (thin), so
        that no device size overflows what SCSI reports.
        """
        size_kib = fields.integer(value, 'size_kib')
        if size_kib <= 0 or size_kib > self.pool_kib * 1000:
            raise outcomes.refused('volume_size', 'Invalid volume size '
                                   '%d KiB' % size_kib, obj='vlm_dfn',
                                   op=op)
        return size_kib

    def add_vd(self, rd, number, size_kib, props=None, flags=(), layer=None):
        if number is None:
            number = max([vd['volume_number'] for vd in rd['vds']] + [-1]) + 1
        if any(vd['volume_number'] == number for vd in rd['vds']):
            raise outcomes.exists(
                'vlm_dfn', 'Volume definition %d of %s' % (number, rd['name']))
        size_kib = self._size(size_kib, 'create')
        vd = {
            'volume_number': number,
            'size_kib': size_kib,
            'props': dict(props or {}),
            'flags': list(flags),
            'uuid': str(uuid.uuid4()),
            'minor': rec.MINOR_BASE - 1 + self.store.next_id('ls_minor'),
            '_layer': layer if layer is not None else self.engine.new_layer(
                dedup=True)
        }
        rd['vds'].append(vd)
        return vd

    def volume_definitions(self, name):
        rd = self.records.rd(name)
        return [self.vd_view(rd, vd) for vd in rd['vds']]

    def volume_definition(self, name, number):
        rd = self.records.rd(name)
        return self.vd_view(rd, self._vd(rd, number))

    def create_vd(self, name, body):
        spec = body.get('volume_definition')
        if not isinstance(spec, dict):
            raise outcomes.invalid('volume_definition must be an object')
        with self.store.transaction():
            rd = self.records.rd(name, op='create')
            number = spec.get('volume_number')
            vd = self.add_vd(
                rd, None if number is None else fields.integer(
                    number, 'volume_number'), spec.get('size_kib'),
                fields.properties(spec, 'props', name),
                fields.strings(spec, 'flags', name))
            self.nodes.check_space(rd, None)
            self.records.put(rec.RDS, rd)
        return [
            outcomes.report(
                'ok', 'created', 'New volume definition %d of '
                "'%s' created." % (vd['volume_number'], rd['name']),
                obj='vlm_dfn', op='create', refs={
                    'RscDfn': rd['name'],
                    'VlmNr': str(vd['volume_number'])
                })
        ]

    def modify_vd(self, name, number, body):
        with self.store.transaction():
            rd = self.records.rd(name, op='modify')
            vd = self._vd(rd, number)
            if body.get('size_kib') is not None:
                size = self._size(body['size_kib'], 'modify')
                if size < vd['size_kib'] and rd['resources']:
                    raise outcomes.refused(
                        'volume_size', 'Volume %d of %s '
                        'is deployed and cannot shrink from '
                        '%d to %d KiB' %
                        (number, rd['name'], vd['size_kib'], size),
                        obj='vlm_dfn', op='modify')
                vd['size_kib'] = size
                self.nodes.check_space(rd, None)
            fields.apply_props(vd['props'], body, name)
            self.records.put(rec.RDS, rd)
        return [
            outcomes.report(
                'ok', 'modified', 'Volume definition %d of %s '
                'modified.' % (number, rd['name']), obj='vlm_dfn', op='modify',
                refs={
                    'RscDfn': rd['name'],
                    'VlmNr': str(number)
                })
        ]

    def delete_vd(self, name, number):
        with self.store.transaction():
            rd = self.records.find(rec.RDS, name)
            vd = None if rd is None else next(
                (v for v in rd['vds'] if v['volume_number'] == number), None)
            if vd is None:
                return [
                    outcomes.report(
                        'warn', 'not_found', 'Volume '
                        'definition %d of %s not found.' % (number, name),
                        obj='vlm_dfn', op='delete')
                ]
            rd['vds'].remove(vd)
            self.engine.release(vd['_layer'])
            self.records.put(rec.RDS, rd)
        return [
            outcomes.report(
                'ok', 'deleted', 'Volume definition %d of %s '
                'deleted.' % (number, rd['name']), obj='vlm_dfn', op='delete')
        ]
