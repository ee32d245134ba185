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
CALLS = [('first', 10, 0.8), ('a', 10, 0.05), ('b', 10, 0.05),
         ('hasty', 0.3, 0.05), ('c', 10, 0.05), ('d', 10, 0.05),
         ('e', 10, 0.05)]
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

    def call(name, wait, hold):
        arrivals.append(name)
        try:
            with locks.held(NAME, wait, 'initialize_connection'):
                held.append(name)
                sleep(hold)
        except locks.LockWaitTimeout:
            gave_up.append(name)

    workers = []
    for name, wait, hold in CALLS:
        arrived = len(arrivals)
        workers.append(spawn(call, name, wait, hold))
        while len(arrivals) == arrived:
            sleep(0.01)
        # Past the call's arrival, it is in line (or, without a line,
        # polling the coordinator) before the next one asks.
        sleep(0.13)
    for worker in workers:
        worker.wait() if mode == 'green' else worker.join(30)
    coordination.COORDINATOR.stop()
    print(json.dumps({'held': held, 'gave_up': gave_up,
                      'lines': sorted(getattr(locks, '_LINES', {}))}))


if __name__ == '__main__':
    main(*sys.argv[1:])
