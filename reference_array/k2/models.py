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

"""The K2 objects, typed: one model per resource, its fields in order.

Public fields are what clients see and may filter and sort on (with
``DERIVED`` ones, computed when an object is presented); private fields
(``model.private``) are the array's own state: a volume's engine layer,
a CHAP secret, a peer's credentials. Stored kinds are rows of the store
keyed by their models (``KEY_FUNCTIONS``); computed kinds (system state,
capacity, statistics) are built when asked and never stored.
"""

import dataclasses
import typing

from reference_array.core import model
from reference_array.core import store
from reference_array.core import views

Ref = model.Ref
Optional = typing.Optional
private = model.private
k2 = dataclasses.dataclass(kw_only=True, slots=True)


# -- volumes -----------------------------------------------------------------
@k2
class VolumeGroup(model.Model):
    KIND = 'volume_groups'
    DERIVED = (('volumes_count', int), ('snapshots_count', int),
               ('logical_capacity', int),
               ('volumes_provisioned_capacity', int))
    name: str
    quota: int = 0
    is_dedup: bool = True
    description: str = ''
    replication_session: Optional[Ref] = None
    last_restored_from: Optional[Ref] = None
    capacity_state: str = 'ok'


@k2
class Volume(model.Model):
    KIND = 'volumes'
    DERIVED = (('logical_capacity', int),)
    name: str
    size: int
    volume_group: Optional[Ref] = None
    is_dedup: bool = True
    no_dedup: bool = False
    description: str = ''
    read_only: bool = False
    scsi_sn: str = ''
    scsi_suffix: int = 0
    # The engine layer holding the volume's data (None: no data).
    layer: Optional[int] = private()
    # The built-in CTRL volume: listed, never changed or mapped.
    builtin: bool = private(False)


@k2
class Snapshot(model.Model):
    KIND = 'snapshots'
    short_name: str
    name: str
    source: Ref
    volume_group: Ref
    retention_policy: Optional[Ref] = None
    is_auto_deleteable: bool = False
    is_exposable: bool = False
    is_deleted: bool = False
    description: str = ''
    generation_number: int = 0
    creation_time: int = 0
    wwn: str = ''


@k2
class Volsnap(model.Model):
    """One volume's image in a snapshot."""
    KIND = 'volsnaps'
    name: str
    snapshot: Ref
    source: Ref
    scsi_sn: str = ''
    # The snapshot's point-in-time image, never written.
    layer: Optional[int] = private()
    # KiB: the source volume's size when the image was taken.
    size: int = private(0)
    # A view's (an exposable snapshot's) writable layer over ``layer``.
    view: Optional[int] = private()


@k2
class RetentionPolicy(model.Model):
    KIND = 'retention_policies'
    name: str
    num_snapshots: int = 0
    weeks: int = 0
    days: int = 0
    hours: int = 0


# -- hosts -------------------------------------------------------------------
@k2
class Host(model.Model):
    KIND = 'hosts'
    name: str
    type: str = 'Linux'
    host_group: Optional[Ref] = None
    description: str = ''
    host_auth_profile: Optional[Ref] = None


@k2
class HostGroup(model.Model):
    KIND = 'host_groups'
    name: str


@k2
class HostAuthProfile(model.Model):
    KIND = 'host_auth_profiles'
    name: str
    auth_type: str = 'CHAP'
    username: str = ''
    secret: str = private('')


@k2
class HostIqn(model.Model):
    KIND = 'host_iqns'
    iqn: str
    host: Ref


@k2
class HostFcPort(model.Model):
    KIND = 'host_fc_ports'
    pwwn: str
    host: Ref


@k2
class Mapping(model.Model):
    KIND = 'mappings'
    volume: Ref
    host: Ref
    lun: int
    unique_target: bool = False


# -- system ports ------------------------------------------------------------
@k2
class NetIp(model.Model):
    KIND = 'system/net_ips'
    ip_address: str
    network_mask: int = 8
    net_port: Optional[Ref] = None
    wan_port: Optional[Ref] = None
    net_vlan: Optional[int] = None
    nvme_port: Optional[Ref] = None


@k2
class NetPort(model.Model):
    KIND = 'system/net_ports'
    name: str
    status: str = 'OK'
    mac_address: str = ''


@k2
class FcPort(model.Model):
    KIND = 'system/fc_ports'
    name: str
    pwwn: str
    server: Optional[Ref] = None
    status: str = 'OK'


