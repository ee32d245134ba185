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

"""Compressed chunks in append-only segment files beside the database.

A chunk's data is written once, at the end of the current segment, and
never changed; the database row of the chunk says where it is (segment,
offset, size). Freeing a chunk only drops its row, so an overwrite costs
no page of the database holding data. Space comes back by compaction:
the live chunks of a mostly dead segment are copied to the current one,
their rows moved, and the old file removed once that is durable.

Each record is a header (chunk id, length) and the compressed bytes, so
a segment can be walked without the database. Ordering rules that keep
the database and the files consistent across crashes:

* the data is written before the row that points at it is committed
  (the page cache keeps both across a crash of the process);
* segment files are made durable before any durable database commit
  (``sync``), so a durable row never points at bytes still in memory;
* a compacted segment is removed only after the rows that moved out of
  it are durable.
"""

import collections
import os
import re
import struct

from reference_array import native

# A record's header: the chunk id and the packed length. The native data
# path writes the same records; it says the size its header takes, and
# the two must agree before either writes a segment.
HEADER = struct.Struct('<QI')
if native.AVAILABLE and native._native.RECORD_HEADER != HEADER.size:
    raise ImportError('the native data path writes %d-byte segment record '
                      'headers, not %d: rebuild it' % (
                          native._native.RECORD_HEADER, HEADER.size))
SEGMENT_BYTES = 16 * 1024 * 1024
# A segment is compacted once less than this share of it is live.
LIVE_RATIO = 0.5
# Segment files kept open at once (the least recently used are closed).
OPEN_FILES = 256
_NAME = re.compile(r'^seg-(\d{8})$')


class SegmentError(Exception):
    pass


