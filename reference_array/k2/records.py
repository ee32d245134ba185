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

"""K2 objects as rows of the store: found by key, never by a scan."""

import re

from reference_array.core import errors
from reference_array.k2 import fields
from reference_array.k2 import refs

_REF = re.compile(r'^/(.+)/(\d+)$')


class Records(object):

    def __init__(self, store):
        self.store = store

    def get(self, resource, obj_id):
        return self.store.get(resource, obj_id)

    def existing(self, resource, obj_id):
        obj = self.store.get(resource, obj_id)
        if obj is None:
            raise errors.NotFound('%s %d does not exist' % (resource,
                                                            obj_id))
        return obj

    def by(self, resource, field, value):
        """The first object whose ``field`` is ``value``, or None."""
        return self.store.first(resource, field, value)

    def children(self, resource, field, ref):
        """Objects of ``resource`` whose reference ``field`` is ``ref``."""
        return self.store.find(resource, field + '.ref', ref)

    def has_children(self, resource, field, ref):
        return self.store.count(resource, field + '.ref', ref) > 0

    def unique(self, resource, field, value, skip_id=None):
        for obj in self.store.find(resource, field, value):
            if obj['id'] != skip_id:
                raise fields.bad('%s %s=%r already exists (id %d)' % (
                    resource, field, value, obj['id']))

    def deref(self, body, field, resources):
        """(resource, object) a reference field of ``body`` points at."""
        value = body.get(field)
        if not isinstance(value, dict) or not isinstance(
                value.get('ref'), str):
            raise fields.bad('%s must be a reference {"ref": '
                             '"/<resource>/<id>"}, not %r' % (field, value))
        match = _REF.match(value['ref'])
        if not match or match.group(1) not in resources:
            raise fields.bad('%s must refer to %s, not %s' % (
                field, ' or '.join(resources), value['ref']))
        obj_id = refs.number(match.group(2))
        obj = obj_id and self.store.get(match.group(1), obj_id)
        if obj is None:
            raise fields.bad('%s %s does not exist' % (field, value['ref']))
        return match.group(1), obj

    def put(self, resource, obj):
        self.store.put(resource, obj['id'], obj)
        return obj

    def new(self, resource, obj):
        """Store a new object under the next id of its kind."""
        obj['id'] = self.store.next_id(resource)
        return self.put(resource, obj)

    def delete(self, resource, obj_id):
        self.store.delete(resource, obj_id)

    @staticmethod
    def ref(resource, obj):
        return refs.to(resource, obj)
