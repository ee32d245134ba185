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

"""What a call costs the store: SQL statements, VM steps, rows decoded.

Counted, not timed, so that scale tests guard shapes (an index probe
against a scan) whatever the machine's load.
"""

import json
import os

import fixtures

from reference_array.core import engine as engine_mod
from reference_array.core import store as store_mod

# SQLite calls the progress handler every this many VM steps.
STEP = 10
# The two sizes every scale test compares.
SMALL, LARGE = 10, 1000
# VM steps per stored object a page may add: counting a kind and
# skipping to an offset over its index.
PER_OBJECT_STEPS = 12


class Counted(object):
    """What one call costs the store."""

    def __init__(self, statements, steps, decoded):
        self.statements = statements
        self.steps = steps
        self.decoded = decoded

    def __repr__(self):
        return '%d statements, ~%d VM steps, %d rows decoded' % (
            self.statements, self.steps, self.decoded)


def counted(store, fn):
    """(what ``fn`` returned, its ``Counted`` cost on ``store``)."""
    db = store.connection
    statements, steps = [], [0]

    def step():
        steps[0] += STEP
        return 0
    decode = json.loads
    decoded = [0]

    def loads(text, *args, **kwargs):
        decoded[0] += 1
        return decode(text, *args, **kwargs)
    db.set_trace_callback(statements.append)
    db.set_progress_handler(step, STEP)
    store_mod.json.loads = loads
    try:
        result = fn()
    finally:
        store_mod.json.loads = decode
        db.set_progress_handler(None, STEP)
        db.set_trace_callback(None)
    return result, Counted(len(statements), steps[0], decoded[0])


class Filled(fixtures.Fixture):
    """A dialect over a ``store`` that ``fill`` grows: subclasses set
    ``store`` and define ``add(name)``, one object as the driver makes it.
    """

    count = 0

    def open_store(self, models, views=True):
        """``store`` and ``engine`` over a temporary directory, built as
        the array builds it for a dialect's ``models`` (without their
        views unless ``views``).
        """
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'array.db')
        self.store = store_mod.Store(path, key_functions=models.KEY_FUNCTIONS,
                                     kept=models.KEPT,
                                     views=models.VIEW_FUNCTIONS if views
                                     else None)
        self.addCleanup(self.store.close)
        self.engine = engine_mod.Engine(self.store)
        self.addCleanup(self.engine.close)

    def fill(self, target):
        """Add objects ``fill-NNNNNN`` until there are ``target``."""
        with self.store.transaction():
            while self.count < target:
                self.add('fill-%06d' % self.count)
                self.count += 1

    def counted(self, fn):
        """(what ``fn`` returned, its ``Counted`` cost)."""
        return counted(self.store, fn)

    def costs(self, calls, sizes):
        """name -> [cost at each size] of each call in ``calls`` (name ->
        function of a tag), made once filled to each of ``sizes``.
        """
        found = {}
        for size in sizes:
            self.fill(size)
            for name, fn in calls.items():
                _result, cost = self.counted(lambda: fn('%d' % size))
                found.setdefault(name, []).append(cost)
        return found
