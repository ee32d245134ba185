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

"""The cluster soak's lock check, on log lines as Cinder 29 writes them."""

import datetime
import os
import sys
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
from cinder_driver.tests.functional import logfiles  # noqa: E402
from tools.gate import cluster_locks  # noqa: E402

DEATH = datetime.datetime(2026, 11, 23, 1, 0, 0).timestamp()
LEASE = 10


def line(offset, name, what, func='_attach', waited=None,
         logger='cinder.coordination'):
    stamp = datetime.datetime.fromtimestamp(DEATH + offset).strftime(
        '%Y-%m-%d %H:%M:%S.%f')[:-3]
    tail = ' :: waited %.3fs' % waited if waited is not None else \
        ' :: held 0.010s'
    return ('%s 1580 DEBUG %s [None req-1 - - - - - -] '
            'Lock "_tooz_cinder-%s_lock" %s by "%s"%s __acquire '
            '/x/cinder/coordination.py:138\n' % (stamp, logger, name, what,
                                                 func, tail))


class LockLogTestCase(logfiles.LogFileTestCase):

    def dead_log(self):
        return self.write([
            line(-5, 'host-a', 'acquired', waited=0.0),
            line(-4, 'host-a', 'released'),
            line(-2, 'host-b', 'acquired', waited=0.0),
            line(-1, 'volume-1', 'acquired', 'delete_volume', 0.0),
        ])

    def test_locks_held_at_the_death(self):
        self.assertEqual(['_tooz_cinder-host-b_lock',
                          '_tooz_cinder-volume-1_lock'],
                         cluster_locks.held_at(self.dead_log(), DEATH))

    def test_locks_held_by_one_process_of_the_service(self):
        # The service's earlier process died holding host-b; the one
        # running now (pid 1581) holds volume-9 only.
        path = self.write([
            line(-2, 'host-b', 'acquired', waited=0.0),
            line(-1, 'volume-9', 'acquired', waited=0.0).replace(
                ' 1580 ', ' 1581 '),
        ])
        self.assertEqual(['_tooz_cinder-host-b_lock',
                          '_tooz_cinder-volume-9_lock'],
                         cluster_locks.held_at(path, DEATH))
        self.assertEqual(['_tooz_cinder-volume-9_lock'],
                         cluster_locks.held_at(path, DEATH, {'1581'}))
        self.assertEqual([], cluster_locks.held_at(path, DEATH - 1.5,
                                                   {'1581', '1582'}))

    def test_survivor_wait_within_the_lease(self):
        survivor = self.write([
            # Asked 3 s before the death, got it 9 s after: 9 s blocked.
            line(9, 'host-b', 'acquired', waited=12.0),
            line(10, 'host-b', 'released'),
        ])
        rows, problems = cluster_locks.after_death(
            self.dead_log(), [survivor], DEATH, LEASE)
        self.assertEqual([], problems)
        gaps = dict(rows)
        self.assertAlmostEqual(9.0, gaps['_tooz_cinder-host-b_lock'], 2)
        self.assertIsNone(gaps['_tooz_cinder-volume-1_lock'])

    def test_survivor_blocked_past_the_lease_is_a_problem(self):
        survivor = self.write([
            line(14, 'host-b', 'acquired', waited=10.0),
        ])
        rows, problems = cluster_locks.after_death(
            self.dead_log(), [survivor], DEATH, LEASE)
        self.assertEqual(1, len(problems))
        self.assertIn('host-b', problems[0])
        self.assertIn('until 14.0 s after', problems[0])

    def test_waits_are_sorted_longest_first(self):
        path = self.write([
            line(1, 'a', 'acquired', waited=0.5),
            line(2, 'b', 'acquired', waited=3.0),
        ])
        self.assertEqual([(3.0, '_tooz_cinder-b_lock'),
                          (0.5, '_tooz_cinder-a_lock')],
                         cluster_locks.waits([path]))

    def test_the_drivers_host_lock_counts(self):
        """The attach lock is the driver's own (bounded wait), logged by
        cinder_driver.common.locks: held at the death like Cinder's.
        """
        path = self.write([
            line(-2, 'host-c', 'acquired', 'initialize_connection', 0.0,
                 logger='cinder_driver.common.locks'),
        ])
        self.assertEqual(['_tooz_cinder-host-c_lock'],
                         cluster_locks.held_at(path, DEATH))


