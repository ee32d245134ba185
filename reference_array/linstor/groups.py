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

"""LINSTOR resource groups, their volume groups and select filters."""

import re
import uuid

from reference_array.linstor import fields
from reference_array.linstor import models
from reference_array.linstor import outcomes
from reference_array.linstor import records as rec


class Groups(object):

    def __init__(self, records):
        self.records = records
        self.store = records.store

    def select_filter(self, value, where, check_pools=True):
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise outcomes.invalid('%s: select_filter must be an object' %
                                   where)
        out = {}
        for key, val in value.items():
            if val is None:
                continue
            if key in ('place_count', 'additional_place_count'):
                out[key] = fields.integer(val, key,
                                          0 if key.startswith('add') else 1)
                if key == 'place_count' and out[key] > 16:
                    raise outcomes.refused(
                        'place_count', 'place_count %d is above 16' % out[key])
            elif key == 'storage_pool':
                out['storage_pool_list'] = [str(val)]
            elif key in ('storage_pool_list', 'storage_pool_diskless_list',
                         'node_name_list', 'not_place_with_rsc',
                         'replicas_on_same', 'replicas_on_different',
                         'provider_list'):
                out[key] = fields.strings(value, key, where)
            elif key == 'layer_stack':
                out[key] = fields.layers(val, where)
            elif key == 'not_place_with_rsc_regex':
                try:
                    re.compile(str(val))
                except re.error:
                    raise outcomes.invalid('%s: bad regex %r' % (where, val))
                out[key] = str(val)
            elif key == 'diskless_on_remaining':
                out[key] = bool(val)
            else:
                out[key] = val
        for pool in out.get('storage_pool_list', []) if check_pools else ():
            if not self.store.count(rec.NODES, 'pools.key', pool):
                raise outcomes.refused('no_pool',
                                       "Storage pool '%s' not found." % pool,
                                       obj='stor_pool')
        return out

    @staticmethod
    def rg_view(rg):
        """The wire form of a ``models.ResourceGroup``."""
        return {
            'name': rg.name,
            'description': rg.description,
            'props': dict(rg.props),
            'select_filter': dict(rg.select_filter),
            'uuid': rg.uuid
        }

    def resource_groups(self, names=()):
        return [self.rg_view(rg)
                for rg in self.records.typed_named(rec.RGS, names)]

    def resource_group(self, name):
        return self.rg_view(self.records.load(rec.RGS, name))

    @staticmethod
    def _peer_slots(body):
        """LINSTOR checks a group's peer slots against DRBD's 31 peers."""
        value = body.get('peer_slots')
        if value is None:
            return None
        slots = fields.integer(value, 'peer_slots', -2**31)
        if not 0 <= slots <= rec.DRBD_MAX_PEERS:
            # LINSTOR answers with a bare exception, no object or op.
            raise outcomes.refused(
                'out_of_range', 'Exception thrown.', details='given '
                'peer_slots is out of range: %d. Allowed: 0 - %d' % (
                    slots, rec.DRBD_MAX_PEERS))
        return slots

    def create_rg(self, body):
        name = fields.check_name(body.get('name'), 'rsc_grp', 'resource group')
        slots = self._peer_slots(body)
        with self.store.transaction():
            if self.records.find(rec.RGS, name):
                raise outcomes.exists('rsc_grp', "Resource group '%s'" % name,
                                      refs={'RscGrp': name})
            # LINSTOR 1.33 ignores the props of a group create: they are
            # set with a modify.
            self.records.save(models.ResourceGroup(
                name=name, description=str(body.get('description') or ''),
                peer_slots=slots, select_filter=self.select_filter(
                    body.get('select_filter'), name),
                uuid=str(uuid.uuid4())))
        return [
            outcomes.report('ok', 'created', "New resource group '%s' "
                            "created." % name, obj='rsc_grp', op='create',
                            refs={'RscGrp': name})
        ]

    def modify_rg(self, name, body):
        with self.store.transaction():
            rg = self.records.load(rec.RGS, name, op='modify')
            slots = self._peer_slots(body)
            if slots is not None:
                rg.peer_slots = slots
            if body.get('description') is not None:
                rg.description = str(body['description'])
            fields.apply_props(rg.props, body, 'rsc_grp')
            if body.get('select_filter') is not None:
                rg.select_filter.update(
                    self.select_filter(body['select_filter'], name))
            self.records.save(rg)
        return [
            outcomes.report('ok', 'modified', "Resource group '%s' "
                            "modified." % name, obj='rsc_grp', op='modify',
                            refs={'RscGrp': name})
        ]

    def delete_rg(self, name):
        with self.store.transaction():
            rg = self.records.load_found(rec.RGS, name)
            if rg is None:
                return [
                    outcomes.report('warn', 'not_found', "Resource group "
                                    "'%s' not found." % name, obj='rsc_grp',
                                    op='delete', refs={'RscGrp': name})
                ]
            if name.lower() == rec.DEFAULT_RG.lower():
                raise outcomes.refused(
                    'in_use', 'The default resource group '
                    'cannot be deleted.', obj='rsc_grp', op='delete')
            users = self.store.pluck(rec.RDS, 'rg', rg.name, '$.name')
            if users:
                raise outcomes.refused(
                    'in_use', "Resource group '%s' still "
                    "has resource definitions: %s" % (name, ', '.join(users)),
                    obj='rsc_grp', op='delete')
            self.records.delete(rec.RGS, rg)
        return [
            outcomes.report('ok', 'deleted',
                            "Resource group '%s' deleted." % name,
                            obj='rsc_grp', op='delete', refs={'RscGrp': name})
        ]

    def volume_groups(self, name):
        rg = self.records.load(rec.RGS, name)
        return [vg.to_row() for vg in rg.volume_groups]

    def create_vg(self, name, body):
        with self.store.transaction():
            rg = self.records.load(rec.RGS, name, op='create')
            number = body.get('volume_number')
            number = len(
                rg.volume_groups) if number is None else fields.integer(
                    number, 'volume_number')
            if any(vg.volume_number == number for vg in rg.volume_groups):
                raise outcomes.exists('vlm_grp',
                                      'Volume group %d of %s' % (number, name))
            rg.volume_groups.append(models.VolumeGroup(
                volume_number=number,
                props=fields.properties(body, 'props', 'vlm_grp'),
                flags=fields.strings(body, 'flags', name),
                uuid=str(uuid.uuid4())))
            self.records.save(rg)
        return [
            outcomes.report('ok', 'created',
                            'Volume group %d of %s created.' % (number, name),
                            obj='vlm_grp', op='create', refs={
                                'RscGrp': name,
                                'VlmNr': str(number)
                            })
        ]
