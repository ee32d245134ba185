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

"""K2 references: ``{"ref": "/<resource>/<id>"}``, built and read here."""

from reference_array.core import errors

# Ids are SQLite integers: anything larger names no object.
MAX_ID = (1 << 63) - 1


def number(text):
    """An object id from its text, or None if it cannot name one."""
    if not text.isdigit() or int(text) > MAX_ID:
        return None
    return int(text)


def path(resource, obj_id):
    return '/%s/%d' % (resource, obj_id)


def ref(resource, obj_id):
    return {'ref': path(resource, obj_id)}


def to(resource, obj):
    """The reference to a stored object."""
    return ref(resource, obj['id'])


def parse(value):
    """(resource, id) of a reference."""
    try:
        resource, text = value['ref'][1:].rsplit('/', 1)
    except (TypeError, KeyError, ValueError):
        raise errors.Invalid('not a reference: %r' % (value,))
    obj_id = number(text)
    if obj_id is None:
        raise errors.NotFound('%s %s does not exist' % (resource, text))
    return resource, obj_id


def id_of(value):
    return parse(value)[1]
