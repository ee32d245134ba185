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

"""What the engine's tests share: an engine over a new store on a real
database file, and a case run again on the native data path."""

import os

import fixtures
import testtools

from reference_array.core import engine
from reference_array.core import native_engine
from reference_array.core import store as metadata
from reference_array import native

CHUNK = engine.DEFAULT_CHUNK
NO_NATIVE = 'native data path: %s' % native.WHY_NOT


def open_engine(test, **kwargs):
    """An engine over a new store in a temporary directory of ``test``
    (``kwargs``: the engine's own).
    """
    test.dir = test.useFixture(fixtures.TempDir()).path
    test.store = metadata.Store(os.path.join(test.dir, 'a.db'))
    test.addCleanup(test.store.close)
    test.engine = getattr(test, 'engine_class', engine.Engine)(test.store,
                                                               **kwargs)


def stored(engine, data):
    """A new layer of ``engine`` holding ``data``, stored (flushed)."""
    vol = engine.new_layer()
    engine.write(vol, 0, data)
    engine.flush()
    return vol


class EngineTestCase(testtools.TestCase):
    """A new engine (``engine_class``) over a new store."""

    engine_class = engine.Engine

    def setUp(self):
        super().setUp()
        open_engine(self)


def on_native(case):
    """``case`` run again on the native data path (reference_array/native)."""
    return testtools.skipUnless(native.AVAILABLE, NO_NATIVE)(type(
        'Native' + case.__name__, (case,),
        {'engine_class': native_engine.NativeEngine,
         '__module__': case.__module__}))
