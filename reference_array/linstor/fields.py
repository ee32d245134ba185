"""Checks of the fields of LINSTOR request bodies.

Bodies are read leniently, as the Java controller does (numbers as
strings, nulls for absent fields); a refusal names the field and value.
"""

import re

from reference_array.linstor import outcomes
from reference_array.linstor import props as linstorprops

NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_-]{1,47}$')
LAYERS = ('DRBD', 'LUKS', 'STORAGE', 'NVME', 'WRITECACHE', 'CACHE',
          'BCACHE')


def properties(body, field, where):
    value = body.get(field)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise outcomes.invalid('%s: %s must be an object' % (where, field),
                               'prop')
    for key, val in value.items():
        why = linstorprops.check(key, val)
        if why:
            raise outcomes.invalid('Invalid property %s=%r: %s' % (
                key, val, why), 'prop')
    return dict(value)


def apply_props(props, body, where):
    """``override_props`` and ``delete_props`` of a modify request."""
    props.update(properties(body, 'override_props', where))
    for key in strings(body, 'delete_props', where):
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


def check_name(name, obj, what):
    if not isinstance(name, str) or not NAME.match(name):
        raise outcomes.invalid(
            'Invalid %s name %r: 2 to 48 characters, a letter or _ first, '
            'then letters, digits, _ or -' % (what, name),
            {'rsc_dfn': 'rsc_name', 'rsc_grp': 'rsc_name',
             'snapshot': 'snapshot_name'}.get(obj, 'request'), obj=obj,
            op='create')
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
