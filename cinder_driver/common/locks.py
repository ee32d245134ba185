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

"""A coordination lock whose wait has a bound in wall-clock time.

cinder-api waits ``rpc_response_timeout`` for the answer to an attach or
a detach; past it, it answers the caller with an error and forgets the
call, while the volume service goes on. A mapping made or removed after
that moment is one Cinder does not know about. Waiting for a lock is
where such a call can stay longest: behind another attach, behind the
lease of a lock a dead service held, or, with the coordinator down,
behind tooz's reconnection attempts, which ignore the lock's own
blocking timeout. So the wait is bounded here, by the clock, and a call
that did not get its lock in time fails before it changes anything on
the array.

The lock is taken in a helper thread (a green thread under eventlet); if
the wait is given up and the lock comes later, the helper releases it at
once. Log lines have the shape of Cinder's coordination module, with the
operation's name as the owner.
"""

import contextlib
import threading
import time

from cinder import coordination
from cinder import exception
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class LockWaitTimeout(exception.VolumeBackendAPIException):
    message = ('Lock %(name)s not acquired within %(wait).0f s '
               '(flash_lock_wait); nothing was changed on the array')


def _name(lock):
    name = lock.name
    return name.decode() if isinstance(name, bytes) else str(name)


def _release(lock, name, owner, acquired_at=None):
    try:
        lock.release()
    except Exception as e:
        # The lock's lease frees it in the coordinator.
        LOG.error('Failed to release lock "%s": %s', name, e)
        return
    if acquired_at is not None:
        LOG.debug('Lock "%s" released by "%s" :: held %0.3fs', name, owner,
                  time.monotonic() - acquired_at)


class _Taker(object):
    """Acquires ``lock`` in a thread; gives it back if nobody waits."""

    def __init__(self, lock, wait):
        self.lock, self.wait = lock, wait
        self.done = threading.Event()
        self.guard = threading.Lock()
        self.abandoned = False
        self.acquired = False
        self.error = None

    def run(self):
        try:
            acquired = bool(self.lock.acquire(blocking=self.wait))
        except Exception as e:
            acquired, self.error = False, e
        with self.guard:
            self.acquired = acquired
            late = self.abandoned
            self.done.set()
        if late and acquired:
            _release(self.lock, _name(self.lock), 'a wait given up')

    def take(self):
        """True if the lock is ours within ``wait`` seconds."""
        threading.Thread(target=self.run, daemon=True).start()
        self.done.wait(self.wait)
        with self.guard:
            if not self.done.is_set():
                self.abandoned = True
                return False
        return self.acquired


@contextlib.contextmanager
def held(name, wait, owner):
    """Hold the coordination lock ``name`` for the ``with`` block.

    Raises LockWaitTimeout, before the block runs, if the lock is not
    acquired within ``wait`` seconds whatever the coordinator does
    meanwhile. A context manager rather than a wrapper: the locked call
    stays one frame below its caller.
    """
    lock = coordination.COORDINATOR.get_lock(name)
    full = _name(lock)
    LOG.debug('Acquiring lock "%s" by "%s"', full, owner)
    started = time.monotonic()
    taker = _Taker(lock, wait)
    if not taker.take():
        LOG.warning('Lock "%s" not acquired by "%s" in %0.1fs%s', full,
                    owner, time.monotonic() - started,
                    ': %s' % taker.error if taker.error else '')
        raise LockWaitTimeout(name=full, wait=wait)
    acquired_at = time.monotonic()
    LOG.debug('Lock "%s" acquired by "%s" :: waited %0.3fs', full, owner,
              acquired_at - started)
    try:
        yield
    finally:
        _release(lock, full, owner, acquired_at)
