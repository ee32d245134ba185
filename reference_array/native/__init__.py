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

"""The array's native data path (C, built with the package).

``Store`` is the engine's chunk store: staging (the write-back cache),
reads through a cache of decompressed chunks, allocation status, and
storing batches of chunks (BLAKE3 digests, zstd compression, segment
records, rows) on the engine's own SQLite connection. ``DataPath`` is
one iSCSI connection's READ, WRITE and GET LBA STATUS over that store,
run without the GIL. ``Lock`` is the store lock both take. ``blake3`` is
the digest the dedup index keys chunks by. See
``reference_array/native/*.c``.

The extension is optional: when it is not built (or
``REFERENCE_ARRAY_NATIVE=0``), ``AVAILABLE`` is False and the array runs
its pure-Python data path, which reads and writes the same files.
"""

import logging
import os
import threading

LOG = logging.getLogger(__name__)

try:
    if os.environ.get('REFERENCE_ARRAY_NATIVE', '1') == '0':
        raise ImportError('turned off by REFERENCE_ARRAY_NATIVE=0')
    # Refuses to load unless this Python and its SQLite library are the
    # exact versions it was built for (it reads sqlite3.Connection).
    from reference_array.native import _native
except ImportError as exc:
    _native = None
    WHY_NOT = str(exc)
    LOG.info('Native data path not used (%s): pure-Python data path',
             WHY_NOT)
else:
    WHY_NOT = None

AVAILABLE = _native is not None


def lock():
    """The store lock: the native one when the data path is native (its
    connections take it without the GIL), else a reentrant lock.
    """
    return _native.Lock() if AVAILABLE else threading.RLock()
