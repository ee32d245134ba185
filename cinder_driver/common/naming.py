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

"""Array object names derived from Cinder objects.

Names are keyed on ``volume.name_id`` (never ``volume.id``): after a
generic migration Cinder swaps name_id, and the array object must follow.
The prefixes match Cinder's in-tree K2 driver, so volumes it created can
be adopted without renaming.
"""

import hashlib
import re

VOLUME_PREFIX = 'cv-'
GROUP_PREFIX = 'cvg-'
SNAPSHOT_PREFIX = 'cs-'
# LINSTOR resource definitions and snapshots, named as LINBIT's driver
# names them.
LINSTOR_VOLUME_PREFIX = 'volume-'
LINSTOR_SNAPSHOT_PREFIX = 'snapshot-'
# The hidden definition a LINSTOR snapshot is restored into while it is
# attached (LINSTOR has no device for a snapshot itself).
LINSTOR_SNAPSHOT_VIEW_PREFIX = 'snapview-'
_UNSAFE = re.compile(r'[^0-9A-Za-z_-]')


def volume_name(volume):
    return VOLUME_PREFIX + volume.name_id


def group_name(volume):
    return GROUP_PREFIX + volume.name_id


def snapshot_name(snapshot):
    return SNAPSHOT_PREFIX + snapshot.id


def linstor_volume_name(volume):
    return LINSTOR_VOLUME_PREFIX + volume.name_id


def linstor_snapshot_name(snapshot):
    return LINSTOR_SNAPSHOT_PREFIX + snapshot.id


def linstor_snapshot_view_name(snapshot):
    return LINSTOR_SNAPSHOT_VIEW_PREFIX + snapshot.id


def fit(name, limit):
    """``name`` made array-safe and at most ``limit`` characters.

    A shortened name keeps a digest of the full one, so two long names
    that share a prefix never collapse into the same array object.
    """
    safe = _UNSAFE.sub('_', name)
    if len(safe) <= limit and safe == name:
        return safe
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return '%s-%s' % (safe[:limit - 9], digest)


def host_name(connector, limit):
    return fit(connector.get('host') or connector.get('initiator') or
               'host', limit)
