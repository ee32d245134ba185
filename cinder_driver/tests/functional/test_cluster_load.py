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

"""The cluster load: its sizing (skipped picks do not count as work)
and its attaches and detaches, which fail and are asked again as Nova's
Cinder client does.
"""

import itertools
import os
import sys
import threading

import testtools

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
from tools.gate import cinder_api  # noqa: E402
from tools.gate import cluster_load  # noqa: E402


class _Api(object):

    def track(self):
        return []


class _Load(cluster_load.Load):
    """Creates always work; detaches find nothing for the first picks."""

    def __init__(self, skips):
        super().__init__(_Api(), ['t'])
        self.skips = itertools.count()
        self.limit = skips
        self.pick_lock = threading.Lock()

    def pick(self):
        with self.pick_lock:
            return 'detach' if next(self.skips) < self.limit else 'create'

    def op_create(self, vtype=None):
        return self._note('v')

    def op_detach(self):
        return None


class LoadSizeTestCase(testtools.TestCase):

    def outcomes(self, load):
        return sorted(r.outcome for r in load.records)

    def test_skipped_picks_are_not_counted(self):
        # A run that begins with empty pools does as much work as one
        # that begins with full ones.
        load = _Load(skips=10)
        load.run(operations=5, workers=2)
        self.assertEqual(['ok'] * 5 + ['skip'] * 10, self.outcomes(load))

    def test_picks_are_bounded_when_nothing_can_be_done(self):
        load = _Load(skips=1 << 20)
        load.run(operations=3, workers=2)
        self.assertEqual(
            ['skip'] * (3 * cluster_load.SKIPS_PER_OPERATION),
            self.outcomes(load))


class _Attachments(_Api):
    """Cinder's attachment calls; ``fail`` says how many ``PUT``s and
    ``DELETE``s are answered 500 before they succeed.
    """

    def __init__(self, fail_puts=0, fail_deletes=0, status=500):
        self.calls = []
        self.left = {'PUT': fail_puts, 'DELETE': fail_deletes}
        self.status = status
        self.ids = itertools.count(1)

    def _answer(self, method, path):
        self.calls.append((method, path))
        if self.left.get(method):
            self.left[method] -= 1
            raise cinder_api.ApiError(method, path, self.status,
                                      'Unable to update the attachment.')

    def reserve(self, vid):
        att = 'a%d' % next(self.ids)
        self._answer('POST', att)
        return {'id': att}

    def connect(self, att_id, connector):
        self._answer('PUT', att_id)
        return {'id': att_id}

    def complete(self, att_id):
        self._answer('COMPLETE', att_id)

    def detach(self, att_id):
        self._answer('DELETE', att_id)

    def terminate_connection(self, vid, connector):
        self._answer('UNMAP', vid)


class AttachAsNovaTestCase(testtools.TestCase):
    """A connection lost with its volume service is answered 500 after
    rpc_response_timeout; Nova asks again for the same attachment at once
    (nova/volume/cinder.py retries 500 and 504, five tries) rather than
    rolling back and reserving a new one.
    """

    def load(self, api):
        load = cluster_load.Load(api, ['t'])
        load.volumes['v'] = {'type': 't', 'size': 1}
        return load

    def test_a_lost_connection_is_asked_again_on_the_same_attachment(self):
        api = _Attachments(fail_puts=2)
        load = self.load(api)
        rec = load.run_one('attach', cluster_load.HOT_HOST, 'v')
        self.assertEqual('ok', rec.outcome)
        self.assertEqual([('POST', 'a1'), ('PUT', 'a1'), ('PUT', 'a1'),
                          ('PUT', 'a1'), ('COMPLETE', 'a1')], api.calls)
        self.assertIsNotNone(rec.failed_at)
        self.assertLessEqual(rec.failed_at, rec.connected_at)
        self.assertEqual({'a1': ('v', cluster_load.HOT_HOST)},
                         load.attachments)
        self.assertEqual(2, load.counts['attach asked again'])

    def test_a_gateway_timeout_is_asked_again(self):
        api = _Attachments(fail_puts=1, status=504)
        rec = self.load(api).run_one('attach', cluster_load.HOT_HOST, 'v')
        self.assertEqual('ok', rec.outcome)
        self.assertEqual(2, api.calls.count(('PUT', 'a1')))

    def test_five_failures_roll_back_and_unmap(self):
        api = _Attachments(fail_puts=5)
        load = self.load(api)
        rec = load.run_one('attach', cluster_load.HOT_HOST, 'v')
        self.assertEqual('failed', rec.outcome)
        self.assertEqual([('POST', 'a1')] + [('PUT', 'a1')] * 5 + [
            ('DELETE', 'a1'), ('UNMAP', 'v')], api.calls)
        self.assertEqual({}, load.attachments)
        self.assertIsNone(rec.connected_at)

    def test_a_refusal_is_not_asked_again(self):
        api = _Attachments(fail_puts=1, status=409)
        rec = self.load(api).run_one('attach', cluster_load.HOT_HOST, 'v')
        self.assertEqual('failed', rec.outcome)
        self.assertEqual([('POST', 'a1'), ('PUT', 'a1'), ('DELETE', 'a1')],
                         api.calls)
        self.assertIsNone(rec.failed_at)

    def test_a_lost_detach_is_asked_again(self):
        api = _Attachments(fail_deletes=1)
        load = self.load(api)
        load.attachments['a9'] = ('v', cluster_load.HOT_HOST)
        rec = load.run_one('detach')
        self.assertEqual('ok', rec.outcome)
        self.assertEqual([('DELETE', 'a9')] * 2, api.calls)
        self.assertEqual({}, load.attachments)
        self.assertEqual([], load.followups)
