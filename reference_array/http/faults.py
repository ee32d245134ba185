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

"""Fault injection for reliability tests.

Rules come from ``--faults FILE`` or ``POST /_admin/faults`` (a JSON
list or object); ``GET`` lists them with how often each fired, ``DELETE``
clears them. A rule:

``path``      regular expression matched against the request path
``methods``   list of HTTP methods (default: all)
``fraction``  share of matching calls it hits, 0..1 (default 1)
``count``     stop after this many hits (default: no limit)
``kind``      ``latency`` (sleep ``seconds`` then serve), ``status``
              (answer ``status``, 500 by default), ``busy`` (the dialect's
              busy answer: K2's HTTP 400 ``MC_ERR_BUSY``, LINSTOR's 503),
              ``drop`` (close the connection without an answer),
              ``restart`` (the REST service refuses connections for
              ``seconds``), ``peer_link`` (see below)

A ``peer_link`` rule takes no other field: while it is loaded, the
array's replication link is down, as when its WAN ports lose the peer.
Calls from paired arrays (under ``PEER_PATH``) are dropped, the array's
own calls to them fail at once, and whoever watches the link
(``watch_link``) hears when it goes down and when it is back.

Faults apply before the request reaches the array, so an injected
failure never half-applies a change.
"""

import random
import re
import threading
import time

KINDS = ('latency', 'status', 'busy', 'drop', 'restart', 'peer_link')
# Where K2 arrays call each other (reference_array.k2.replication.peer).
PEER_PATH = '^/api/v2/_replication/'


class FaultError(ValueError):
    pass


class Rule(object):

    def __init__(self, spec):
        if not isinstance(spec, dict):
            raise FaultError('a fault rule must be an object')
        unknown = set(spec) - {'path', 'methods', 'fraction', 'count',
                               'kind', 'seconds', 'status'}
        if unknown:
            raise FaultError('unknown fault rule field(s): %s' %
                             ', '.join(sorted(unknown)))
        self.kind = spec.get('kind')
        if self.kind not in KINDS:
            raise FaultError('kind must be one of %s, not %r' % (
                ', '.join(KINDS), self.kind))
        if self.kind == 'peer_link' and set(spec) != {'kind'}:
            raise FaultError('a peer_link rule takes no other field')
        try:
            self.path = re.compile(PEER_PATH if self.kind == 'peer_link'
                                   else spec.get('path', '.*'))
        except (re.error, TypeError) as e:
            raise FaultError('bad path expression: %s' % e)
        self.methods = {m.upper() for m in spec.get('methods') or ()}
        self.fraction = float(spec.get('fraction', 1.0))
        self.count = spec.get('count')
        self.seconds = float(spec.get('seconds', 0.0))
        self.status = int(spec.get('status', 500))
        if not 0.0 <= self.fraction <= 1.0 or self.seconds < 0 or \
                not 400 <= self.status <= 599:
            raise FaultError('fraction must be 0..1, seconds >= 0 and '
                             'status 400..599')
        self.hits = 0
        self.spec = dict(spec)

    def matches(self, method, path):
        return ((not self.methods or method in self.methods) and
                self.path.search(path) is not None and
                (self.count is None or self.hits < self.count))


class Injector(object):

    def __init__(self, seed=None):
        self._rules = []
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        self._link_watchers = []
        self.down_until = 0.0

    def load(self, specs):
        rules = [Rule(s) for s in (specs if isinstance(specs, list)
                                   else [specs])]
        with self._lock:
            was_down = self._link_down()
            self._rules.extend(rules)
            changed = was_down != self._link_down()
        if changed:
            self._link_changed()

    def clear(self):
        with self._lock:
            changed = self._link_down()
            self._rules = []
            self.down_until = 0.0
        if changed:
            self._link_changed()

    def watch_link(self, callback):
        """Call ``callback()`` whenever the peer link goes down or up."""
        self._link_watchers.append(callback)

    def link_down(self):
        """Whether a ``peer_link`` rule holds the replication link down."""
        with self._lock:
            return self._link_down()

    def _link_down(self):
        return any(r.kind == 'peer_link' for r in self._rules)

    def _link_changed(self):
        for callback in self._link_watchers:
            callback()

    def listing(self):
        with self._lock:
            return [dict(r.spec, hits=r.hits) for r in self._rules]

    def down(self):
        return time.monotonic() < self.down_until

    def pick(self, method, path):
        """The rule that fires for this request, or None."""
        with self._lock:
            for rule in self._rules:
                if rule.matches(method, path) and \
                        self._random.random() < rule.fraction:
                    rule.hits += 1
                    if rule.kind == 'restart':
                        self.down_until = time.monotonic() + rule.seconds
                    return rule
        return None