class TwoHoldersTestCase(logfiles.LogFileTestCase):
    """No lock is held by two processes at once, whatever their leases
    did.
    """

    def test_handovers_and_a_dead_holder_are_fine(self):
        a = self.write([
            line(-5, 'volume-1', 'acquired', waited=0.0),
            line(-4, 'volume-1', 'released'),
            # Never released: this process died with it (its last line).
            line(-2, 'host-b', 'acquired', waited=0.0),
            line(-1, 'volume-2', 'released'),
        ])
        b = self.write([
            line(-3.9, 'volume-1', 'acquired', waited=1.0),
            line(-3, 'volume-1', 'released'),
            line(6, 'host-b', 'acquired', waited=7.0),
            line(7, 'host-b', 'released'),
        ])
        problems, closest = cluster_locks.two_holders([a, b])
        self.assertEqual([], problems)
        self.assertAlmostEqual(0.1, closest, 2)

    def test_a_lock_taken_while_held_is_a_problem(self):
        # The first holder's lease ran out while it worked (its renewals
        # came late); the other process got the lock 3 s before the
        # first one released it.
        a = self.write([
            line(0, 'volume-1', 'acquired', 'delete_volume', 0.0),
            line(10, 'volume-1', 'released', 'delete_volume'),
        ])
        b = self.write([
            line(7, 'volume-1', 'acquired', 'delete_volume', 6.0),
            line(8, 'volume-1', 'released', 'delete_volume'),
        ])
        problems, closest = cluster_locks.two_holders([a, b])
        self.assertEqual(1, len(problems))
        self.assertIn('volume-1', problems[0])
        self.assertIn('3.0 s before', problems[0])
        self.assertAlmostEqual(-3.0, closest, 2)
        # A release logged a moment after another took the lock is the
        # delay of logging it, not two holders.
        c = self.write([line(9.8, 'volume-1', 'acquired', waited=0.1)])
        self.assertEqual([], cluster_locks.two_holders([a, c])[0])

    def test_two_threads_of_one_process_holding_it_is_a_problem(self):
        path = self.write([
            line(0, 'volume-1', 'acquired', 'delete_volume', 0.0),
            line(7, 'volume-1', 'acquired', 'delete_volume', 6.0),
            line(8, 'volume-1', 'released', 'delete_volume'),
            line(10, 'volume-1', 'released', 'delete_volume'),
        ])
        problems, _closest = cluster_locks.two_holders([path])
        self.assertEqual(1, len(problems))
        self.assertIn('volume-1', problems[0])

    def test_late_renewals_are_counted(self):
        stamp = datetime.datetime.fromtimestamp(DEATH).strftime(
            '%Y-%m-%d %H:%M:%S.%f')[:-3]
        path = self.write([
            '%s 27292 WARNING tooz.coordination [-] Heartbeating took too '
            'long to execute (it ran for 4.53 seconds which is 1.53 seconds '
            'longer than the next heartbeat idle time).\n' % stamp,
            '%s 27292 WARNING tooz.drivers.redis [-] Unable to heartbeat '
            "lock '<tooz.drivers.redis.RedisLock object at 0x7f>': "
            "tooz.ToozError: Cannot reacquire a lock that's no longer "
            'owned\n' % stamp,
            '%s 27292 ERROR tooz.drivers.redis tooz.ToozError: Cannot '
            "reacquire a lock that's no longer owned\n" % stamp,
        ])
        self.assertEqual((1, 4.53), cluster_locks.late_renewals([path]))
        self.assertEqual((0, 0.0), cluster_locks.late_renewals(
            [path], since=DEATH + 1))


