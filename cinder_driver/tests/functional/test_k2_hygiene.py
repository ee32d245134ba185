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

"""K2 driver: no secrets in logs, bounded time against a frozen array."""

import logging
import signal
import threading
import time

import fixtures

from cinder_driver.common import exception as flash_exception
from cinder_driver.tests.functional import k2_driver_base
from reference_array.tests import array_fixture

CONNECTOR = k2_driver_base.CONNECTOR


class SecretsTestCase(k2_driver_base.K2DriverTestCase):

    def test_full_lifecycle_at_debug_logs_no_password(self):
        log = self.useFixture(fixtures.FakeLogger(level=logging.DEBUG))
        drv = self.make_driver()
        vol = self.create(size=2)
        snap = self.snapshot(vol)
        clone = self.volume(size=2)
        clone.update(drv.create_cloned_volume(clone, vol))
        drv.initialize_connection(vol, CONNECTOR)
        drv.extend_volume(vol, 3)
        drv.terminate_connection(vol, CONNECTOR)
        drv.get_volume_stats(True)
        drv.delete_snapshot(snap)
        for v in (clone, vol):
            drv.delete_volume(v)
        # A refused login goes through the error path: no echo either.
        self.assertRaises(flash_exception.ArrayAuthError, self.make_driver,
                          san_password='wrong-secret-value')
        output = log.output
        self.assertIn('POST /volumes', output)          # DEBUG was on
        self.assertNotIn(self.array.info['password'], output)
        self.assertNotIn('wrong-secret-value', output)
        array_log = open(self.array.log_file).read()
        self.assertNotIn(self.array.info['password'], array_log)


class FrozenArrayTestCase(k2_driver_base.K2DriverTestCase):

    def test_every_call_fails_within_its_timeouts(self):
        drv = self.make_driver(flash_rest_connect_timeout=1.0,
                               flash_rest_read_timeout=2.0,
                               flash_rest_retries=1,
                               flash_rest_retry_backoff=0.1)
        vol = self.create()
        self.array.proc.send_signal(signal.SIGSTOP)
        self.addCleanup(self.array.proc.send_signal, signal.SIGCONT)
        # Two attempts of at most connect + read time, one back-off, and
        # room for a loaded machine: far short of the default timeouts.
        bound = 2 * (1.0 + 2.0) + 0.1 + 4.0
        calls = (
            ('create', lambda: drv.create_volume(self.volume())),
            ('extend', lambda: drv.extend_volume(vol, 2)),
            ('attach', lambda: drv.initialize_connection(vol, CONNECTOR)),
            ('delete', lambda: drv.delete_volume(vol)),
        )
        for name, call in calls:
            started = time.monotonic()
            self.assertRaises(flash_exception.ArrayAPIError, call)
            self.assertLess(time.monotonic() - started, bound, name)
        drv.adapter._stats_at = 0
        started = time.monotonic()
        stats = drv.get_volume_stats(True)
        self.assertLess(time.monotonic() - started, bound)
        self.assertEqual('down', stats['pools'][0]['backend_state'])

    def test_other_backends_stay_responsive(self):
        """A frozen array holds only the calls that go to it."""
        # The frozen call's read timeout is far longer than the healthy
        # backend's calls take on a loaded machine: the healthy calls
        # must all end while the frozen one still waits.
        frozen = self.make_driver(flash_rest_connect_timeout=1.0,
                                  flash_rest_read_timeout=15.0,
                                  flash_rest_retries=0)
        other = self.useFixture(array_fixture.ReferenceArray())
        healthy = self.make_driver(
            san_ip=other.k2_host, san_api_port=other.k2_port,
            san_login=other.info['user'],
            san_password=other.info['password'],
            driver_ssl_cert_path=other.info['ca_cert'])
        self.array.proc.send_signal(signal.SIGSTOP)
        self.addCleanup(self.array.proc.send_signal, signal.SIGCONT)
        outcome = []

        def blocked_call():
            try:
                frozen.create_volume(self.volume())
            except flash_exception.ArrayAPIError as e:
                outcome.append(e)
        thread = threading.Thread(target=blocked_call)
        thread.start()
        vol = self.volume()
        vol.update(healthy.create_volume(vol))
        healthy.extend_volume(vol, 2)
        healthy.delete_volume(vol)
        self.assertTrue(thread.is_alive())
        thread.join(timeout=60)
        self.assertEqual(1, len(outcome))