@k2
class WanPort(model.Model):
    KIND = 'system/wan_ports'
    name: str
    status: str = 'OK'


# -- replication -------------------------------------------------------------
@k2
class Peer(model.Model):
    """A paired array (``replication/peer_k2arrays``)."""
    KIND = 'replication/peer_k2arrays'
    name: str
    mgmt_host: str
    state: str = 'disconnected'
    system_id: Optional[str] = None
    verify_tls: bool = True
    url: str = private('')
    username: str = private('')
    password: str = private('')


@k2
class Session(model.Model):
    KIND = 'replication/sessions'
    name: str
    replication_peer_k2array: Ref
    local_volume_group: Ref
    replication_peer_volume_group_name: str
    remote_replication_session_name: str
    state: str = 'idle'
    current_role: str = 'source'
    rpo: int = 300
    generation_number: int = 0
    current_snapshot_progress: int = 100
    current_snapshot_id: Optional[int] = None
    state_reason: str = ''
    last_sync_time: Optional[int] = None
    description: str = ''
    # Volume name -> the layer of its last complete image, while a cycle
    # is being applied on the target.
    consistent: dict = private(factory=dict)


@k2
class PeerVolume(model.Model):
    KIND = 'replication/peer_volumes'
    name: str
    local_volume: Ref
    replication_session: Ref
    # The image last shipped (source side), and the size it had.
    base: Optional[int] = private()
    size: Optional[int] = private()


@k2
class PeerVolumeGroup(model.Model):
    KIND = 'replication/peer_volume_groups'
    name: str
    replication_session: Ref


@k2
class RpoPoint(model.Model):
    KIND = 'replication/rpo_history'
    replication_session: Ref


# -- computed ----------------------------------------------------------------
@k2
class SystemState(model.Model):
    KIND = 'system/state'
    state: str
    system_name: str
    system_id: str
    system_version: str
    rest_api_version: str
    iscsi_qualified_target_name: str
    current_user_role: str
    system_connectivity_type: str


@k2
class Capacity(model.Model):
    KIND = 'system/capacity'
    state: str
    total: int
    free: int
    allocated: int
    allocated_volumes: int
    allocated_snapshots_and_views: int
    provisioned: int
    provisioned_volumes: int
    provisioned_snapshots: int
    provisioned_views: int
    logical: int
    physical: int
    reserved: int
    is_reclamation_in_progress: bool


@k2
class SystemStats(model.Model):
    """A K2 stats point: rates since the previous sample."""
    KIND = 'stats/system'
    timestamp: int
    iops_avg: int
    read_iops_avg: int
    write_iops_avg: int
    throughput_avg: int
    read_throughput_avg: int
    write_throughput_avg: int
    latency_avg: int
    read_latency_avg: int
    write_latency_avg: int


@k2
class VolumeStats(SystemStats):
    KIND = 'stats/volumes'
    volume: Ref


STORED = (VolumeGroup, Volume, Snapshot, Volsnap, RetentionPolicy, Host,
          HostGroup, HostAuthProfile, HostIqn, HostFcPort, Mapping, NetIp,
          NetPort, FcPort, WanPort, Peer, Session, PeerVolume,
          PeerVolumeGroup, RpoPoint)
COMPUTED = (SystemState, Capacity, SystemStats, VolumeStats)
BY_KIND = {m.KIND: m for m in STORED + COMPUTED}
# The store finds each stored kind under the keys its model gives.
KEY_FUNCTIONS = {m.KIND: (lambda m: lambda row: m.from_row(row).keys())(m)
                 for m in STORED}
# Each stored kind keeps its stored public fields as the wire has them
# (``WIRE``), so that a page of any kind is sent as stored with only the
# derived fields added (``backend.K2Backend.page_text``).
WIRE = 'wire'
# How a model's fields become its wire form (``model.Model.to_wire``,
# ``model.Ref.to_wire``): a change there moves it, so that the views
# written before are written again.
WIRE_FORM = 1


def _wire(obj):
    return {WIRE: obj.to_wire()}


VIEW_FUNCTIONS = {m.KIND: views.Views(m, _wire, WIRE_FORM) for m in STORED}
# Totals the store keeps (one row each): every stored kind's number of
# objects (a page's total, the driver's volume count) and the volumes'
# provisioned size (the capacity poll).
KEPT = tuple((m.KIND, store.COUNT) for m in STORED) + ((Volume.KIND, 'size'),)
