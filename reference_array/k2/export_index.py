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

"""What each K2 host IQN sees, kept current by the K2 writes themselves.

``entries`` maps every registered host IQN to a ``devices.Export``: its
host's CHAP profile and its host's mappings as LUNs. The target reads it
at a login and when a session learns its LUNs, without reading the store.

It is built whole once, when the store is opened (a restart or a kill -9
finds it as the database says). After that each write of a host, host
IQN, CHAP profile, mapping, volume or snapshot changes the entries that
object touches, and no others (``put``, ``deleted``: the
records tell the index, in the writer's transaction). A transaction that
rolls back after it changed the index has the index built whole again:
rare, and always right.

Mapped volumes, volsnaps and snapshots are not deleted (K2 refuses it),
so their deletes change nothing here: the mapping's delete does. A
volsnap's serial and size never change; whether it is writable is its
snapshot's (``is_exposable``), so a snapshot's write changes its mapped
volsnaps' LUNs.

The ``Export`` of a host and its LUN maps are replaced, never changed in
place: a session may hold the map it was given.
"""

import collections

from reference_array.core import devices
from reference_array.k2 import models

Ref = models.Ref


def read_only(records, obj):
    """Volsnaps are read-only unless their snapshot is an exposed view."""
    if getattr(obj, 'read_only', False):
        return True
    if not isinstance(obj, models.Volsnap):
        return False
    snap = records.resolve(obj.snapshot)
    return not (snap and snap.is_exposable)


