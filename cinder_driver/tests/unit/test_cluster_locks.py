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

"""The coordination locks two services of one cluster must share."""

import threading
import time
from unittest import mock

from cinder import context
from cinder import coordination
from cinder.tests.unit import fake_volume
from cinder.tests.unit import test
from cinder.volume import configuration
from cinder.volume import driver as volume_driver
from oslo_utils import uuidutils
import tooz.coordination

from cinder_driver.common import locks
from cinder_driver.k2 import driver as k2_driver
from cinder_driver.linstor import driver as linstor_driver

CONNECTOR = {'host': 'compute-1', 'initiator': 'iqn.2026-11.io.example:c1'}


class ClusterLockNamesTestCase(test.TestCase):

    def setUp(self):
        super().setUp()
        self.ctx = context.get_admin_context()
        self.names = []
        lock = mock.MagicMock()
        self.mock_object(coordination.COORDINATOR, 'get_lock',
                         side_effect=lambda name: self.names.append(name)
                         or lock)
        self.volume = fake_volume.fake_volume_obj(
            self.ctx, id=uuidutils.generate_uuid())

    def driver(self, cls, host, cluster_name):
        conf = configuration.Configuration(volume_driver.volume_opts,
                                           config_group='locks')
        drv = cls(configuration=conf, host=host, cluster_name=cluster_name)
        adapter = mock.Mock(fc_targets=[])
        adapter.terminate_connection.return_value = False
        if isinstance(getattr(cls, 'adapter', None), property):
            # K2: the adapter of the active array.
            drv.adapters = {k2_driver.PRIMARY: adapter}
        else:
            drv.adapter = adapter
        return drv

    def attach_lock_names(self, cls, *services):
        names = []
        for host, cluster_name in services:
            drv = self.driver(cls, host, cluster_name)
            self.names = []
            drv.initialize_connection(self.volume, CONNECTOR)
            drv.terminate_connection(self.volume, CONNECTOR)
            names.append(self.names)
        return names

    def test_members_of_a_cluster_share_the_host_lock(self):
        for cls in (k2_driver.K2ISCSIDriver, k2_driver.K2FCDriver,
                    linstor_driver.LinstorDrbdDriver):
            a, b = self.attach_lock_names(
                cls, ('node-a@k2-iscsi', 'flash@k2-iscsi'),
                ('node-b@k2-iscsi', 'flash@k2-iscsi'))
            self.assertEqual(a, b, cls.__name__)
            self.assertEqual(2, len(a))
            self.assertIn('compute-1', a[0])

    def test_services_without_a_cluster_keep_their_own_lock(self):
        a, b = self.attach_lock_names(
            k2_driver.K2ISCSIDriver, ('node-a@k2-iscsi', None),
            ('node-b@k2-iscsi', None))
        self.assertNotEqual(a, b)

    def test_two_clusters_do_not_share_host_locks(self):
        a, b = self.attach_lock_names(
            k2_driver.K2ISCSIDriver, ('node-a@k2-iscsi', 'one@k2-iscsi'),
            ('node-b@k2-iscsi', 'two@k2-iscsi'))
        self.assertNotEqual(a, b)


class BlockingLock(object):
    """A coordinator lock whose acquire hangs, as tooz's does while the
    coordinator is unreachable, until ``free`` is set.
    """

    name = b'_tooz_cinder-cinder-flash-attach-flash@k2-iscsi-compute-1_lock'

    def __init__(self, outcome=True):
        self.free = threading.Event()
        self.outcome = outcome
        self.released = threading.Event()

    def acquire(self, blocking=True):
        self.free.wait(10)
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome

    def release(self):
        self.released.set()


class BoundedHostLockTestCase(test.TestCase):
    """An attach or detach that cannot get its host lock in time fails
    before it touches the array (cinder-api has given up on it by then).
    """

    def setUp(self):
        super().setUp()
        self.ctx = context.get_admin_context()
        self.volume = fake_volume.fake_volume_obj(
            self.ctx, id=uuidutils.generate_uuid())

    def driver(self, lock):
        self.mock_object(coordination.COORDINATOR, 'get_lock',
                         return_value=lock)
        conf = configuration.Configuration(volume_driver.volume_opts,
                                           config_group='bounded')
        drv = k2_driver.K2ISCSIDriver(configuration=conf,
                                      host='node-a@k2-iscsi',
                                      cluster_name='flash@k2-iscsi')
        self.override_config('flash_lock_wait', 1.0, group='bounded')
        self.adapter = mock.Mock()
        drv.adapters = {k2_driver.PRIMARY: self.adapter}
        return drv

    def test_attach_fails_unmapped_when_the_lock_does_not_come(self):
        lock = BlockingLock()
        drv = self.driver(lock)
        started = time.monotonic()
        self.assertRaises(locks.LockWaitTimeout, drv.initialize_connection,
                          self.volume, CONNECTOR)
        self.assertLess(time.monotonic() - started, 5)
        self.adapter.initialize_connection.assert_not_called()
        # The lock, granted after the wait was given up, is given back.
        lock.free.set()
        self.assertTrue(lock.released.wait(5))
        self.adapter.initialize_connection.assert_not_called()

    def test_detach_fails_mapped_when_the_coordinator_fails(self):
        lock = BlockingLock(outcome=tooz.coordination.ToozConnectionError(
            'Connection refused'))
        lock.free.set()
        drv = self.driver(lock)
        self.assertRaises(locks.LockWaitTimeout, drv.terminate_connection,
                          self.volume, CONNECTOR)
        self.adapter.terminate_connection.assert_not_called()
        self.assertFalse(lock.released.is_set())

    def test_attach_runs_under_the_lock_and_releases_it(self):
        lock = BlockingLock()
        lock.free.set()
        drv = self.driver(lock)
        self.adapter.initialize_connection.return_value = {'data': {}}
        self.assertEqual({'data': {}}, drv.initialize_connection(
            self.volume, CONNECTOR))
        self.assertTrue(lock.released.is_set())


