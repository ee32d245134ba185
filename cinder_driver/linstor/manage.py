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

"""Bringing existing LINSTOR volumes and snapshots under Cinder.

A resource definition with one volume can be managed; its size comes from
its volume definitions (a controller's definition GET does not carry
them). Listings for Cinder's manageable-volume and -snapshot API say
which objects are safe to take and why not.
"""

import math
import re

from cinder import exception
from cinder.i18n import _
from oslo_utils import units

from cinder_driver.common import naming

# Names Cinder-made volumes and snapshots have on LINSTOR.
_UUID = r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
CINDER_VOLUME = re.compile('^%s(%s)$' % (naming.LINSTOR_VOLUME_PREFIX,
                                         _UUID))
CINDER_SNAPSHOT = re.compile('^%s(%s)$' % (naming.LINSTOR_SNAPSHOT_PREFIX,
                                           _UUID))


def gib_up(size_kib):
    return int(math.ceil(int(size_kib) / float(units.Mi)))


def _source_name(existing_ref):
    name = (existing_ref or {}).get('source-name')
    if not name:
        raise exception.ManageExistingInvalidReference(
            existing_ref=existing_ref,
            reason=_('source-name (the LINSTOR name) is needed'))
    return name


class Inventory(object):

    def __init__(self, client, rd_name, snap_name):
        self.client = client
        self.rd_name = rd_name
        self.snap_name = snap_name

    # -- volumes --------------------------------------------------------------
    def existing(self, existing_ref):
        """(name, the one volume definition) of a reference."""
        name = _source_name(existing_ref)
        rd = self.client.resource_definition(name)
        if rd is None:
            raise exception.ManageExistingInvalidReference(
                existing_ref=existing_ref,
                reason=_('no resource definition %s') % name)
        vds = self.client.volume_definitions(rd['name'])
        if len(vds) != 1:
            raise exception.ManageExistingInvalidReference(
                existing_ref=existing_ref,
                reason=_('%(name)s has %(n)d volumes; one is needed') % {
                    'name': name, 'n': len(vds)})
        return rd['name'], vds[0]

    def volume_size(self, existing_ref):
        _name, vd = self.existing(existing_ref)
        return gib_up(vd['size_kib'])

    def manageable_volumes(self, cinder_volumes):
        known = {self.rd_name(v): v.id for v in cinder_volumes}
        busy = {str(r.get('name')) for r in self.client.resources()
                if (r.get('state') or {}).get('in_use')}
        entries = []
        for rd in self.client.resource_definitions(
                with_volume_definitions=True):
            name = rd['name']
            vds = rd.get('volume_definitions') or []
            made = CINDER_VOLUME.match(name)
            entry = {'reference': {'source-name': name},
                     'size': gib_up(vds[0]['size_kib']) if len(vds) == 1
                     else 0,
                     'safe_to_manage': True, 'reason_not_safe': None,
                     'cinder_id': known.get(name) or (
                         made.group(1) if made else None),
                     'extra_info': 'resource group %s' % rd.get(
                         'resource_group_name')}
            reason = None
            if entry['cinder_id']:
                reason = 'already managed'
            elif len(vds) != 1:
                reason = '%d volumes; one is needed' % len(vds)
            elif name in busy:
                reason = 'in use'
            if reason:
                entry.update(safe_to_manage=False, reason_not_safe=reason)
            entries.append(entry)
        return entries

    # -- snapshots ------------------------------------------------------------
    def _snapshot(self, snapshot, existing_ref):
        name = _source_name(existing_ref)
        rd = self.rd_name(snapshot.volume)
        found = [s for s in self.client.snapshots([rd])
                 if s.get('name') == name and
                 str(s.get('resource_name')).lower() == rd.lower()]
        if not found:
            raise exception.ManageExistingInvalidReference(
                existing_ref=existing_ref,
                reason=_('%(rd)s has no snapshot %(name)s') % {
                    'rd': rd, 'name': name})
        return found[0]

    def snapshot_size(self, snapshot, existing_ref):
        snap = self._snapshot(snapshot, existing_ref)
        vds = snap.get('volume_definitions') or []
        if len(vds) != 1:
            raise exception.ManageExistingInvalidReference(
                existing_ref=existing_ref,
                reason=_('the snapshot has %d volumes; one is needed') %
                len(vds))
        return gib_up(vds[0]['size_kib'])

    def manage_snapshot(self, snapshot, existing_ref):
        snap = self._snapshot(snapshot, existing_ref)
        return {'provider_id': snap['name']}

    def manageable_snapshots(self, cinder_snapshots):
        known = {(self.rd_name(s.volume), self.snap_name(s)): s.id
                 for s in cinder_snapshots}
        entries = []
        for snap in self.client.snapshots():
            rd, name = snap.get('resource_name'), snap.get('name')
            vds = snap.get('volume_definitions') or []
            made = CINDER_SNAPSHOT.match(name or '')
            entry = {'reference': {'source-name': name},
                     'source_reference': {'source-name': rd},
                     'size': gib_up(vds[0]['size_kib']) if len(vds) == 1
                     else 0,
                     'safe_to_manage': True, 'reason_not_safe': None,
                     'cinder_id': known.get((rd, name)) or (
                         made.group(1) if made else None),
                     'extra_info': None}
            reason = None
            if entry['cinder_id']:
                reason = 'already managed'
            elif len(vds) != 1:
                reason = '%d volumes; one is needed' % len(vds)
            elif 'SUCCESSFUL' not in (snap.get('flags') or []):
                reason = 'not complete'
            if reason:
                entry.update(safe_to_manage=False, reason_not_safe=reason)
            entries.append(entry)
        return entries
