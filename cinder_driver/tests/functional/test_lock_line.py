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

"""The host lock's line against a real coordinator: Redis, as Debian
packages it and as the cluster bed runs it, with tooz's redis driver.

tooz's redis locks poll: after a release, whichever waiter polls first
wins. The calls of one service must still get the lock in the order
they asked, under eventlet (as cinder-volume runs) and with threads.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from cinder.tests.unit import test

from cinder_driver.tests.functional import lock_line


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class RedisLineTestCase(test.TestCase):

    def setUp(self):
        super().setUp()
        if shutil.which('redis-server') is None:
            self.fail('redis-server is not installed (Debian: redis-server)')
        self.dir = tempfile.mkdtemp(prefix='lock-line-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.port = free_port()
        self.redis = subprocess.Popen(
            ['redis-server', '--bind', '127.0.0.1', '--port',
             str(self.port), '--dir', self.dir, '--save', '',
             '--appendonly', 'no'], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        self.addCleanup(self.stop_redis)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(('127.0.0.1', self.port), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.fail('redis-server did not start')
                time.sleep(0.1)

    def stop_redis(self):
        self.redis.terminate()
        self.redis.wait(30)

    def line(self, mode):
        url = 'redis://127.0.0.1:%d?timeout=5&lock_timeout=6' % self.port
        result = subprocess.run(
            [sys.executable, '-m', 'cinder_driver.tests.functional.lock_line',
             url, mode], capture_output=True, text=True, timeout=120,
            env=dict(os.environ, PYTHONWARNINGS='ignore'))
        self.assertEqual(0, result.returncode, result.stderr[-2000:])
        return json.loads(result.stdout.strip().splitlines()[-1])

    def check(self, report):
        names = [name for name, _wait, _hold in lock_line.CALLS]
        names.remove('hasty')
        self.assertEqual(names, report['held'])
        self.assertEqual(['hasty'], report['gave_up'])
        self.assertEqual([], report['lines'])

    def test_green_threads_get_the_lock_in_arrival_order(self):
        self.check(self.line('green'))

    def test_threads_get_the_lock_in_arrival_order(self):
        self.check(self.line('native'))
