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

"""K2 objects as typed rows of the store: found by key, never by a scan.

Every method takes a model class (``models``) or a resource name, and
returns models; references may be given as ``Ref``s or paths.
"""

from reference_array.core import errors
from reference_array.k2 import fields
from reference_array.k2 import models

Ref = models.Ref


def model_of(kind):
    return kind if isinstance(kind, type) else models.BY_KIND[kind]


def _path(ref):
    return ref.path if isinstance(ref, Ref) else ref


class Records(object):

    def __init__(self, store):
        self.store = store
        # Views of the objects kept in memory (the target's exports):
        # told of each put and delete, with the store's lock held.
        self._followers = []

    def follow(self, follower):
        """Tell ``follower`` of every object written from now on:
        ``put(obj)`` after it is stored, ``deleted(obj)`` after it is
        deleted, both in the writer's transaction (the store's
        ``call_after_rollbacks`` says when one is undone).
        """
        self._followers.append(follower)

    def _decode(self, kind, rows):
        cls = model_of(kind)
        return [cls.from_row(row) for row in rows]

    def get(self, kind, obj_id):
        row = self.store.get(model_of(kind).KIND, obj_id)
        return None if row is None else model_of(kind).from_row(row)

    def existing(self, kind, obj_id):
        obj = self.get(kind, obj_id)
        if obj is None:
            raise errors.NotFound('%s %d does not exist' % (
                model_of(kind).KIND, obj_id))
        return obj

    def all(self, kind):
        return self._decode(kind, self.store.all(model_of(kind).KIND))

    def by(self, kind, field, value):
        """The first object whose ``field`` is ``value``, or None."""
        row = self.store.first(model_of(kind).KIND, field, value)
        return None if row is None else model_of(kind).from_row(row)

    def children(self, kind, field, ref):
        """Objects of ``kind`` whose reference ``field`` is ``ref``."""
        return self._decode(kind, self.store.find(
            model_of(kind).KIND, field + '.ref', _path(ref)))

    def children_of(self, kind, field, refs):
        """Objects of ``kind`` whose reference ``field`` is any of
        ``refs`` (one query, whatever their number).
        """
        return self._decode(kind, self.store.find_in(
            model_of(kind).KIND, field + '.ref', [_path(r) for r in refs]))

    def has_children(self, kind, field, ref):
        return self.store.count(model_of(kind).KIND, field + '.ref',
                                _path(ref)) > 0

    def unique(self, kind, field, value, skip_id=None):
        for row in self.store.find(model_of(kind).KIND, field, value):
            if row['id'] != skip_id:
                raise fields.bad('%s %s=%r already exists (id %d)' % (
                    model_of(kind).KIND, field, value, row['id']))

    def deref(self, body, field, kinds):
        """The object a reference field of ``body`` points at, of one of
        the model classes ``kinds``.
        """
        value = body.get(field)
        ref = Ref.parse(value.get('ref')) if isinstance(value, dict) \
            else None
        if ref is None:
            raise fields.bad('%s must be a reference {"ref": '
                             '"/<resource>/<id>"}, not %r' % (field, value))
        names = [k.KIND for k in kinds]
        if ref.kind not in names:
            raise fields.bad('%s must refer to %s, not %s' % (
                field, ' or '.join(names), ref.path))
        obj = self.get(ref.kind, ref.id)
        if obj is None:
            raise fields.bad('%s %s does not exist' % (field, ref.path))
        return obj

    def resolve(self, ref):
        """The object a ``Ref`` points at, or None."""
        return self.get(ref.kind, ref.id)

    def select(self, kind, q):
        """(total, page of objects) of a ``core.query`` query."""
        total, rows = self.store.select(model_of(kind).KIND, q)
        return total, self._decode(kind, rows)

    def put(self, obj):
        with self.store.lock:
            self.store.put(obj.KIND, obj.id, obj.to_row(), keys=obj.keys(),
                           obj=obj)
            for follower in self._followers:
                follower.put(obj)
        return obj

    def next_id(self, kind):
        return self.store.next_id(model_of(kind).KIND)

    def new(self, obj):
        """Store a new object under the next id of its kind."""
        obj.id = self.store.next_id(obj.KIND)
        return self.put(obj)

    def delete(self, obj):
        with self.store.lock:
            self.store.delete(obj.KIND, obj.id)
            for follower in self._followers:
                follower.deleted(obj)
