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

"""K2 driver against injected array faults: retries, bounds, no leftovers."""

from concurrent import futures
import time

from cinder_driver.common import exception as flash_exception
from cinder_driver.tests.functional import k2_driver_base

GIB = 1024 * 1024
# The array's REST port serves this many connections at once.
# Connections two other services' drivers keep to one array (16 each):
# more than the requests the array serves at once.
OTHER_POOLS = 32


class FaultsTestCase(k2_driver_base.K2DriverTestCase):

    def setUp(self):
        super().setUp()
        self.driver = self.make_driver(flash_rest_retries=3,
                                       flash_rest_retry_backoff=0.05,
                                       flash_rest_read_timeout=2.0)

    def _sent(self, method, fragment):
        return [r for r in self.array.k2_requests()
                if r.startswith(method) and fragment in r]

    def test_busy_and_503_are_retried_to_success(self):
        self.array.inject(
            {'path': '/volume_groups$', 'methods': ['POST'], 'kind': 'busy',
             'count': 2},
            {'path': '/volumes$', 'methods': ['POST'], 'kind': 'status',
             'status': 503, 'count': 1})
        vol = self.create()
        self.assertIsNotNone(self.array_volume(vol))
        self.assertEqual(3, len(self._sent('POST', '/volume_groups')))
        self.assertEqual(2, len(self._sent('POST', '/volumes')))

    def test_lasting_5xx_on_create_leaves_nothing(self):
        self.array.inject({'path': '/volumes$', 'methods': ['POST'],
                           'kind': 'status', 'status': 503})
        self.assertRaises(flash_exception.ArrayAPIError, self.create)
        self.array.clear_faults()
        self.assertEqual([], self.array.k2_client().search('volume_groups'))

    def test_ambiguous_500_on_post_is_not_replayed(self):
        self.array.inject({'path': '/volumes$', 'methods': ['POST'],
                           'kind': 'status', 'status': 500, 'count': 1})
        self.assertRaises(flash_exception.ArrayAPIError, self.create)
        self.assertEqual(1, len(self._sent('POST', '/volumes')))
        self.assertEqual([], self.array.k2_client().search('volume_groups'))

    def test_dropped_connection_on_reads_is_retried(self):
        vol = self.create()
        self.array.inject({'path': '/mappings', 'methods': ['GET'],
                           'kind': 'drop', 'count': 1})
        self.driver.initialize_connection(vol, k2_driver_base.CONNECTOR)
        self.driver.terminate_connection(vol, k2_driver_base.CONNECTOR)
        self.assertEqual([], self.array.k2_client().search('mappings'))

    def test_latency_beyond_read_timeout_is_bounded(self):
        vol = self.create()
        self.array.inject({'path': '/volumes/', 'methods': ['PATCH'],
                           'kind': 'latency', 'seconds': 5})
        started = time.monotonic()
        self.assertRaises(flash_exception.ArrayTimeout,
                          self.driver.extend_volume, vol, 2)
        # PATCH is idempotent: retried, each try cut at the read timeout
        # (2 s) rather than waiting out the 5 s of latency: 4 tries,
        # with room for a loaded machine, stay short of 4 x 5 s.
        self.assertLess(time.monotonic() - started, 4 * 2.0 + 6.0)

    def test_rest_service_restart_is_ridden_out(self):
        self.array.inject({'path': '/volume_groups$', 'methods': ['POST'],
                           'kind': 'restart', 'seconds': 0.3, 'count': 1})
        driver = self.make_driver(flash_rest_retries=5,
                                  flash_rest_retry_backoff=0.2)
        vol = self.volume()
        # The connection is cut after the request was read: an ambiguous
        # failure, which a create does not replay.
        self.assertRaises(flash_exception.ArrayAPIError,
                          driver.create_volume, vol)
        # The service is back after its restart window.
        self.assertEqual([], self.array.k2_client(retries=3).search(
            'volume_groups'))
        vol.update(driver.create_volume(vol))
        self.assertIsNotNone(self.array_volume(vol))

    def _retype_losing_deletes(self, vol):
        """A dedup retype while every DELETE of a volume is dropped."""
        k2 = self.array.k2_client()
        before = sorted(g['name'] for g in k2.search('volume_groups'))
        self.array.inject({'path': '/volumes/', 'methods': ['DELETE'],
                           'kind': 'drop'})
        nodedup = self.volume_type(**{'k2:dedup': 'false'})
        self.assertRaises(flash_exception.ArrayAPIError, self.driver.retype,
                          self.ctx, vol, nodedup, {}, {})
        self.array.clear_faults()
        self.assertTrue(self.array_volume(vol)['is_dedup'])
        # Both the original's delete and the copy's removal were cut.
        self.assertIsNotNone(k2.find('volumes', name='cv-%s-r' % vol.name_id))
        return before, nodedup

    def _names(self, resource):
        return sorted(o['name'] for o in
                      self.array.k2_client().search(resource)
                      if o['name'] != 'CTRL')

    def test_retype_copy_left_by_a_cut_cleanup_goes_at_next_stats(self):
        vol = self.create()
        before, _type = self._retype_losing_deletes(vol)
        self.driver.get_volume_stats(refresh=True)
        self.assertEqual(before, self._names('volume_groups'))
        self.assertEqual(['cv-%s' % vol.name_id], self._names('volumes'))
        # Done once: the next refresh has nothing left to remove.
        deletes = len(self._sent('DELETE', '/'))
        self.driver.adapter._stats_at = 0
        self.driver.get_volume_stats(refresh=True)
        self.assertEqual(deletes, len(self._sent('DELETE', '/')))

    def test_retype_after_a_cut_cleanup_and_a_restart_succeeds(self):
        vol = self.create()
        _before, nodedup = self._retype_losing_deletes(vol)
        # A restarted service no longer knows of the copy.
        driver = self.make_driver()
        retyped, update = driver.retype(self.ctx, vol, nodedup, {}, {})
        self.assertTrue(retyped)
        vol.update(update)
        self.assertFalse(self.array_volume(vol)['is_dedup'])
        self.assertEqual(['cv-%s' % vol.name_id], self._names('volumes'))
        self.assertEqual(['cvg-%s' % vol.name_id],
                         self._names('volume_groups'))

    def test_retype_whose_tidying_is_cut_is_tidied_at_next_stats(self):
        vol = self.create()
        self.array.inject({'path': '/volume_groups/', 'methods': ['DELETE'],
                           'kind': 'drop'})
        nodedup = self.volume_type(**{'k2:dedup': 'false'})
        retyped, update = self.driver.retype(self.ctx, vol, nodedup, {}, {})
        self.array.clear_faults()
        # The original is gone: the retype holds, its old group stays.
        self.assertTrue(retyped)
        vol.update(update)
        self.assertEqual(2, len(self._names('volume_groups')))
        self.driver.get_volume_stats(refresh=True)
        self.assertEqual(['cvg-%s' % vol.name_id],
                         self._names('volume_groups'))
        found = self.array_volume(vol)
        self.assertEqual((False, 'cinder:%s' % vol.id),
                         (found['is_dedup'], found['description']))
        self.assertEqual(update['provider_id'], '%s/%s' % (
            found['volume_group']['ref'].rsplit('/', 1)[1], found['id']))

    def test_bad_rules_are_refused(self):
        for rule in ({'kind': 'explode'}, {'kind': 'latency', 'colour': 1},
                     {'kind': 'status', 'status': 200}):
            resp = self.array.k2_client().http.session.post(
                'https://%s:%s/_admin/faults' % (self.array.k2_host,
                                                 self.array.k2_port),
                json=rule, verify=self.array.info['ca_cert'], timeout=10)
            self.assertEqual(400, resp.status_code, rule)

    def test_other_services_idle_pools_do_not_lock_the_driver_out(self):
        # Two other services' REST clients (16 pooled connections each,
        # as the driver's) keep as many connections open, idle, for
        # their next call.
        self.array.inject({'path': '/system/state', 'methods': ['GET'],
                           'kind': 'latency', 'seconds': 0.5})
        others = [self.array.k2_client() for _ in range(2)]
        with futures.ThreadPoolExecutor(OTHER_POOLS) as pool:
            list(pool.map(lambda i: others[i % 2].system_state(),
                          range(OTHER_POOLS)))
        self.array.clear_faults()
        vols = [self.create() for _ in range(3)]
        for vol in vols:
            self.driver.delete_volume(vol)
        for vol in vols:
            self.assertIsNone(self.array_volume(vol))
        # And their pools are still whole: every call of theirs is
        # answered on a connection kept open.
        with futures.ThreadPoolExecutor(OTHER_POOLS) as pool:
            list(pool.map(lambda i: others[i % 2].system_state(),
                          range(OTHER_POOLS)))
        with open(self.array.log_file) as f:
            log = f.read()
        # The array holds every service's pool open: none of them was
        # closed for room, none refused, no request answered busy.
        self.assertNotIn('closed to make room', log)
        self.assertNotIn('connections busy', log)
        self.assertNotIn('answered busy', log)
        self.assertEqual([], [r for r in self.array.k2_failures()
                              if 'system/state' not in r])
