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

"""K2 objects as the driver reads them, each field checked once.

The client turns every array object it hands out into one of these, so
the logic above it never meets a missing field or a field of the wrong
type: a reply that does not fit raises ``BadShape``, which the client
reports as ArrayBadReply naming the operation.
"""

import collections

from cinder_driver.k2 import rest


class BadShape(ValueError):
    """An array object without a field the driver needs, or with a bad one.
    """


def _get(obj, key, kinds, optional=False, default=None):
    value = obj.get(key)
    if value is None and optional:
        return default
    if not isinstance(value, kinds) or isinstance(value, bool) and \
            bool not in kinds:
        raise BadShape('%s is %r, not %s' % (key, value, ' or '.join(
            k.__name__ for k in kinds)))
    return value


def _ref(obj, key, optional=False):
    value = obj.get(key)
    if value is None and optional:
        return None
    try:
        return rest.ref_id(value)
    except ValueError as e:
        raise BadShape('%s: %s' % (key, e))


def _id(obj):
    return _get(obj, 'id', (int,))


Volume = collections.namedtuple(
    'Volume', 'id name size group_id description')
VolumeGroup = collections.namedtuple(
    'VolumeGroup', 'id name is_dedup volumes_count snapshots_count '
    'replicated')
Snapshot = collections.namedtuple(
    'Snapshot', 'id short_name group_id description is_view')
Mapping = collections.namedtuple('Mapping', 'id lun host_id target')
Session = collections.namedtuple(
    'Session', 'id name state state_reason generation current_snapshot '
    'group_id')
Capacity = collections.namedtuple(
    'Capacity', 'total free provisioned logical physical')
State = collections.namedtuple(
    'State', 'system_id system_name state api_version iscsi_target')


def volume(obj):
    return Volume(_id(obj), _get(obj, 'name', (str,)),
                  _get(obj, 'size', (int,)),
                  # A built-in volume (CTRL) belongs to no group.
                  _ref(obj, 'volume_group', optional=True),
                  _get(obj, 'description', (str,), True, ''))


def volume_group(obj):
    return VolumeGroup(
        _id(obj), _get(obj, 'name', (str,)),
        _get(obj, 'is_dedup', (bool,), True, True),
        _get(obj, 'volumes_count', (int,), True),
        _get(obj, 'snapshots_count', (int,), True),
        bool(obj.get('replication_session')))


def snapshot(obj):
    return Snapshot(_id(obj), _get(obj, 'short_name', (str,)),
                    _ref(obj, 'volume_group'),
                    _get(obj, 'description', (str,), True, ''),
                    _get(obj, 'is_exposable', (bool,), True, False))


def mapping(obj):
    target = obj.get('volume')
    if not isinstance(target, dict) or not isinstance(target.get('ref'),
                                                      str):
        raise BadShape('volume is %r, not a reference' % (target,))
    _ref(obj, 'volume')
    lun = _get(obj, 'lun', (int,))
    if lun < 0:
        raise BadShape('lun is %d' % lun)
    return Mapping(_id(obj), lun, _ref(obj, 'host'), target['ref'])


def session(obj):
    return Session(_id(obj), _get(obj, 'name', (str,)),
                   _get(obj, 'state', (str,), True, ''),
                   _get(obj, 'state_reason', (str,), True, ''),
                   _get(obj, 'generation_number', (int,), True, 0),
                   obj.get('current_snapshot_id'),
                   _ref(obj, 'local_volume_group', optional=True))


def capacity(obj):
    return Capacity(*[_get(obj, key, (int,)) for key in Capacity._fields])


def state(obj):
    return State(obj.get('system_id'),
                 _get(obj, 'system_name', (str,), True, '?'),
                 _get(obj, 'state', (str,), True, ''),
                 obj.get('rest_api_version'),
                 _get(obj, 'iscsi_qualified_target_name', (str,), True))


def number(obj, key):
    """A performance figure: a number, or 0 when the array has none."""
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return value
