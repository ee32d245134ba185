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

"""Calls of one service asking for one coordination lock in a known order.

``python -m cinder_driver.tests.functional.lock_line BACKEND_URL MODE``
with MODE ``green`` (eventlet's monkey-patching, as cinder-volume runs)
or ``native`` (threads). A first call holds the lock while the others
arrive one by one; one of them gives up early. The last line of the
output is a JSON report: the order in which the calls held the lock,
the calls that gave up, and the lock lines left in the process.
"""

import json
import sys
import time

# Who arrives, in this order: (name, seconds it may wait, seconds held).
# The first holds the lock until every other call has arrived and the
# hasty one has given up (HOLD_BOUND at most), so the order does not
# depend on how fast a loaded machine schedules the arrivals.
CALLS = [('first', 30, None), ('a', 30, 0.05), ('b', 30, 0.05),
         ('hasty', 0.3, 0.05), ('c', 30, 0.05), ('d', 30, 0.05),
         ('e', 30, 0.05)]
HOLD_BOUND = 20
NAME = 'cinder-flash-attach-flash-compute-1'


def main(url, mode):
    if mode == 'green':
        import eventlet
        eventlet.monkey_patch()
        spawn, sleep = eventlet.spawn, eventlet.sleep
    else:
        import threading

        def spawn(func, *args):
            thread = threading.Thread(target=func, args=args)
            thread.start()
            return thread
        sleep = time.sleep

    from cinder import coordination
    from oslo_config import cfg

    from cinder_driver.common import locks

    cfg.CONF([], project='cinder')
    cfg.CONF.set_override('backend_url', url, group='coordination')
    coordination.COORDINATOR.start()
    arrivals, held, gave_up = [], [], []

    def others_waiting():
        return (len(arrivals) == len(CALLS) and
                gave_up == ['hasty'])

    def call(name, wait, hold):
        arrivals.append(name)
        try:
            with locks.held(NAME, wait, 'initialize_connection'):
                held.append(name)
                if hold is None:
                    deadline = time.monotonic() + HOLD_BOUND
                    while (not others_waiting() and
                           time.monotonic() < deadline):
                        sleep(0.02)
                    hold = 0.1
                sleep(hold)
        except locks.LockWaitTimeout:
            gave_up.append(name)

    def in_line():
        line = getattr(locks, '_LINES', {}).get(NAME)
        return len(line.turns) if line is not None else 0

    workers = []
    for number, (name, wait, hold) in enumerate(CALLS):
        workers.append(spawn(call, name, wait, hold))
        # The call is in line before the next one asks: the first holds
        # the lock, every later one waits in the line. Without a line
        # (a lock that does not keep one) the bound lets the run go on.
        deadline = time.monotonic() + 2
        while (len(arrivals) <= number or
               (number and in_line() < number - ('hasty' in gave_up))) \
                and time.monotonic() < deadline:
            sleep(0.01)
        sleep(0.05)
    for worker in workers:
        worker.wait() if mode == 'green' else worker.join(30)
    coordination.COORDINATOR.stop()
    print(json.dumps({'held': held, 'gave_up': gave_up,
                      'lines': sorted(getattr(locks, '_LINES', {}))}))


if __name__ == '__main__':
    main(*sys.argv[1:])
