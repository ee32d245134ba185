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

"""Concurrent volume work through the Cinder API, as users and Nova make
it: create, clone, snapshot, snapshot delete, attach, detach, extend and
delete on every backend type, several at once, most attaches to one
compute host.

Each operation waits for its end state and is recorded with its times,
so the soak can tell what was in flight when a service died and when it
ended. Failures are followed up as their callers would: Nova asks again
at once for a connection or a detach that Cinder answered 500 or 504
(five tries, as Nova's Cinder client does) and deletes an attachment
whose connection still failed; a user deletes what ended in error
(:meth:`Load.settle`).
"""

import collections
import random
import socket
import threading
import time
import uuid

from tools.gate import cinder_api

# Two compute hosts. LINSTOR attaches on the node named by the
# connector's host: this machine (the diskless node) and a satellite.
HOT_HOST = {'host': socket.gethostname(), 'ip': '127.0.0.1',
            'initiator': 'iqn.2026-11.io.cinder-flash:cluster-hot',
            'platform': 'x86_64', 'os_type': 'linux', 'multipath': False}
OTHER_HOST = dict(HOT_HOST, host='sat-3',
                  initiator='iqn.2026-11.io.cinder-flash:cluster-other')
CONNECTORS = (HOT_HOST, OTHER_HOST)
# How long an operation may take before it counts as lost.
OP_TIMEOUT = 120
POLL = 1.0
OPS = (('create', 4), ('clone', 2), ('snapshot', 2), ('delete_snapshot', 2),
       ('attach', 4), ('detach', 4), ('extend', 2), ('delete', 3))
# Picks per counted operation a sized run may make in all (a pick that
# finds nothing to work on is not counted).
SKIPS_PER_OPERATION = 4
# Nova's attachment_update and attachment_delete (nova/volume/cinder.py,
# Nova 34) ask again at once when Cinder answers 500 or 504, five tries in
# all, before Nova gives up (and, for an attach, deletes the attachment).
NOVA_TRIES = 5
NOVA_RETRIED = (500, 504)
DONE = {'available', 'in-use', 'error', 'error_deleting', 'error_extending',
        'deleted'}


class Record(object):
    __slots__ = ('name', 'vtype', 'start', 'end', 'outcome', 'detail',
                 'resource', 'request_ids', 'failed_at', 'connected_at')

    def __init__(self, name, vtype, resource=None):
        self.name, self.vtype, self.resource = name, vtype, resource
        self.start, self.end = time.time(), None
        self.outcome, self.detail = None, ''
        self.request_ids = []
        # When a first try failed, if the operation was tried again.
        self.failed_at = None
        # When an attach's connection was handed out (the compute host
        # can reach the volume from then on; what follows is Nova's
        # os-complete, bookkeeping in cinder-api alone).
        self.connected_at = None

    def finish(self, outcome, detail=''):
        self.end, self.outcome, self.detail = time.time(), outcome, detail


class Lost(Exception):
    """The operation did not reach an end state in OP_TIMEOUT."""