class ExportIndex(object):

    def __init__(self, records, device, follow=True):
        """``device(obj, read_only)``: the LUN device of a mapped volume or
        volsnap; ``follow``: kept current by the records' writes (else
        built once, as a check of one that is).
        """
        self.records = records
        self.store = records.store
        self._device = device
        self.entries = {}
        # The store generation of the last change made inside a
        # transaction: if that transaction rolls back, build again.
        self._touched = None
        with self.store.lock:
            self.build()
            if follow:
                records.follow(self)
                self.store.call_after_rollbacks(self._rolled_back)

    # -- whole build ---------------------------------------------------------
    def _reset(self):
        self._ports = {}          # port id -> (iqn, host id)
        self._host_ports = collections.defaultdict(set)  # host -> ports
        self._profile_of = {}     # host id -> profile id or None
        self._profile_hosts = collections.defaultdict(set)
        self._chaps = {}          # profile id -> (user, secret)
        self._mappings = {}       # mapping id -> (host id, lun, path)
        self._mapped = collections.defaultdict(set)  # path -> mapping ids
        self._luns = {}           # host id -> {lun: device}
        self._devices = {}        # mapped path -> (key, device)
        self._views = collections.defaultdict(set)  # snapshot -> volsnaps
        self._view_of = {}        # mapped volsnap -> its snapshot

    def build(self):
        """Index every object of the store (lock held): one read of each
        kind, and one per mapped object.
        """
        self._reset()
        for p in self.records.all(models.HostAuthProfile):
            self._chaps[p.id] = (p.username, p.secret)
        for host in self.records.all(models.Host):
            ref = host.host_auth_profile
            self._profile_of[host.id] = ref.id if ref else None
            if ref:
                self._profile_hosts[ref.id].add(host.id)
        for port in self.records.all(models.HostIqn):
            self._ports[port.id] = (port.iqn, port.host.id)
            self._host_ports[port.host.id].add(port.id)
        for m in self.records.all(models.Mapping):
            self._mappings[m.id] = (m.host.id, m.lun, m.volume.path)
            self._mapped[m.volume.path].add(m.id)
        for path in self._mapped:
            self._refresh_device(path)
        luns = collections.defaultdict(dict)
        for host_id, lun, path in self._mappings.values():
            if path in self._devices:
                luns[host_id][lun] = self._devices[path][1]
        self._luns = dict(luns)
        # The same dict throughout: the target holds it.
        self.entries.clear()
        for host_id in set(self._host_ports):
            self._publish(host_id)

    def state(self):
        """Everything the index holds, as plain values (empty entries
        left out), to compare two indexes.
        """
        def plain(table):
            return {k: sorted(v) if isinstance(v, set) else v
                    for k, v in table.items() if v or v is None}
        luns = {h: {n: d.ref.path for n, d in m.items()}
                for h, m in self._luns.items() if m}
        return dict(
            ports=self._ports, host_ports=plain(self._host_ports),
            profile_of=self._profile_of,
            profile_hosts=plain(self._profile_hosts), chaps=self._chaps,
            mappings=self._mappings, mapped=plain(self._mapped), luns=luns,
            devices={p: e[0] for p, e in self._devices.items()},
            views=plain(self._views), view_of=self._view_of)

    def _rolled_back(self):
        if self._touched == self.store.generation:
            self._touched = None
            self.build()

    # -- pieces --------------------------------------------------------------
    def _publish(self, host_id):
        """Give each IQN of the host its host's Export as it is now."""
        export = devices.Export(
            self._chaps.get(self._profile_of.get(host_id)),
            self._luns.get(host_id, {}))
        for port_id in self._host_ports.get(host_id, ()):
            self.entries[self._ports[port_id][0]] = export

    def _refresh_device(self, path, obj=None):
        """Make the device of a mapped object again if what it is made of
        changed; True if it did. ``obj``: the object, if at hand.
        """
        if obj is None:
            obj = self.records.resolve(Ref.parse(path))
        old = self._devices.get(path)
        if obj is None:
            self._devices.pop(path, None)
            return old is not None
        if isinstance(obj, models.Volsnap):
            self._views[obj.snapshot.path].add(path)
            self._view_of[path] = obj.snapshot.path
        key = (obj.scsi_sn, obj.size, read_only(self.records, obj))
        if old is not None and old[0] == key:
            return False
        self._devices[path] = (key, self._device(obj, key[-1]))
        return True

    def _set_lun(self, host_id, lun, device):
        """Replace the host's LUN map by one with ``lun`` set (None:
        without it).
        """
        luns = dict(self._luns.get(host_id, {}))
        if device is None:
            luns.pop(lun, None)
        else:
            luns[lun] = device
        self._luns[host_id] = luns

    def _remap(self, path):
        """Give every host mapping ``path`` its current device."""
        entry = self._devices.get(path)
        hosts = set()
        for mapping_id in self._mapped.get(path, ()):
            host_id, lun, _ = self._mappings[mapping_id]
            self._set_lun(host_id, lun, entry and entry[1])
            hosts.add(host_id)
        for host_id in hosts:
            self._publish(host_id)

    def _drop_port(self, port_id):
        old = self._ports.pop(port_id, None)
        if old is None:
            return
        iqn, host_id = old
        self._host_ports[host_id].discard(port_id)
        self.entries.pop(iqn, None)

    def _drop_mapping(self, mapping_id):
        old = self._mappings.pop(mapping_id, None)
        if old is None:
            return
        host_id, lun, path = old
        self._mapped[path].discard(mapping_id)
        if not self._mapped[path]:
            del self._mapped[path]
            self._devices.pop(path, None)
            snapshot = self._view_of.pop(path, None)
            if snapshot is not None:
                self._views[snapshot].discard(path)
                if not self._views[snapshot]:
                    del self._views[snapshot]
        self._set_lun(host_id, lun, None)
        self._publish(host_id)

    def _set_profile(self, host_id, profile_id):
        old = self._profile_of.get(host_id)
        if old is not None:
            self._profile_hosts[old].discard(host_id)
        self._profile_of[host_id] = profile_id
        if profile_id is not None:
            self._profile_hosts[profile_id].add(host_id)

    # -- what the records tell -----------------------------------------------
    def _touch(self):
        if self.store.in_transaction():
            self._touched = self.store.generation

    def put(self, obj):
        handler = self._PUT.get(type(obj))
        if handler is not None:
            self._touch()
            handler(self, obj)

    def deleted(self, obj):
        handler = self._DELETED.get(type(obj))
        if handler is not None:
            self._touch()
            handler(self, obj)

    def _put_port(self, port):
        self._drop_port(port.id)
        self._ports[port.id] = (port.iqn, port.host.id)
        self._host_ports[port.host.id].add(port.id)
        self._publish(port.host.id)

    def _deleted_port(self, port):
        self._drop_port(port.id)

    def _put_host(self, host):
        ref = host.host_auth_profile
        self._set_profile(host.id, ref.id if ref else None)
        self._publish(host.id)

    def _deleted_host(self, host):
        # Its ports and mappings are deleted first (K2 refuses to delete
        # a mapped host), each telling the index.
        for port_id in list(self._host_ports.pop(host.id, ())):
            self._drop_port(port_id)
        self._set_profile(host.id, None)
        del self._profile_of[host.id]
        self._luns.pop(host.id, None)

    def _put_profile(self, profile):
        chap = (profile.username, profile.secret)
        if self._chaps.get(profile.id) == chap:
            return
        self._chaps[profile.id] = chap
        for host_id in self._profile_hosts.get(profile.id, ()):
            self._publish(host_id)

    def _deleted_profile(self, profile):
        self._chaps.pop(profile.id, None)
        for host_id in self._profile_hosts.pop(profile.id, ()):
            self._profile_of[host_id] = None
            self._publish(host_id)

    def _put_mapping(self, mapping):
        self._drop_mapping(mapping.id)
        path = mapping.volume.path
        self._mappings[mapping.id] = (mapping.host.id, mapping.lun, path)
        self._mapped[path].add(mapping.id)
        if path not in self._devices:
            self._refresh_device(path)
        entry = self._devices.get(path)
        self._set_lun(mapping.host.id, mapping.lun, entry and entry[1])
        self._publish(mapping.host.id)

    def _deleted_mapping(self, mapping):
        self._drop_mapping(mapping.id)

    def _put_mapped(self, obj):
        """A mapped volume's LUNs change with its size and read_only."""
        path = Ref.to(obj).path
        if path in self._mapped and self._refresh_device(path, obj):
            self._remap(path)

    def _put_snapshot(self, snap):
        """A view's volsnaps are writable while it is exposable."""
        for path in list(self._views.get(Ref.to(snap).path, ())):
            if path in self._mapped and self._refresh_device(path):
                self._remap(path)

    _PUT = {
        models.HostIqn: _put_port,
        models.Host: _put_host,
        models.HostAuthProfile: _put_profile,
        models.Mapping: _put_mapping,
        models.Volume: _put_mapped,
        models.Snapshot: _put_snapshot,
    }
    _DELETED = {
        models.HostIqn: _deleted_port,
        models.Host: _deleted_host,
        models.HostAuthProfile: _deleted_profile,
        models.Mapping: _deleted_mapping,
    }