class UnfairLock(object):
    """A coordinator serving the latest of its waiters first, as a
    polling one can: a release goes to whoever asks next, not to whoever
    asked first. One state for every handle of the name.
    """

    def __init__(self):
        self.cond = threading.Condition()
        self.owner = None
        self.waiting = []
        self.most_waiting = 0

    def handle(self):
        return _Handle(self)


class _Handle(object):

    name = b'_tooz_cinder-cinder-flash-attach-flash-compute-1_lock'

    def __init__(self, state):
        self.state = state

    def acquire(self, blocking=True):
        state = self.state
        deadline = time.monotonic() + float(blocking)
        with state.cond:
            state.waiting.append(self)
            state.most_waiting = max(state.most_waiting, len(state.waiting))
            try:
                while state.owner is not None or \
                        state.waiting[-1] is not self:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    state.cond.wait(left)
                state.owner = self
                return True
            finally:
                state.waiting.remove(self)

    def release(self):
        with self.state.cond:
            assert self.state.owner is self
            self.state.owner = None
            self.state.cond.notify_all()


class ArrivalOrderTestCase(test.TestCase):
    """Calls of one service get a lock in the order they asked for it,
    whatever order the coordinator would serve them in.
    """

    def setUp(self):
        super().setUp()
        self.state = UnfairLock()
        self.asked = threading.Semaphore(0)

        def get_lock(name):
            self.asked.release()
            return self.state.handle()
        self.mock_object(coordination.COORDINATOR, 'get_lock',
                         side_effect=get_lock)
        self.order = []
        self.outcomes = {}
        self.threads = []

    def call(self, who, wait, hold=0.0):
        try:
            with locks.held('cinder-flash-attach-flash-compute-1', wait,
                            'initialize_connection'):
                self.order.append(who)
                time.sleep(hold)
            self.outcomes[who] = 'held'
        except locks.LockWaitTimeout:
            self.outcomes[who] = 'gave up'

    def arrive(self, who, wait, hold=0.0):
        thread = threading.Thread(target=self.call, args=(who, wait, hold))
        thread.start()
        self.threads.append(thread)
        self.assertTrue(self.asked.acquire(timeout=5))
        # Past the call's arrival: it is in line (or polling) before the
        # next one asks.
        time.sleep(0.1)

    def join(self):
        for thread in self.threads:
            thread.join(20)
            self.assertFalse(thread.is_alive())

    def test_waiters_get_the_lock_in_arrival_order(self):
        self.arrive('first', 10, hold=0.5)
        for who in 'abcde':
            self.arrive(who, 10)
        self.join()
        self.assertEqual(['first', 'a', 'b', 'c', 'd', 'e'], self.order)
        # One contender at the coordinator, however many calls wait.
        self.assertEqual(1, self.state.most_waiting)

    def test_a_waiter_that_gives_up_does_not_block_the_line(self):
        self.arrive('first', 10, hold=1.0)
        self.arrive('hasty', 0.3)
        self.arrive('b', 10)
        self.arrive('c', 10)
        started = time.monotonic()
        self.join()
        self.assertEqual('gave up', self.outcomes['hasty'])
        self.assertEqual(['first', 'b', 'c'], self.order)
        self.assertLess(time.monotonic() - started, 5)

    def test_the_wait_stays_bounded_behind_a_long_holder(self):
        self.arrive('first', 10, hold=3.0)
        started = time.monotonic()
        self.arrive('a', 0.5)
        self.arrive('b', 0.8)
        self.threads[1].join(5)
        self.threads[2].join(5)
        # Each gave up within its own wait, the line moving or not.
        self.assertLess(time.monotonic() - started, 2.0)
        self.assertEqual({'a': 'gave up', 'b': 'gave up'}, self.outcomes)
        self.join()
        self.assertEqual(['first'], self.order)
        self.assertEqual({}, locks._LINES)

    def test_another_services_contender_gets_the_next_release(self):
        self.arrive('first', 10, hold=0.5)
        for who in 'abc':
            self.arrive(who, 10)

        def other_service():
            # Its one contender polls, as tooz's redis driver does (every
            # 0.1 s; here more often than the line's gap).
            handle = self.state.handle()
            deadline = time.monotonic() + 10
            while not handle.acquire(blocking=0):
                if time.monotonic() > deadline:
                    return
                time.sleep(0.04)
            self.order.append('other')
            time.sleep(0.05)
            handle.release()
        other = threading.Thread(target=other_service)
        other.start()
        self.threads.append(other)
        self.join()
        # The line leaves a poll's time after each release: the other
        # service's one contender is not kept waiting for the whole line.
        self.assertEqual(['first', 'other', 'a', 'b', 'c'], self.order)
