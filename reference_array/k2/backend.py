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

"""The K2 backend: every K2 object read, written and presented.

Reads come from the store (or, for system state, capacity and stats,
from ``system.System``); writes go to the writer that owns the resource
(volumes, hosts, replication objects), each inside one store
transaction. Errors are ``core.errors``; the api maps them to the wire.
"""

import collections

from reference_array.core import errors
from reference_array.k2 import fields
from reference_array.k2 import refs
from reference_array.k2 import system as system_mod

# How a writer handles one resource. ``update_in_transaction``: False
# when the update takes locks of its own and calls peers, so it must not
# hold the store's lock throughout.
Operations = collections.namedtuple(
    'Operations', 'create update delete update_in_transaction')


def operations(create, update=None, delete=None, update_in_transaction=True):
    return Operations(create, update, delete, update_in_transaction)


class K2Backend(object):

    def __init__(self, records, engine, system, writers):
        """Serve the K2 objects of one array.

        ``records``: records.Records over the array's store; ``system``:
        its system.System; ``writers``: objects with ``writable``
        (resource -> {'create': fields, 'update': fields}) and
        ``handlers()`` (resource -> Operations).
        """
        self.records = records
        self.store = records.store
        self.engine = engine
        self.system = system
        self._writable = {}
        self._operations = {}
        for writer in writers:
            for resource, ops in writer.handlers().items():
                self._writable[resource] = writer.writable[resource]
                self._operations[resource] = ops

    # -- reads ---------------------------------------------------------------
    def present(self, resource, obj):
        """The object as clients see it: derived fields, no internals."""
        out = fields.public(obj)
        if resource == 'volumes':
            out['logical_capacity'] = (self.engine.layer_written(
                obj['_layer']) // 1024 if obj['_layer'] else 0)
        elif resource == 'volume_groups':
            ref = refs.path('volume_groups', obj['id'])
            members = self.store.find('volumes', 'volume_group.ref', ref)
            out['volumes_count'] = len(members)
            out['volumes_provisioned_capacity'] = sum(
                v['size'] for v in members)
            out['logical_capacity'] = sum(
                self.engine.layer_written(v['_layer'])
                for v in members if v['_layer']) // 1024
            out['snapshots_count'] = self.store.count(
                'snapshots', 'volume_group.ref', ref)
        return out

    def list(self, resource, where=None):
        """Objects of ``resource``; ``where``: (field, value) they all
        have, answered from the store's keys (a filter, not a scan).
        """
        if resource in system_mod.COMPUTED:
            return self.system.computed(resource)
        if where is not None:
            found = self.store.find(resource, *where)
        else:
            found = self.store.all(resource)
        return [self.present(resource, o) for o in found]

    def get(self, resource, obj_id):
        if resource in system_mod.COMPUTED:
            obj = next((o for o in self.system.computed(resource)
                        if o['id'] == obj_id), None)
        else:
            obj = self.store.get(resource, obj_id)
            obj = obj and self.present(resource, obj)
        if obj is None:
            raise errors.NotFound('%s %d does not exist' % (resource,
                                                            obj_id))
        return obj

    # -- writes --------------------------------------------------------------
    def _ops(self, resource, action):
        ops = self._operations.get(resource)
        if ops is None or (action == 'update' and
                           not self._writable[resource]['update']):
            verb = {'create': 'creating', 'update': 'changing',
                    'delete': 'deleting'}[action]
            raise errors.NotAllowed('%s %s is not supported' % (verb,
                                                                resource))
        return ops

    def create(self, resource, body):
        ops = self._ops(resource, 'create')
        fields.check_fields(self._writable, resource, body, 'create')
        with self.store.transaction():
            obj = ops.create(body)
        return self.present(resource, obj)

    def update(self, resource, obj_id, body):
        ops = self._ops(resource, 'update')
        fields.check_fields(self._writable, resource, body, 'update')
        if ops.update_in_transaction:
            with self.store.transaction():
                obj = ops.update(self.records.existing(resource, obj_id), body)
        else:
            obj = ops.update(self.records.existing(resource, obj_id), body)
        return self.present(resource, obj)

    def delete(self, resource, obj_id):
        ops = self._ops(resource, 'delete')
        with self.store.transaction():
            obj = self.records.existing(resource, obj_id)
            if ops.delete is not None:
                ops.delete(obj)
            self.store.delete(resource, obj_id)
