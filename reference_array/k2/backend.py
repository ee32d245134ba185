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
import logging

from reference_array.core import errors
from reference_array.core import query as query_mod
from reference_array.k2 import fields
from reference_array.k2 import models
from reference_array.k2 import schema
from reference_array.k2 import system as system_mod

LOG = logging.getLogger(__name__)

# How a writer handles one resource. ``update_in_transaction``: False
# when the update takes locks of its own and calls peers, so it must not
# hold the store's lock throughout.
Operations = collections.namedtuple(
    'Operations', 'create update delete update_in_transaction')


def operations(create, update=None, delete=None, update_in_transaction=True):
    return Operations(create, update, delete, update_in_transaction)


def _on_derived(model, path):
    """Whether ``path`` is a field computed when presented."""
    return path[0] in dict(model.DERIVED)


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
    def present(self, objs):
        """The objects (of one kind) as clients see them, with their
        derived fields, in a fixed number of queries whatever their
        number.
        """
        wires = [obj.to_wire() for obj in objs]
        if objs:
            model = type(objs[0])
            names = [name for name, _type in model.DERIVED]
            for wire, values in zip(wires, self._derived(
                    model, [o.id for o in objs],
                    [getattr(o, 'layer', None) for o in objs])):
                wire.update(zip(names, values))
        return wires

    def page_text(self, resource, q):
        """(total, JSON text of the page) of ``resource`` that ``q`` asks
        for, or None: a page of a whole stored kind in id order is its
        stored wire views with the derived fields added, nothing decoded
        (the same objects ``present`` gives); any other query, or a
        store that keeps no views or count of the kind, is not.
        """
        model = schema.model(resource)
        if resource in system_mod.COMPUTED or q.conditions or (
                q.sort and q.sort.path != ('id',)) or \
                not self.store.has_views(model.KIND):
            return None
        layered = model is models.Volume
        with self.store.lock:
            total = self.store.total(model.KIND)
            rows = self.store.page_views(
                model.KIND, models.WIRE, q.offset, q.limit, q.descending,
                ('$._layer',) if layered else ())
            if total is None:
                return None
            missing = sum(r[1] is None for r in rows)
            if missing:
                LOG.warning('%s: %d of a page of %d objects have no stored '
                            'view; the page is built from their rows',
                            resource, missing, len(rows))
                return None
            derived = self._derived(model, [r[0] for r in rows],
                                    [r[2] for r in rows] if layered else ())
        # Every derived field is an integer: written into the view's
        # text by one format, cheaper than an encoder per object.
        tail = ''.join(', "%s": %%d' % name for name, _t in model.DERIVED)
        return total, '[%s]' % ','.join(
            text[:-1] + tail % values + '}'
            for (_id, text, *_l), values in zip(rows, derived))

    def _derived(self, model, ids, layers):
        """The values of ``model.DERIVED`` of the objects ``ids``, a tuple
        each (``layers``: each one's engine layer, for volumes).
        """
        if model is models.Volume:
            written = self.engine.layers_written(layers)
            return [(written.get(layer, 0) // 1024,) for layer in layers]
        if model is models.VolumeGroup:
            return self._group_totals(ids)
        return [() for _id in ids]

    def _group_totals(self, ids):
        paths = [models.Ref(models.VolumeGroup.KIND, i).path for i in ids]
        # Only the members' sizes and layers are read, not whole volumes:
        # decoding a hundred of them was most of a page's time.
        members = self.store.pluck_in(models.Volume.KIND,
                                      'volume_group.ref', paths,
                                      ('$.size', '$._layer'))
        written = self.engine.layers_written(m[2] for m in members)
        count, size, used = (dict.fromkeys(paths, 0) for _n in range(3))
        for path, kib, layer in members:
            count[path] += 1
            size[path] += kib
            used[path] += written.get(layer, 0)
        snapshots = self.store.count_in('snapshots', 'volume_group.ref',
                                        paths)
        # In the order of VolumeGroup.DERIVED.
        return [(count[p], snapshots[p], used[p] // 1024, size[p])
                for p in paths]

    def list(self, resource, q):
        """(total, page) of the objects of ``resource`` that ``q`` (a
        ``core.query`` query) asks for; filtered, ordered and paged by
        the store, except on fields computed when presented.
        """
        model = schema.model(resource)
        if resource in system_mod.COMPUTED:
            return query_mod.over(
                [o.to_wire() for o in self.system.computed(resource)], q)
        late = [c for c in q.conditions if _on_derived(model, c.path)]
        if not late and not (q.sort and _on_derived(model, q.sort.path)):
            total, found = self.records.select(model, q)
            return total, self.present(found)
        # Rare: every object the stored fields let through is presented,
        # then filtered, ordered and paged in memory.
        _total, found = self.records.select(model, query_mod.query(
            c for c in q.conditions if c not in late))
        return query_mod.over(self.present(found), q._replace(
            conditions=tuple(late)))

    def get(self, resource, obj_id):
        if resource in system_mod.COMPUTED:
            found = [o.to_wire() for o in self.system.computed(resource)
                     if o.id == obj_id]
        else:
            obj = self.records.get(resource, obj_id)
            found = self.present([obj]) if obj else []
        if not found:
            raise errors.NotFound('%s %d does not exist' % (resource,
                                                            obj_id))
        return found[0]

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
        return self.present([obj])[0]

    def update(self, resource, obj_id, body):
        ops = self._ops(resource, 'update')
        fields.check_fields(self._writable, resource, body, 'update')
        if ops.update_in_transaction:
            with self.store.transaction():
                obj = ops.update(self.records.existing(resource, obj_id), body)
        else:
            obj = ops.update(self.records.existing(resource, obj_id), body)
        return self.present([obj])[0]

    def delete(self, resource, obj_id):
        ops = self._ops(resource, 'delete')
        with self.store.transaction():
            obj = self.records.existing(resource, obj_id)
            if ops.delete is not None:
                ops.delete(obj)
            self.records.delete(obj)
