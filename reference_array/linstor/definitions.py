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

"""LINSTOR resource definitions and their volume definitions."""

import re
import uuid

from reference_array.linstor import fields
from reference_array.linstor import models
from reference_array.linstor import outcomes
from reference_array.linstor import records as rec
from reference_array.linstor import views


class Definitions(object):

    def __init__(self, records, engine, pool_kib, nodes):
        self.records = records
        self.engine = engine
        self.pool_kib = pool_kib
        self.nodes = nodes
        self.store = records.store

    # The wire forms (``views``): also what the store keeps of each.
    vd_view = staticmethod(views.vd_view)
    rd_view = staticmethod(views.rd_view)

    def _typed(self, name):
        return self.records.load(rec.RDS, name)

    def resource_definitions(self, names, with_vds=False, offset=0,
                             limit=None):
        """Views of the definitions named (any case), by upper-cased
        name, from ``offset``, at most ``limit``.
        """
        found = sorted(self.records.named(rec.RDS, names),
                       key=lambda rd: rd['name'].upper())
        return [self.rd_view(self.records.typed(rec.RDS, rd), with_vds)
                for rd in found[offset:][:limit]]

    def page_text(self, with_vds=False, offset=0, limit=None):
        """A page of all definitions, as JSON text: their stored views
        joined, none decoded.

        In the order LINSTOR lists them, by the upper-cased name: the
        offset is walked in the names' index.
        """
        return self.store.page_text(
            rec.RDS, 'name.folded', offset, limit,
            views.WITH_VDS if with_vds else views.PLAIN)

    def in_group(self, rg_name):
        """Names of the definitions of a resource group (any case)."""
        rg = self.records.load_found(rec.RGS, rg_name)
        return [] if rg is None else self.store.pluck(rec.RDS, 'rg', rg.name,
                                                      '$.name')

    def resource_definition(self, name):
        # LINSTOR 1.33's single-definition GET carries no volume
        # definitions, whatever ``with_volume_definitions`` says; the list
        # GET does when asked.
        return self.rd_view(self._typed(name))

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

    @staticmethod
    def drbd_port(body, op):
        """The ``drbd_port`` of a create or modify, range-checked.

        LINSTOR 1.33 checks the range only: the port is a preference per
        node, and two definitions may ask for the same one.
        """
        value = body.get('drbd_port')
        if value is None:
            return None
        port = fields.integer(value, 'drbd_port', -2**31)
        if not rec.PORT_MIN <= port <= rec.PORT_MAX:
            raise outcomes.refused(
                'out_of_range', 'TCP port number %d is out of range '
                '[%d - %d]' % (port, rec.PORT_MIN, rec.PORT_MAX),
                obj='rsc_dfn', op=op)
        return port

    @staticmethod
    def peer_slots(body):
        """``drbd_peer_slots``: LINSTOR 1.33 takes any number here."""
        value = body.get('drbd_peer_slots')
        return None if value is None else fields.integer(
            value, 'drbd_peer_slots', -2**31)

    def new_rd(self, name, external, rg_name, props, layers, refs_op,
               port=None, peer_slots=None):
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
        rg = self.records.load(rec.RGS, rg_name or rec.DEFAULT_RG,
                               op='create')
        if layers is None:
            layers = rg.select_filter.get('layer_stack') or [
                'DRBD', 'STORAGE'
            ]
        if port is None:
            port = rec.PORT_BASE + self.store.next_id('ls_port')
        return self.records.save(models.ResourceDefinition(
            name=name, rg=rg.name, props=dict(props), layers=layers,
            uuid=str(uuid.uuid4()), port=port, secret=uuid.uuid4().hex[:20],
            peer_slots=rec.DEFAULT_PEER_SLOTS if peer_slots is None
            else peer_slots,
            external_name=str(external) if external else None))

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
        port = self.drbd_port(body, 'create')
        with self.store.transaction():
            rd = self.new_rd(
                spec.get('name'), spec.get('external_name'),
                spec.get('resource_group_name'),
                fields.properties(spec, 'props', 'rsc_dfn'),
                layers, 'create', port, self.peer_slots(body))
        return [
            outcomes.report(
                'ok', 'created', "New resource definition '%s' "
                "created." % rd.name, obj='rsc_dfn', op='create',
                refs={'RscDfn': rd.name})
        ]

    def modify_rd(self, name, body):
        with self.store.transaction():
            rd = self.records.load(rec.RDS, name, op='modify')
            port = self.drbd_port(body, 'modify')
            if port is not None:
                rd.port = port
            slots = self.peer_slots(body)
            if slots is not None:
                rd.peer_slots = slots
            fields.apply_props(rd.props, body, 'rsc_dfn')
            for space in fields.strings(body, 'delete_namespaces', name):
                for key in [
                        k for k in rd.props
                        if k.startswith(space.rstrip('/') + '/')
                ]:
                    del rd.props[key]
            if body.get('resource_group'):
                rd.rg = self.records.load(rec.RGS, body['resource_group'],
                                          op='modify').name
            if body.get('layer_stack'):
                if rd.resources:
                    raise outcomes.refused(
                        'layer_stack', 'The layer '
                        'stack of a deployed resource '
                        'cannot change.', obj='rsc_dfn', op='modify')
                rd.layers = fields.layers(body['layer_stack'], name)
            self.records.save(rd)
        return [
            outcomes.report(
                'ok', 'modified', "Resource definition '%s' "
                "modified." % rd.name, obj='rsc_dfn', op='modify',
                refs={'RscDfn': rd.name})
        ]

    def delete_rd(self, name):
        with self.store.transaction():
            rd = self.records.load_found(rec.RDS, name)
            if rd is None:
                return [
                    outcomes.report(
                        'warn', 'not_found', "Resource "
                        "definition '%s' not found." % name, obj='rsc_dfn',
                        op='delete', refs={'RscDfn': name})
                ]
            if rd.snapshots:
                raise outcomes.refused(
                    'in_use', "Resource definition '%s' "
                    "still has snapshots: %s" %
                    (rd.name, ', '.join(sorted(rd.snapshots))),
                    obj='rsc_dfn', op='delete', refs={'RscDfn': rd.name})
            for vd in rd.vds:
                self.engine.release(vd.layer)
            self.records.delete(rec.RDS, rd)
        return [
            outcomes.report(
                'ok', 'deleted', "Resource definition '%s' "
                "deleted." % rd.name, obj='rsc_dfn', op='delete',
                refs={'RscDfn': rd.name})
        ]

    @staticmethod
    def _vd(rd, number):
        vd = rd.volume(number)
        if vd is not None:
            return vd
        raise outcomes.not_found(
            'vlm_dfn', 'Volume definition %d of %s' % (number, rd.name),
            refs={
                'RscDfn': rd.name,
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

    def _minor(self, rd, wanted):
        """A DRBD minor for a new volume: ``wanted``, or the next free one.

        LINSTOR refuses a minor out of range or in use.
        """
        def used(minor):
            return str(minor) in rd.minors or self.store.count(
                rec.RDS, 'minors.key', str(minor))
        if wanted is None:
            minor = rec.MINOR_BASE - 1 + self.store.next_id('ls_minor')
            while used(minor):
                minor = rec.MINOR_BASE - 1 + self.store.next_id('ls_minor')
            return minor
        minor = fields.integer(wanted, 'drbd_minor_number', -2**31)
        if not 0 <= minor <= rec.MINOR_NR_MAX:
            raise outcomes.refused(
                'minor_nr', "The specified minor number '%d' is invalid." %
                minor, obj='vlm_dfn', op='create',
                cause='Minor number %d is out of range [0 - %d]' % (
                    minor, rec.MINOR_NR_MAX))
        if used(minor):
            raise outcomes.refused(
                'minor_nr', "The specified minor number '%d' is invalid." %
                minor, obj='vlm_dfn', op='create',
                cause='Minor number %d is already in use' % minor)
        return minor

    def add_vd(self, rd, number, size_kib, props=None, flags=(), layer=None,
               minor=None):
        if number is None:
            number = max([vd.volume_number for vd in rd.vds] + [-1]) + 1
        if not 0 <= number <= rec.VOLUME_NR_MAX:
            raise outcomes.refused(
                'vlm_nr', "The specified volume number '%d' is invalid. "
                'Volume numbers have to be in range of 0 - %d.' % (
                    number, rec.VOLUME_NR_MAX), obj='vlm_dfn', op='create')
        if rd.volume(number) is not None:
            raise outcomes.exists(
                'vlm_dfn', 'Volume definition %d of %s' % (number, rd.name))
        size_kib = self._size(size_kib, 'create')
        vd = models.VolumeDefinition(
            volume_number=number, size_kib=size_kib, props=dict(props or {}),
            flags=list(flags), uuid=str(uuid.uuid4()),
            minor=self._minor(rd, minor),
            layer=layer if layer is not None else self.engine.new_layer(
                dedup=True))
        rd.add_volume(vd)
        return vd

    def volume_definitions(self, name):
        rd = self._typed(name)
        return [self.vd_view(rd, vd) for vd in rd.vds]

    def volume_definition(self, name, number):
        rd = self._typed(name)
        return self.vd_view(rd, self._vd(rd, number))

    def create_vd(self, name, body):
        spec = body.get('volume_definition')
        if not isinstance(spec, dict):
            raise outcomes.invalid('volume_definition must be an object')
        with self.store.transaction():
            rd = self.records.load(rec.RDS, name, op='create')
            number = spec.get('volume_number')
            vd = self.add_vd(
                rd, None if number is None else fields.integer(
                    number, 'volume_number', -2**31), spec.get('size_kib'),
                fields.properties(spec, 'props', 'vlm_dfn'),
                fields.strings(spec, 'flags', name),
                minor=body.get('drbd_minor_number'))
            self.nodes.store_placed(rd)
        return [
            outcomes.report(
                'ok', 'created', 'New volume definition %d of '
                "'%s' created." % (vd.volume_number, rd.name),
                obj='vlm_dfn', op='create', refs={
                    'RscDfn': rd.name,
                    'VlmNr': str(vd.volume_number)
                })
        ]

    def modify_vd(self, name, number, body):
        failed = []
        with self.store.transaction():
            rd = self.records.load(rec.RDS, name, op='modify')
            vd = self._vd(rd, number)
            if body.get('size_kib') is not None:
                size = fields.integer(body['size_kib'], 'size_kib', 1)
                if size > rec.INT64_MAX:
                    # Not a size LINSTOR's controller can hold at all.
                    raise outcomes.refused(
                        'volume_size', 'Invalid volume size %d KiB' % size,
                        obj='vlm_dfn', op='modify')
                failed = self._resize(rd, vd, size)
            fields.apply_props(vd.props, body, 'vlm_dfn')
            self.records.save(rd)
        return [
            outcomes.report(
                'ok', 'modified', 'Volume definition %d of %s '
                'modified.' % (number, rd.name), obj='vlm_dfn', op='modify',
                refs={
                    'RscDfn': rd.name,
                    'VlmNr': str(number)
                })
        ] + failed

    def _resize(self, rd, vd, size):
        """Resize ``vd``; the reports of satellites that failed to.

        As LINSTOR 1.33: thick pools must hold the growth (else nothing
        changes); thin pools are not held to their oversubscription
        limit. The controller's part always takes effect, so a size no
        satellite can make stays on the definition, flagged RESIZE, and
        its replicas keep their old size.
        """
        number = vd.volume_number
        old = vd.size_kib
        if size < old and rd.resources:
            raise outcomes.refused(
                'volume_size', 'Volume %d of %s is deployed and cannot '
                'shrink from %d to %d KiB' % (number, rd.name, old, size),
                obj='vlm_dfn', op='modify')
        vd.size_kib = size
        if size > old:
            # Stored before the rest of the resize: the transaction undoes
            # it on a refusal.
            self.nodes.store_placed(rd, grown_kib=size - old)
        diskful = rd.diskful()
        # Beyond 1000 pools no device is made either (see _size).
        if size <= min(rec.SATELLITE_MAX_KIB, self.pool_kib * 1000) or \
                not diskful:
            vd.resized()
            return []
        vd.resize_pending(old)
        return [outcomes.report(
            'error', 'failed', '(%s) Failed to resize volume %d of '
            "resource '%s' to %d KiB: no device of that size can be "
            'made' % (node, number, rd.name, size),
            obj='vlm_dfn', op='modify',
            refs={'RscDfn': rd.name, 'VlmNr': str(number)})
            for node in diskful]

    def delete_vd(self, name, number):
        with self.store.transaction():
            rd = self.records.load_found(rec.RDS, name)
            vd = None if rd is None else rd.volume(number)
            if vd is None:
                return [
                    outcomes.report(
                        'warn', 'not_found', 'Volume '
                        'definition %d of %s not found.' % (number, name),
                        obj='vlm_dfn', op='delete')
                ]
            rd.remove_volume(vd)
            self.engine.release(vd.layer)
            self.records.save(rd)
        return [
            outcomes.report(
                'ok', 'deleted', 'Volume definition %d of %s '
                'deleted.' % (number, rd.name), obj='vlm_dfn', op='delete')
        ]
