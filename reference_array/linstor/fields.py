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

"""Checks of the fields of LINSTOR request bodies.

Bodies are read leniently, as the Java controller does (numbers as
strings, nulls for absent fields); a refusal names the field and value.
"""

import re

from reference_array.linstor import outcomes
from reference_array.linstor import props as linstorprops

NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_-]{1,47}')
LAYERS = ('DRBD', 'LUKS', 'STORAGE', 'NVME', 'WRITECACHE', 'CACHE',
          'BCACHE')


def _prop_refusal(key, value, why, kind, op):
    if why.startswith("The key '"):
        message = 'Invalid property key: %s' % key
    else:
        message = 'Invalid property(%s) value: %s' % (key, value)
    return outcomes.refused('prop', message, obj=kind, op=op, cause=why)


def properties(body, field, kind, op='create'):
    """The properties in ``body[field]``, each whitelisted for ``kind``."""
    value = body.get(field)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise outcomes.invalid('%s must be an object' % field, 'prop',
                               obj=kind, op=op)
    for key, val in value.items():
        why = linstorprops.check(key, val, kind)
        if why:
            raise _prop_refusal(key, val, why, kind, op)
    return dict(value)


def apply_props(props, body, kind):
    """``override_props`` and ``delete_props`` of a modify request."""
    props.update(properties(body, 'override_props', kind, 'modify'))
    for key in strings(body, 'delete_props', kind):
        why = linstorprops.key_refused(key, kind)
        if why:
            raise _prop_refusal(key, None, why, kind, 'modify')
        props.pop(key, None)


def strings(body, field, where):
    value = body.get(field)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str)
                                              for v in value):
        raise outcomes.invalid('%s: %s must be a list of strings' % (
            where, field))
    return list(value)


def integer(value, field, minimum=0):
    """Lenient integers: LINSTOR's clients send "2" for 2."""
    if isinstance(value, bool):
        raise outcomes.invalid(
            '%s must be an integer, not %r' % (field, value))
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise outcomes.invalid(
            '%s must be an integer, not %r' % (field, value))
    if number < minimum:
        raise outcomes.invalid('%s must be at least %d, not %d' % (
            field, minimum, number))
    return number


def _name_fault(name):
    """Why LINSTOR refuses ``name``, in its words."""
    if len(name) < 2 or len(name) > 48:
        return 'Invalid name: Name length %d is not in the range 2 - 48' % (
            len(name))
    if not (name[0].isascii() and (name[0].isalpha() or name[0] == '_')):
        return 'Invalid name: Must begin with a letter or underscore'
    bad = next(c for c in name if not (c.isascii() and (
        c.isalnum() or c in '_-')))
    return "Invalid name: Cannot contain character '%s'" % bad


def check_name(name, obj, what):
    # fullmatch: LINSTOR refuses a name with a newline at its end, which
    # a match up to '$' would let through.
    if not isinstance(name, str) or not NAME.fullmatch(name):
        cause = _name_fault(name) if isinstance(name, str) and name else \
            'Invalid name: the name is empty'
        raise outcomes.refused(
            {'rsc_dfn': 'rsc_name', 'rsc_grp': 'rsc_name',
             'snapshot': 'snapshot_name'}.get(obj, 'request'),
            'The specified %s name %r is invalid.' % (what, name), obj=obj,
            op='create', cause=cause)
    return name


def layers(value, where):
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise outcomes.invalid('%s: the layer list must be a non-empty list'
                               % where, 'layer_stack')
    names = [str(v).upper() for v in value]
    bad = [v for v in names if v not in LAYERS]
    if bad or names[-1] != 'STORAGE':
        raise outcomes.invalid('%s: invalid layer list %r; it ends with '
                               'STORAGE and uses %s' % (
                                   where, value, ', '.join(LAYERS)),
                               'layer_stack')
    return names
