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

"""Room on the filesystem under the array: the reserve it always keeps,
what a full disk looks like, and the bytes its own files take.

The engine refuses writes that would eat into the reserve (``NoSpace``)
so that metadata changes, deletes (which free space), a clean stop and
a start still work once data has filled the rest.
"""

import errno
import os
import sqlite3

# Room the array always leaves on its filesystem: at least this much...
RESERVE_MIN = 8 * 1024 * 1024
# ...and this share of the filesystem.
RESERVE_SHARE = 0.02
# The filesystem's free space is looked at again after this much data.
SPACE_CHECK = 1024 * 1024
# Partly live segments compacted when space is wanted (each is read
# whole); segments nothing refers to are removed without a limit.
RECLAIM_COMPACTIONS = 4


def reserve_for(fs_bytes):
    """Room kept free on a filesystem of ``fs_bytes``."""
    return max(RESERVE_MIN, int(fs_bytes * RESERVE_SHARE))


def filesystem_capacity(path):
    """Bytes the array may fill on the filesystem holding ``path``."""
    fs = os.statvfs(path)
    size = fs.f_blocks * fs.f_frsize
    return max(size - reserve_for(size), 0)


class NoSpace(Exception):
    """The filesystem under the array has no room for more data."""


def is_full(exc):
    """Whether an error from SQLite or a file write means a full disk."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return (isinstance(exc, sqlite3.OperationalError) and
            'full' in str(exc))


def disk_bytes(segments, db_path):
    """Bytes of the array's data files: segments and the database."""
    on_disk = sum(segments.sizes.values())
    for suffix in ('', '-wal'):
        try:
            on_disk += os.stat(db_path + suffix).st_size
        except OSError:
            pass
    return on_disk


def bounded(fs_bytes, reserve, on_disk, total, used):
    """(total, free) bytes of a pool of ``total`` bytes of which
    ``used`` are charged, bounded by a filesystem of ``fs_bytes`` whose
    array files take ``on_disk``: never larger than it less the
    ``reserve``, never more free than the array's own files leave of
    that. (Other files on a shared filesystem are not counted; writes
    that find no room are refused whatever was reported.)
    """
    capacity = max(fs_bytes - reserve, 0)
    total = min(total, capacity)
    free = max(min(total - used, capacity - on_disk), 0)
    return total, free