class Segments(object):

    def __init__(self, directory, segment_bytes=SEGMENT_BYTES):
        self.dir = directory
        os.makedirs(directory, mode=0o700, exist_ok=True)
        self.segment_bytes = segment_bytes
        self._fds = collections.OrderedDict()
        self.sizes = {}
        for name in os.listdir(directory):
            match = _NAME.match(name)
            if match:
                seg = int(match.group(1))
                self.sizes[seg] = os.stat(self._path(seg)).st_size
        # seg -> bytes still referenced (records with their headers).
        self.live = collections.Counter()
        self.current = None
        self._unsynced = set()
        self._new_files = False
        self.retired = []

    def _path(self, seg):
        return os.path.join(self.dir, 'seg-%08d' % seg)

    def _fd(self, seg):
        fd = self._fds.get(seg)
        if fd is not None:
            self._fds.move_to_end(seg)
            return fd
        if len(self._fds) >= OPEN_FILES:
            # fsync through any descriptor syncs the file: closing one
            # with unsynced writes loses nothing.
            _seg, old = self._fds.popitem(last=False)
            os.close(old)
        fd = self._fds[seg] = os.open(self._path(seg), os.O_RDWR)
        return fd

    def close(self):
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    # -- writing -------------------------------------------------------------
    def _open_next(self):
        seg = max(self.sizes, default=0) + 1
        while True:
            try:
                os.close(os.open(self._path(seg), os.O_RDWR | os.O_CREAT |
                                 os.O_EXCL, 0o600))
                break
            except FileExistsError:
                # Never append to a file this process did not start.
                seg += 1
        self.sizes[seg] = 0
        self.current = seg
        self._new_files = True

    def _tail(self):
        """(segment, offset) where the next records go."""
        if self.current is None or \
                self.sizes[self.current] >= self.segment_bytes:
            self._open_next()
        return self.current, self.sizes[self.current]

    def _written(self, seg, start, end):
        self.sizes[seg] = end
        self.live[seg] += end - start
        self._unsynced.add(seg)

    def append(self, records):
        """Write [(chunk id, packed bytes)]; their [(seg, offset)]."""
        seg, pos = self._tail()
        parts, where = [], []
        for chunk, packed in records:
            parts.append(HEADER.pack(chunk, len(packed)))
            parts.append(packed)
            pos += HEADER.size
            where.append((seg, pos))
            pos += len(packed)
        start = self.sizes[seg]
        # At most IOV_MAX buffers per call; no copy into one buffer.
        fd, at = self._fd(seg), start
        for n in range(0, len(parts), 1024):
            piece = parts[n:n + 1024]
            want = sum(len(p) for p in piece)
            if os.pwritev(fd, piece, at) != want:
                raise SegmentError('short write to segment %d' % seg)
            at += want
        self._written(seg, start, pos)
        return where

    def append_packed(self, blob):
        """Write records already laid out as a segment holds them (each
        its ``HEADER`` and packed bytes, back to back) in one call; the
        (seg, offset) of the blob's first byte.
        """
        seg, start = self._tail()
        if os.pwrite(self._fd(seg), blob, start) != len(blob):
            raise SegmentError('short write to segment %d' % seg)
        self._written(seg, start, start + len(blob))
        return seg, start

    # -- reading -------------------------------------------------------------
    def read(self, seg, offset, size):
        data = os.pread(self._fd(seg), size, offset)
        if len(data) != size:
            raise SegmentError('segment %d holds %d bytes at %d, not %d' % (
                seg, len(data), offset, size))
        return data

    def records(self, seg, start=0, length=None):
        """([(chunk id, offset, size)], bytes read, where reading stops)
        of a segment's records from byte ``start`` (where one begins), in
        file order: ``length`` bytes at most (default all), the first
        record whole in any case; a torn record at the end of the file
        (a crash during a write) is left out. Offsets are in the file;
        the bytes read begin at ``start``.
        """
        end = self.sizes[seg]
        want = end - start if length is None else min(
            max(length, HEADER.size), end - start)
        fd = self._fd(seg)
        data = os.pread(fd, want, start)
        if len(data) >= HEADER.size and length is not None:
            _chunk, size = HEADER.unpack_from(data, 0)
            if HEADER.size + size > len(data):
                # A record longer than the window: read it whole.
                data = os.pread(fd, min(HEADER.size + size, end - start),
                                start)
        out, pos = [], 0
        while pos + HEADER.size <= len(data):
            chunk, size = HEADER.unpack_from(data, pos)
            at = pos + HEADER.size
            if at + size > len(data):
                break
            out.append((chunk, start + at, size))
            pos = at + size
        return out, data, start + pos

    # -- space ---------------------------------------------------------------
    def freed(self, seg, size):
        self.live[seg] -= HEADER.size + size

    def count_live(self, rows):
        """Start-up: live bytes per segment from (seg, sum of sizes, count)."""
        self.live.clear()
        for seg, total, count in rows:
            self.live[seg] = total + count * HEADER.size

    def sparse(self):
        """A segment worth compacting (not the one being written), or None."""
        for seg, size in self.sizes.items():
            if seg != self.current and seg not in self.retired and \
                    self.live[seg] < size * LIVE_RATIO:
                return seg
        return None

    def retire(self, seg):
        """Nothing refers to ``seg`` once the database is durable."""
        self.live.pop(seg, None)
        self.retired.append(seg)

    # -- durability ----------------------------------------------------------
    def sync(self, everything=False):
        """Make every segment write so far durable (``everything``: also
        what an earlier process wrote).
        """
        if everything:
            self._unsynced.update(self.sizes)
            self._new_files = True
        for seg in self._unsynced:
            os.fsync(self._fd(seg))
        self._unsynced.clear()
        if self._new_files:
            fd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self._new_files = False

    def drop_retired(self):
        """Remove retired segments; call after a durable commit."""
        for seg in self.retired:
            fd = self._fds.pop(seg, None)
            if fd is not None:
                os.close(fd)
            self.sizes.pop(seg, None)
            self._unsynced.discard(seg)
            try:
                os.unlink(self._path(seg))
            except FileNotFoundError:
                pass
        self.retired = []
