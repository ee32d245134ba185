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

"""The engine on a filesystem that fills, and the room the native data
path may stage without asking the engine."""

import contextlib
import os
import platform
import sqlite3
from unittest import mock

import fixtures
import testtools

from reference_array.core import engine
from reference_array.core import native_engine
from reference_array import native
from reference_array.tests import engine_fixture

CHUNK = engine_fixture.CHUNK


def disk_full(segments):
    """Every write to a segment (records, or records laid out by the
    native store) fails as on a full filesystem.
    """
    full = OSError(28, 'No space left')
    stack = contextlib.ExitStack()
    for name in ('append', 'append_packed'):
        stack.enter_context(mock.patch.object(segments, name,
                                              side_effect=full))
    return stack


class SpaceTestCase(testtools.TestCase):
    """A filesystem that fills: clean refusals, never a stuck store."""

    def setUp(self):
        super().setUp()
        engine_fixture.open_engine(self)
        self.free = 64 * 1024 * 1024
        real = os.statvfs

        def statvfs(path):
            fs = real(path)
            return os.statvfs_result((
                fs.f_bsize, 4096, 65536, self.free // 4096,
                self.free // 4096) + tuple(fs)[5:])
        self.useFixture(fixtures.MockPatch('os.statvfs', statvfs))
        self.engine.reserve = 8 * 1024 * 1024
        self.engine._space_left = None

    def test_data_beyond_the_reserve_is_refused_zeros_are_not(self):
        vol = self.engine.new_layer()
        self.free = self.engine.reserve + 4 * CHUNK
        self.engine._space_left = None
        self.engine.write(vol, 0, os.urandom(2 * CHUNK))
        self.assertRaises(engine.NoSpace, self.engine.write, vol,
                          2 * CHUNK, os.urandom(4 * CHUNK))
        self.assertEqual(1, self.engine.work['writes_refused'])
        # Zeros and UNMAP free space; they always pass.
        self.engine.write(vol, 0, bytes(CHUNK))
        self.engine.unmap(vol, 0, 2 * CHUNK)
        self.assertEqual(bytes(6 * CHUNK), self.engine.read(vol, 0,
                                                            6 * CHUNK))
        # Room again: accepted again.
        self.free = 1 << 30
        self.engine._space_left = None
        self.engine.write(vol, 0, os.urandom(4 * CHUNK))

    def test_space_is_bounded_by_the_filesystem(self):
        self.free = self.engine.reserve + 10 * 1024 * 1024
        total, room = self.engine.space()
        self.assertEqual(10 * 1024 * 1024, room)
        self.assertEqual(self.engine.fs_bytes, total)
        # A pool larger than the filesystem reports what it can hold.
        self.engine.fs_bytes = 64 * 1024 * 1024
        vol = self.engine.new_layer()
        self.engine.write(vol, 0, os.urandom(64 * CHUNK))
        self.engine.flush()
        on_disk = self.engine.disk_bytes()
        self.assertGreater(on_disk, 64 * CHUNK)
        total, free = self.engine.bounded(1 << 40, 64 * CHUNK)
        self.assertEqual(56 * 1024 * 1024, total)
        self.assertEqual(total - on_disk, free)
        self.assertEqual((1 << 20, (1 << 20) - 64 * CHUNK),
                         self.engine.bounded(1 << 20, 64 * CHUNK))

    def test_a_store_that_finds_the_disk_full_keeps_the_writes(self):
        vol = self.engine.new_layer()
        data = os.urandom(2 * CHUNK)
        self.engine.write(vol, 0, data)
        with disk_full(self.engine.segments):
            self.assertRaises(engine.NoSpace, self.engine.flush)
        self.assertEqual(data, self.engine.read(vol, 0, 2 * CHUNK))
        self.engine.flush()
        self.assertEqual(data, self.engine.read(vol, 0, 2 * CHUNK))


@testtools.skipUnless(native.AVAILABLE, engine_fixture.NO_NATIVE)
class NativeRoomTestCase(SpaceTestCase):
    """Connections' data paths stage only the room the engine granted."""

    engine_class = native_engine.NativeEngine

    def test_room_is_granted_from_what_is_free_above_the_reserve(self):
        vol = self.engine.new_layer()
        self.assertEqual(0, self.engine._native.room)
        self.free = self.engine.reserve + 4 * CHUNK
        self.engine._space_left = None
        self.engine.write(vol, 0, os.urandom(2 * CHUNK))
        # What is left above the reserve, less what was just staged.
        self.assertEqual(2 * CHUNK, self.engine._native.room)
        # The engine takes it back before it accepts a write itself.
        self.assertRaises(engine.NoSpace, self.engine.write, vol,
                          2 * CHUNK, os.urandom(4 * CHUNK))
        self.assertEqual(0, self.engine._native.room)

    def test_a_failed_store_takes_the_room_back(self):
        vol = self.engine.new_layer()
        self.engine.write(vol, 0, os.urandom(CHUNK))
        self.assertGreater(self.engine._native.room, 0)
        with disk_full(self.engine.segments):
            self.assertRaises(engine.NoSpace, self.engine.flush)
        self.assertEqual(0, self.engine._native.room)
        self.assertIsNone(self.engine._space_left)

    def test_built_for_this_python_and_sqlite(self):
        self.assertEqual(platform.python_version(),
                         native._native.PYTHON_VERSION)
        self.assertEqual(sqlite3.sqlite_version,
                         native._native.SQLITE_VERSION)
