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

"""Cinder objects for driver tests, made the same way in every tier."""

from cinder.tests.unit import fake_snapshot
from cinder.tests.unit import fake_volume
from oslo_utils import uuidutils


def volume_type(ctx, **specs):
    return fake_volume.fake_volume_type_obj(
        ctx, id=uuidutils.generate_uuid(), extra_specs=specs)


def volume(ctx, size=1, vtype=None, provider_id=None, **updates):
    vol = fake_volume.fake_volume_obj(
        ctx, id=uuidutils.generate_uuid(), size=size,
        provider_id=provider_id, **updates)
    vol.volume_type = vtype or volume_type(ctx)
    return vol


def snapshot(ctx, vol, provider_id=None):
    snap = fake_snapshot.fake_snapshot_obj(
        ctx, id=uuidutils.generate_uuid(), volume_id=vol.id,
        volume_size=vol.size, provider_id=provider_id)
    snap.volume = vol
    return snap