class KillMarkerTestCase(logfiles.LogFileTestCase):
    """Whether the killed member was still in the middle of what its log
    showed it beginning.
    """

    ATTACH = line(-1, 'host-a', 'acquired', 'initialize_connection', 0.0,
                  logger='cinder_driver.common.locks')
    TASK = ("2026-11-23 01:00:00.100 8863 DEBUG cinder.volume.manager "
            "[None req-1] Task 'cinder.volume.flows.manager.create_volume."
            "CreateVolumeFromSpecTask;volume:create' (dcb52777-6fc6-443c-"
            "98b7-d0887af8877b) transitioned into state '%s' from state "
            "'%s' _task_receiver\n")

    def test_the_attach_marker_matches_the_drivers_lock_line(self):
        self.assertIn(cluster_locks.MARKERS['attach'], self.ATTACH)

    def test_an_open_lock_is_in_flight(self):
        path = self.write([self.ATTACH,
                           line(0, 'host-b', 'released')])
        self.assertTrue(cluster_locks.in_flight_at_death(path, self.ATTACH))

    def test_a_released_lock_is_not(self):
        path = self.write([self.ATTACH, line(0, 'host-a', 'released')])
        self.assertFalse(cluster_locks.in_flight_at_death(path, self.ATTACH))

    def test_a_task_is_in_flight_until_its_last_state(self):
        running = self.TASK % ('RUNNING', 'PENDING')
        self.assertTrue(cluster_locks.MARKERS['create'].search(running))
        path = self.write([running])
        self.assertTrue(cluster_locks.in_flight_at_death(path, running))
        path = self.write([running, self.TASK % ('SUCCESS', 'RUNNING')])
        self.assertFalse(cluster_locks.in_flight_at_death(path, running))


class CatchTestCase(logfiles.LogFileTestCase):
    """The kill's moment: the member stopped while an operation is open."""

    ATTACH = KillMarkerTestCase.ATTACH

    def _soak(self, path, batches):
        """A soak whose member's log gets each batch's lines in turn, one
        wait for a marker at a time: [(lines, marker line)].
        """
        try:
            import pymysql  # noqa: F401
        except ImportError:
            with mock.patch.dict(sys.modules, {'pymysql': mock.Mock()}):
                from tools.gate import cluster_rounds
        else:
            from tools.gate import cluster_rounds
        soak = cluster_rounds.Soak.__new__(cluster_rounds.Soak)
        soak.cluster = mock.Mock()
        soak.log = lambda member: path
        waits = iter(batches)

        def wait_for(member, targets, timeout):
            lines, marker = next(waits, (None, None))
            if lines is None:
                return None, None
            with open(path, 'a') as f:
                f.writelines(lines)
            return 'attach', marker
        soak._wait_for = wait_for
        return soak

    def test_an_operation_that_ended_is_let_go_until_one_is_open(self):
        ended = line(-3, 'host-x', 'acquired', 'initialize_connection',
                     0.0, logger='cinder_driver.common.locks')
        soak = self._soak(self.write([]), [
            # Its release came before the member stopped.
            ([ended, line(-2.9, 'host-x', 'released')], ended),
            ([self.ATTACH], self.ATTACH)])
        self.assertEqual(('attach', self.ATTACH, 'still open in its log'),
                         soak._catch('gate-a', ['attach'], {'1580'}))
        # Stopped twice, let go once: still stopped when caught.
        self.assertEqual(2, soak.cluster.pause.call_count)
        self.assertEqual(1, soak.cluster.resume.call_count)

    def test_a_held_lock_of_another_operation_counts(self):
        batch = [line(-3, 'volume-4', 'acquired', 'delete_volume', 0.0),
                 self.ATTACH, line(-0.5, 'host-a', 'released')]
        soak = self._soak(self.write([]), [(batch, self.ATTACH)])
        self.assertEqual(
            ('attach', self.ATTACH,
             'ended; holding _tooz_cinder-volume-4_lock'),
            soak._catch('gate-a', ['attach'], {'1580'}))
        self.assertEqual(0, soak.cluster.resume.call_count)
        # A lock of another process (an earlier one, dead) does not.
        soak = self._soak(self.write(batch[:1]), [(batch[1:], self.ATTACH)])
        self.assertEqual((None, None, None),
                         soak._catch('gate-a', ['attach'], {'1581'}))
        self.assertEqual(1, soak.cluster.resume.call_count)
