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

"""Typed parsing of volume-type extra specs, shared by every backend.

Each backend declares the keys it understands; a key in one of its
scopes that it does not know, or a value of the wrong type, raises
InvalidVolumeType naming the key and the value, before anything is
created on the array. Keys of other scopes belong to someone else and
are left alone.
"""

from cinder import exception
from cinder.i18n import _

TRUE = ('true', 'yes', '1', 'on', '<is> true')
FALSE = ('false', 'no', '0', 'off', '<is> false')
MAX_INT = 2 ** 53


class Spec(object):
    """One extra-spec key.

    ``kind`` is bool, int, str (any non-empty text), list (comma-separated
    non-empty items) or a tuple of choices.
    """

    def __init__(self, key, kind, default=None, minimum=None, maximum=None,
                 help=''):
        self.key = key
        self.kind = kind
        self.default = default
        self.minimum = minimum
        self.maximum = maximum
        self.help = help

    def _invalid(self, value, why):
        return exception.InvalidVolumeType(reason=_(
            'extra spec %(key)s=%(value)r is invalid: %(why)s') % {
                'key': self.key, 'value': value, 'why': why})

    def parse(self, value):
        if not isinstance(value, str):
            raise self._invalid(value, 'not a string')
        text = value.strip()
        if self.kind is bool:
            lowered = ' '.join(text.lower().split())
            if lowered in TRUE:
                return True
            if lowered in FALSE:
                return False
            raise self._invalid(value, 'expected a boolean such as '
                                '"<is> True" or "false"')
        if self.kind is int:
            try:
                number = int(text)
            except ValueError:
                raise self._invalid(value, 'expected an integer')
            low = self.minimum if self.minimum is not None else -MAX_INT
            high = self.maximum if self.maximum is not None else MAX_INT
            if not low <= number <= high:
                raise self._invalid(value, 'expected %s to %s' % (low, high))
            return number
        if self.kind is str:
            if not text:
                raise self._invalid(value, 'expected a non-empty value')
            return text
        if self.kind is list:
            items = [item.strip() for item in text.split(',')]
            if not text or not all(items):
                raise self._invalid(value, 'expected a comma-separated '
                                    'list of non-empty items')
            return items
        if text not in self.kind:
            raise self._invalid(value, 'expected one of %s' %
                                ', '.join(self.kind))
        return text


def parse(extra_specs, schema, scopes):
    """Values for every key of ``schema``: given, or its default.

    :param scopes: key prefixes (``'k2:'``) this backend owns; an unknown
        key under one of them is an error.
    """
    known = {spec.key: spec for spec in schema}
    values = {spec.key: spec.default for spec in schema}
    for key, value in sorted((extra_specs or {}).items()):
        spec = known.get(key)
        if spec is None:
            if any(key.startswith(scope) for scope in scopes):
                raise exception.InvalidVolumeType(reason=_(
                    'unknown extra spec %(key)s=%(value)r; known keys: '
                    '%(known)s') % {'key': key, 'value': value,
                                    'known': ', '.join(sorted(known))})
            continue
        values[key] = spec.parse(value)
    values['_given'] = frozenset(k for k in (extra_specs or {})
                                 if k in known)
    return values


def type_specs(volume_type):
    """The extra specs of a volume type object or dict (or none)."""
    if not volume_type:
        return {}
    specs = (volume_type.get('extra_specs') if isinstance(volume_type, dict)
             else getattr(volume_type, 'extra_specs', None))
    return dict(specs or {})
