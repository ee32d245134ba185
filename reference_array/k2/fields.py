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

"""Checks of the fields of K2 request bodies.

Every refusal is ``errors.Invalid`` naming the field and what was sent.
"""

import re

from reference_array.core import errors

NAME_RE = re.compile(r'^[0-9A-Za-z_.:-]+$')
NAME_LIMITS = {'volume_groups': 42, 'volumes': 42, 'hosts': 32,
               'snapshots': 42, 'host_auth_profiles': 32}


def bad(message):
    return errors.Invalid(message)


def check_fields(writable, resource, body, action):
    """Refuse fields the ``writable`` table does not allow for ``action``."""
    allowed = writable[resource][action]
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise bad('unknown or read-only field(s) for %s %s: %s' % (
            action, resource, ', '.join(unknown)))


def text(body, field, default=''):
    """A free-text field (a description): absent or null is ``default``."""
    value = body.get(field)
    return default if value is None else str(value)


def boolean(body, field, default=None):
    value = body.get(field, default)
    if isinstance(value, str) and value.lower() in ('true', 'false'):
        return value.lower() == 'true'
    if not isinstance(value, bool):
        raise bad('%s must be a boolean, not %r' % (field, value))
    return value


def integer(body, field, minimum=None, maximum=None):
    value = body.get(field)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad('%s must be an integer, not %r' % (field, value))
    if minimum is not None and value < minimum:
        raise bad('%s=%d is below the minimum %d' % (field, value, minimum))
    if maximum is not None and value > maximum:
        raise bad('%s=%d is above the maximum %d' % (field, value, maximum))
    return value


def name(resource, body, field='name'):
    value = body.get(field)
    limit = NAME_LIMITS[resource]
    if not isinstance(value, str) or not value:
        raise bad('%s must be a non-empty string, not %r' % (field, value))
    if len(value) > limit:
        raise bad('%s %r is longer than %d characters' % (field, value,
                                                          limit))
    if not NAME_RE.match(value):
        raise bad('%s %r has characters outside [0-9A-Za-z_.:-]' % (
            field, value))
    return value