class Load(object):
    """The model of what exists (what succeeded) and the operations."""

    def __init__(self, api, types, seed=1, hosts=CONNECTORS):
        self.api, self.types = api, list(types)
        self.hosts = hosts
        self.rnd = random.Random(seed)
        self.lock = threading.Lock()
        # id -> {'type', 'size'}; attachment id -> (volume id, connector)
        self.volumes, self.snapshots, self.attachments = {}, {}, {}
        self.busy = set()
        self.records = []
        self.inflight = {}
        self.errors = collections.Counter()
        self.counts = collections.Counter()
        # Objects whose last operation failed, for settle().
        self.followups = []
        self._current = threading.local()

    # -- bookkeeping ---------------------------------------------------------
    def _choose(self, pool, where=lambda k: True):
        with self.lock:
            free = [k for k in sorted(pool) if k not in self.busy and
                    where(k)]
            if not free:
                return None
            key = self.rnd.choice(free)
            self.busy.add(key)
            return key

    def _note(self, resource_id):
        """The resource the running operation works on, known early."""
        rec = getattr(self._current, 'record', None)
        if rec is not None:
            rec.resource = resource_id
        return resource_id

    def _free(self, *keys):
        with self.lock:
            self.busy.difference_update(keys)

    def _attached(self, vid):
        return any(v == vid for v, _c in self.attachments.values())

    def _has_snapshots(self, vid):
        return any(v == vid for v in self.snapshots.values())

    def _wait(self, get, wanted, gone_ok=False):
        deadline = time.monotonic() + OP_TIMEOUT
        while time.monotonic() < deadline:
            obj = get()
            if obj is None:
                if gone_ok:
                    return 'deleted'
                raise cinder_api.ApiError('GET', '?', 404, 'vanished')
            if obj['status'] in wanted:
                return obj['status']
            time.sleep(POLL)
        raise Lost('still %s after %d s' % (obj['status'], OP_TIMEOUT))

    def _wait_volume(self, vid, gone_ok=False):
        return self._wait(lambda: self.api.volume(vid), DONE, gone_ok)

    def _wait_snapshot(self, sid, gone_ok=False):
        return self._wait(lambda: self.api.snapshot(sid),
                          {'available', 'error', 'error_deleting'}, gone_ok)

    # -- operations: each returns a short outcome or raises ------------------
    def op_create(self, vtype=None):
        vtype = vtype or self.rnd.choice(self.types)
        vol = self.api.create_volume(1, vtype, 'cl-' + uuid.uuid4().hex[:8])
        return self._settle_new(self._note(vol['id']), vtype, 1)

    def _settle_new(self, vid, vtype, size):
        status = self._wait_volume(vid)
        if status == 'available':
            with self.lock:
                self.volumes[vid] = {'type': vtype, 'size': size}
        else:
            self.followups.append(('volume', vid))
            raise RuntimeError('volume %s ended %s' % (vid, status))
        return vid

    def op_clone(self):
        src = self._choose(self.volumes)
        if src is None:
            return self.op_create()
        try:
            info = self.volumes[src]
            vol = self.api.create_volume(info['size'], info['type'],
                                         'cl-' + uuid.uuid4().hex[:8],
                                         source_volid=src)
            return self._settle_new(self._note(vol['id']), info['type'],
                                    info['size'])
        finally:
            self._free(src)

    def op_snapshot(self):
        vid = self._choose(self.volumes)
        if vid is None:
            return None
        try:
            snap = self.api.create_snapshot(vid, 'cl-' + uuid.uuid4().hex[:8])
            self._note(snap['id'])
            status = self._wait_snapshot(snap['id'])
            with self.lock:
                self.snapshots[snap['id']] = vid
            if status != 'available':
                self.followups.append(('snapshot', snap['id']))
                raise RuntimeError('snapshot ended %s' % status)
            return snap['id']
        finally:
            self._free(vid)

    def op_delete_snapshot(self):
        sid = self._choose(self.snapshots)
        if sid is not None:
            self._remove('snapshot', self.snapshots, sid,
                         self.api.delete_snapshot, self._wait_snapshot)
        return sid

    def _remove(self, kind, pool, key, delete, wait):
        """Delete one volume or snapshot chosen from ``pool``, to its end."""
        try:
            self._note(key)
            delete(key)
            status = wait(key, gone_ok=True)
            if status != 'deleted':
                self.followups.append((kind, key))
                raise RuntimeError('%s delete ended %s' % (kind, status))
            with self.lock:
                pool.pop(key, None)
        finally:
            self._free(key)

    def op_attach(self, connector=None, vid=None):
        if vid is None:
            vid = self._choose(self.volumes, lambda v: not self._attached(v))
            if vid is None:
                return None
        connector = connector or (HOT_HOST if self.rnd.random() < 0.75
                                  else OTHER_HOST)
        try:
            self._note(vid)
            att_id = self._attach(vid, connector)
            with self.lock:
                self.attachments[att_id] = (vid, connector)
            return att_id
        finally:
            self._free(vid)

    def _as_nova(self, what, call, *args):
        """``call`` as Nova makes it: asked again at once while Cinder
        answers 500 or 504, NOVA_TRIES times in all.

        An attach or a detach lost with the member that had taken it is
        answered 500 when cinder-api's ``rpc_response_timeout`` runs out;
        the next try goes to a live member.
        """
        for attempt in range(1, NOVA_TRIES + 1):
            try:
                return call(*args)
            except cinder_api.ApiError as e:
                if e.status not in NOVA_RETRIED or attempt == NOVA_TRIES:
                    raise
                rec = getattr(self._current, 'record', None)
                if rec is not None and rec.failed_at is None:
                    rec.failed_at = time.time()
                self.counts['%s asked again' % what] += 1

    def _attach(self, vid, connector):
        att = self.api.reserve(vid)
        try:
            # The same attachment each try: the driver finds a mapping an
            # earlier try made and hands it out again.
            self._as_nova('attach', self.api.connect, att['id'], connector)
            rec = getattr(self._current, 'record', None)
            if rec is not None:
                rec.connected_at = time.time()
            self.api.complete(att['id'])
        except Exception as e:
            # Nova's rollback of a failed connection.
            self._detach_quietly(att['id'])
            if getattr(e, 'status', None) in NOVA_RETRIED:
                self._unmap_lost(vid, connector)
            raise
        return att['id']

    def _unmap_lost(self, vid, connector):
        """The operator's step after an attach whose every try failed.

        The rollback deletes an attachment Cinder never saw connected
        without calling the backend, so a mapping a lost try made stays;
        the admin action ``os-terminate_connection`` with the compute
        host's connector removes it (a no-op if there is none).
        """
        try:
            self.api.terminate_connection(vid, connector)
            self.counts['unmapped after a failed attach'] += 1
        except Exception:
            self.followups.append(('unmap', (vid, connector)))

    def _detach_quietly(self, att_id):
        try:
            self._as_nova('detach', self.api.detach, att_id)
        except Exception:
            self.followups.append(('attachment', att_id))

    def op_detach(self):
        att_id = self._choose(self.attachments)
        if att_id is None:
            return None
        try:
            self._note(self.attachments[att_id][0])
            try:
                self._as_nova('detach', self.api.detach, att_id)
            except Exception as e:
                if getattr(e, 'status', 500) < 500:
                    raise
                # Asked for again once the round's faults are over
                # (settle), as an operator would.
                self.followups.append(('attachment', att_id))
                with self.lock:
                    self.attachments.pop(att_id, None)
                raise
            with self.lock:
                self.attachments.pop(att_id, None)
        finally:
            self._free(att_id)

    def op_extend(self):
        vid = self._choose(self.volumes, lambda v: not self._attached(v))
        if vid is None:
            return None
        try:
            self._note(vid)
            new = self.volumes[vid]['size'] + 1
            self.api.extend(vid, new)
            status = self._wait_volume(vid)
            vol = self.api.volume(vid)
            if status == 'available' and vol['size'] == new:
                with self.lock:
                    self.volumes[vid]['size'] = new
                return vid
            self.followups.append(('volume', vid))
            raise RuntimeError('extend ended %s, size %s' % (
                status, vol and vol['size']))
        finally:
            self._free(vid)

    def op_delete(self):
        vid = self._choose(self.volumes, lambda v: not (
            self._attached(v) or self._has_snapshots(v)))
        if vid is not None:
            self._remove('volume', self.volumes, vid, self.api.delete_volume,
                         self._wait_volume)
        return vid

    # -- running -------------------------------------------------------------
    def run_one(self, name, *args):
        rec = Record(name, None)
        key = id(rec)
        self._current.record = rec
        rec.request_ids = self.api.track()
        with self.lock:
            self.inflight[key] = rec
        try:
            getattr(self, 'op_' + name)(*args)
            rec.finish('ok' if rec.resource is not None else 'skip')
        except Lost as e:
            rec.finish('lost', str(e))
        except Exception as e:
            rec.finish('failed', '%s: %s' % (type(e).__name__, e))
            self.errors[type(e).__name__] += 1
        finally:
            with self.lock:
                self.inflight.pop(key, None)
                self.records.append(rec)
        return rec

    def pick(self):
        names = [n for n, w in OPS for _i in range(w)]
        with self.lock:
            return self.rnd.choice(names)

    def run(self, operations=None, seconds=None, workers=6, stop=None):
        """``operations`` in all or for ``seconds``, ``workers`` at once.

        An operation that found nothing to work on (a detach with nothing
        attached) does not count towards ``operations``: two runs of the
        same size then do the same amount of work whatever the pools held
        when they began. At most ``SKIPS_PER_OPERATION`` times as many
        picks as ``operations`` are made in all.
        """
        stop = stop or threading.Event()
        wanted = operations or 1 << 30
        # [operations performed or running, picks left]
        budget = [0, wanted * SKIPS_PER_OPERATION]
        deadline = time.monotonic() + (seconds or 1e9)

        def worker():
            while not stop.is_set() and time.monotonic() < deadline:
                with self.lock:
                    if budget[0] >= wanted or budget[1] <= 0:
                        return
                    budget[0] += 1
                    budget[1] -= 1
                rec = self.run_one(self.pick())
                if rec.outcome == 'skip':
                    with self.lock:
                        budget[0] -= 1

        threads = [threading.Thread(target=worker, daemon=True)
                   for _i in range(workers)]
        started = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return started, time.time()

    def burst(self, count, connector=HOT_HOST):
        """``count`` volumes attached to one host at the same moment."""
        vids = []
        for _i in range(count):
            vid = self._choose(self.volumes,
                               lambda v: not self._attached(v))
            if vid is None:
                break
            vids.append(vid)
        # Each attach frees its volume when it ends.
        threads = [threading.Thread(target=self.run_one,
                                    args=('attach', connector, vid))
                   for vid in vids]
        for t in threads:
            t.start()
        return threads

    def settle(self):
        """What users and Nova do about failures, once the faults end."""
        done = collections.Counter()
        followups, self.followups = self.followups, []
        for kind, oid in followups:
            try:
                if kind == 'attachment':
                    self.api.detach(oid)
                elif kind == 'unmap':
                    self.api.terminate_connection(*oid)
                elif kind == 'snapshot':
                    self._settle_snapshot(oid)
                else:
                    self._settle_volume(oid)
                done[kind + ' followed up'] += 1
            except Exception as e:
                done['follow-up failed: %s %s' % (kind, e)] += 1
        return done

    def _settle_snapshot(self, sid):
        snap = self.api.snapshot(sid)
        if snap is None:
            self.snapshots.pop(sid, None)
            return
        if snap['status'] in ('error', 'error_deleting'):
            self.api.delete_snapshot(sid)
            if self._wait_snapshot(sid, gone_ok=True) == 'deleted':
                self.snapshots.pop(sid, None)

    def _settle_volume(self, vid):
        vol = self.api.volume(vid)
        if vol is None:
            self.volumes.pop(vid, None)
            return
        if vol['status'] == 'error_extending':
            # An admin's answer: the array refused, the size is unchanged.
            self.api.reset_volume(vid, 'available')
        elif vol['status'] in ('error', 'error_deleting') and not any(
                v == vid for v in self.snapshots.values()):
            self.api.delete_volume(vid)
            if self._wait_volume(vid, gone_ok=True) == 'deleted':
                self.volumes.pop(vid, None)
        if vid in self.volumes and vol['size'] != self.volumes[vid]['size']:
            self.volumes[vid]['size'] = vol['size']

    def teardown(self):
        """Detach and delete everything the load made."""
        for att_id in list(self.attachments):
            self._detach_quietly(att_id)
            self.attachments.pop(att_id, None)
        # Snapshots first: Cinder refuses to delete a volume that has some.
        self._delete_all(self.snapshots, self.api.delete_snapshot,
                         self._wait_snapshot)
        self._delete_all(self.volumes, self.api.delete_volume,
                         self._wait_volume)

    @staticmethod
    def _delete_all(pool, delete, wait):
        """Ask for every delete at once, then wait for each."""
        for key in list(pool):
            try:
                delete(key)
            except cinder_api.ApiError:
                pass
        for key in list(pool):
            wait(key, gone_ok=True)
            pool.pop(key, None)
