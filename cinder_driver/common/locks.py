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

"""A coordination lock served in arrival order, with a wait bounded in
wall-clock time.

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

tooz's coordinators do not serve waiters in order: every waiter polls,
and whoever polls first after a release wins, so a call that asked
early can lose to one that asked later, again and again, until its
wait runs out (a burst of attaches of one host is such a queue; an
attach a dead member lost and the caller retried joins it late). Within
one service the waiters of a lock therefore line up here in arrival
order, and only one helper thread (a green thread under eventlet) asks
the coordinator for the lock, on behalf of the waiter at the head of
the line; when it gets the lock, it hands it to whoever is at the head
then. Between services the coordinator still decides, but each service
presents one contender per lock however many of its calls wait, and
leaves the other's contender a poll after each release (``_GAP``). A
waiter that gives up leaves the line; a helper whose lock comes after
every waiter gave up releases it at once. Log lines have the shape of
Cinder's coordination module, with the operation's name as the owner.
"""

import collections
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


class _Turn(object):
    """One call waiting for, then holding, a lock of its line."""

    def __init__(self, handle, deadline):
        # The call's own tooz lock object, which a helper asks with while
        # the call is first; the lock granted may be another's handle.
        self.handle = handle
        self.deadline = deadline
        self.granted = threading.Event()
        self.lock = None
        self.error = None

    def left(self):
        return max(0.0, self.deadline - time.monotonic())


class _Line(object):
    """The calls of this service waiting for one lock, in arrival order.

    At most one helper thread asks the coordinator at a time, and only
    while no call of the line holds the lock: the calls of one service
    never poll against each other. Every field is guarded by ``_GUARD``;
    nothing under it blocks or talks to the coordinator.
    """

    def __init__(self, name):
        self.name = name
        self.turns = collections.deque()
        self.holder = None
        self.asking = False

    def idle(self):
        return not (self.turns or self.holder or self.asking)

    def pump(self, after_release=False):
        """The helper to start, once out of the guard, if the head of
        the line needs one (starting a thread can switch green threads).
        """
        if self.asking or self.holder is not None or not self.turns:
            return None
        self.asking = True
        return threading.Thread(
            target=self.ask, daemon=True,
            args=(self.turns[0], _GAP if after_release else 0.0))

    def ask(self, head, gap):
        # Right after this service released the lock, leave another
        # service's contender its poll before this line asks again.
        time.sleep(gap)
        lock, error = head.handle, None
        try:
            acquired = bool(lock.acquire(blocking=head.left()))
        except Exception as e:
            acquired, error = False, e
        with _GUARD:
            self.asking = False
            turn = self.turns[0] if self.turns else None
            if acquired and turn is not None:
                # Whoever is first now: ``head`` may have given up.
                self.turns.popleft()
                self.holder, turn.lock = turn, lock
                turn.granted.set()
            elif not acquired and turn is head:
                # The coordinator refused (or failed) the head within
                # its own wait: its turn is over.
                self.turns.popleft()
                turn.error = error
                turn.granted.set()
            helper = self.pump()
            self.forget_if_idle()
        _start(helper)
        if acquired and turn is None:
            _release(lock, _name(lock), 'a wait given up')

    def leave(self, turn):
        """``turn`` gives up; True if the lock was handed to it anyway."""
        with _GUARD:
            if turn.lock is not None:
                return True
            if turn in self.turns:
                self.turns.remove(turn)
            self.forget_if_idle()
            return False

    def done(self, turn):
        with _GUARD:
            if self.holder is turn:
                self.holder = None
            helper = self.pump(after_release=True)
            self.forget_if_idle()
        _start(helper)

    def forget_if_idle(self):
        if self.idle() and _LINES.get(self.name) is self:
            del _LINES[self.name]


# One line per lock name with calls in it; the guard covers every line.
_LINES = {}
_GUARD = threading.Lock()
# tooz's coordinators do not queue waiters across services either: a
# service's contender polls (every 0.1 s with tooz's redis driver, as
# redis-py's lock does; file and etcd3gw back off up to 0.1 and 1 s).
# Were the next call of this line to ask at once after a release, it
# would win every release while the line is not empty, and a call of
# the other service would wait until the line drains or past its bound.
# So after a release the line waits one Redis poll before asking again.
_GAP = 0.1


def _join(name, handle, wait):
    turn = _Turn(handle, time.monotonic() + wait)
    with _GUARD:
        line = _LINES.get(name)
        if line is None:
            line = _LINES[name] = _Line(name)
        line.turns.append(turn)
        helper = line.pump()
    _start(helper)
    return line, turn


def _start(helper):
    if helper is not None:
        helper.start()


@contextlib.contextmanager
def held(name, wait, owner):
    """Hold the coordination lock ``name`` for the ``with`` block.

    Calls of this service asking for ``name`` get it in the order they
    asked. Raises LockWaitTimeout, before the block runs, if the lock is
    not acquired within ``wait`` seconds whatever the coordinator does
    meanwhile. A context manager rather than a wrapper: the locked call
    stays one frame below its caller.
    """
    handle = coordination.COORDINATOR.get_lock(name)
    full = _name(handle)
    LOG.debug('Acquiring lock "%s" by "%s"', full, owner)
    started = time.monotonic()
    line, turn = _join(name, handle, wait)
    turn.granted.wait(turn.left())
    if turn.lock is None and not line.leave(turn):
        LOG.warning('Lock "%s" not acquired by "%s" in %0.1fs%s', full,
                    owner, time.monotonic() - started,
                    ': %s' % turn.error if turn.error else '')
        raise LockWaitTimeout(name=full, wait=wait)
    acquired_at = time.monotonic()
    LOG.debug('Lock "%s" acquired by "%s" :: waited %0.3fs', full, owner,
              acquired_at - started)
    try:
        yield
    finally:
        _release(turn.lock, full, owner, acquired_at)
        line.done(turn)
