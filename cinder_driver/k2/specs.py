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

"""What a volume type asks of a K2 backend, checked before anything exists.

Extra specs parse into ``{'dedup': bool, 'replication': bool}``; QoS
specs for the array are refused (the K2 REST API v2 has no QoS). The QoS
specs of a type given as a dict are fetched by a lookup the caller passes
in, so this module never reaches Cinder's database itself.
"""

from cinder import exception
from cinder.i18n import _

from cinder_driver.common import extra_specs

SPEC_SCOPES = ('k2:',)
SPECS = (
    extra_specs.Spec('k2:dedup', bool, default=None,
                     help='Deduplicate the volume (default: true).'),
    extra_specs.Spec('kaminario:thin_prov_type', ('dedup', 'nodedup'),
                     help='Accepted for clouds that used Cinder\'s in-tree '
                          'K2 driver.'),
    extra_specs.Spec('replication_enabled', bool, default=False,
                     help='Cinder\'s replication capability.'),
    extra_specs.Spec('kaminario:replication', ('enabled', 'disabled'),
                     help='The in-tree K2 driver\'s replication spec.'),
    extra_specs.Spec('k2:snapshot_retention_hours', int, minimum=0,
                     help='Snapshots that cannot be deleted for this many '
                          'hours: not offered by K2 (any value above 0 is '
                          'refused).'),
)
# K2's retention_policies (num_snapshots, weeks, days, hours) bound how
# long the array keeps the snapshots it takes; none of them stops anyone
# from deleting a snapshot earlier, which is what an immutable snapshot
# means.
IMMUTABLE_REFUSED = _(
    'extra spec k2:snapshot_retention_hours=%s asks for snapshots that '
    'cannot be deleted before their time; K2 does not offer that: its '
    'retention policies only bound how long it keeps snapshots')
# Ownership mark kept in array objects' descriptions: names cannot tell
# managed from unmanaged objects (after unmanage the name stays, and
# Cinder may manage it again by that name).
OWNER_PREFIX = 'cinder:'


def owner(obj):
    return OWNER_PREFIX + obj.id


def owner_of(description):
    """The Cinder id an ownership mark names, or None."""
    text = description or ''
    return text[len(OWNER_PREFIX):] if text.startswith(OWNER_PREFIX) \
        else None


def volume_specs(volume_type, replication_ok=False):
    """Validated K2 settings of a volume type (dict or object).

    ``replication_ok``: the backend has a replication_device; without one
    a type asking for replication is refused rather than given volumes
    that are silently not replicated.
    """
    values = extra_specs.parse(extra_specs.type_specs(volume_type), SPECS,
                               SPEC_SCOPES)
    legacy = values['kaminario:thin_prov_type']
    dedup = values['k2:dedup']
    if legacy is not None and dedup is not None and \
            dedup != (legacy == 'dedup'):
        raise exception.InvalidVolumeType(reason=_(
            'extra specs contradict each other: k2:dedup=%(dedup)s but '
            'kaminario:thin_prov_type=%(legacy)s') % {
                'dedup': dedup, 'legacy': legacy})
    if values['k2:snapshot_retention_hours']:
        raise exception.InvalidVolumeType(
            reason=IMMUTABLE_REFUSED % values['k2:snapshot_retention_hours'])
    if dedup is None:
        dedup = legacy != 'nodedup'
    replication = (values['replication_enabled'] or
                   values['kaminario:replication'] == 'enabled')
    if replication and not replication_ok:
        asked = ('replication_enabled' if values['replication_enabled']
                 else 'kaminario:replication')
        raise exception.InvalidVolumeType(reason=_(
            'extra spec %s asks for replication, but this backend has no '
            'replication_device') % asked)
    return {'dedup': dedup, 'replication': replication}


def refuse_backend_qos(volume_type, lookup=None):
    """QoS for the array cannot be honoured: say so, create nothing.

    Front-end specs (applied by the hypervisor) are fine. ``lookup(id)``
    -> {'consumer', 'specs'} serves types given as dicts (a retype's new
    type), which carry only the id of their QoS specs.
    """
    qos = None
    if isinstance(volume_type, dict):
        qos_id = volume_type.get('qos_specs_id')
        if qos_id and lookup is not None:
            found = lookup(qos_id)
            qos = found['consumer'], dict(found['specs'] or {})
    elif getattr(volume_type, 'qos_specs_id', None):
        found = volume_type.qos_specs
        qos = (found.consumer, dict(found.specs or {})) if found else None
    if qos and qos[0] in ('back-end', 'both') and qos[1]:
        raise exception.InvalidVolumeType(reason=_(
            'QoS specs %(keys)s (consumer %(consumer)s) cannot be applied: '
            'K2 arrays have no QoS; use consumer front-end') % {
                'keys': ', '.join('%s=%s' % kv for kv in sorted(
                    qos[1].items())), 'consumer': qos[0]})


def type_replicated(volume_type):
    """Whether a type asks for replication; never raises (for deletes)."""
    try:
        return volume_specs(volume_type, replication_ok=True)['replication']
    except exception.InvalidVolumeType:
        return False
