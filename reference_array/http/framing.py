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

"""How much of a request the array reads, and how: headers within a byte
budget, a body by its length or in chunks, a refused body read and
dropped. Every read is bounded, whatever the caller announces.
"""

import http.client
import string

# Bytes of header lines one request may send after its request line:
# the server reads them before it knows who is calling.
MAX_HEADER_BYTES = 64 * 1024
# A chunk's size line (with extensions) and a trailer line.
MAX_CHUNK_LINE = 1024
MAX_TRAILERS = 32
PIECE = 64 * 1024
_HEX = frozenset(string.hexdigits.encode())


class Refused(ValueError):
    """A body the array does not read: ``status`` is its answer."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def body_length(headers, limit):
    """The length a request's headers announce for its body, None for a
    chunked one; Refused when it cannot be read (400, 413, 501).
    """
    coding = headers.get('Transfer-Encoding')
    if coding is not None:
        if coding.strip().lower() != 'chunked':
            raise Refused(501, 'transfer coding not supported: %r' %
                          coding[:40])
        return None
    length = headers.get('Content-Length') or '0'
    if not length.isdigit():
        raise Refused(400, 'invalid Content-Length: %r' % length[:40])
    if int(length) > limit:
        raise Refused(413, 'request body too large')
    return int(length)


class HeaderBudget(object):
    """The connection's reader while a request's headers are read: lines
    beyond ``limit`` bytes in all raise LineTooLong (the server's parser
    answers 431), and no line is read past the budget.
    """

    def __init__(self, rfile, limit=MAX_HEADER_BYTES):
        self._rfile = rfile
        self._limit = self._left = limit

    def readline(self, size=-1):
        most = self._left + 1
        line = self._rfile.readline(most if size < 0 else min(size, most))
        self._left -= len(line)
        if self._left < 0:
            raise http.client.LineTooLong(
                'request headers beyond %d bytes' % self._limit)
        return line

    def __getattr__(self, name):
        return getattr(self._rfile, name)


def _line(rfile, what):
    line = rfile.readline(MAX_CHUNK_LINE + 1)
    if len(line) > MAX_CHUNK_LINE or not line.endswith(b'\n'):
        raise Refused(400, '%s: not a line of at most %d bytes' %
                      (what, MAX_CHUNK_LINE))
    return line


def read_chunked(rfile, limit):
    """A ``Transfer-Encoding: chunked`` body (RFC 9112, 7.1), at most
    ``limit`` bytes; trailers are read and dropped.
    """
    body = bytearray()
    while True:
        size = _line(rfile, 'chunk size').split(b';', 1)[0].strip()
        if not size or not _HEX.issuperset(size):
            raise Refused(400, 'invalid chunk size %r' % size[:20])
        size = int(size, 16)
        if not size:
            break
        if len(body) + size > limit:
            raise Refused(413, 'request body too large')
        data = rfile.read(size)
        if len(data) < size:
            raise Refused(400, 'body cut off in a chunk')
        body += data
        if _line(rfile, 'end of chunk').strip():
            raise Refused(400, 'a chunk longer than its size')
    for _ in range(MAX_TRAILERS):
        if not _line(rfile, 'trailer').strip():
            return bytes(body)
    raise Refused(400, 'more than %d trailer lines' % MAX_TRAILERS)


def drain(rfile, length):
    """Read and drop a body of ``length`` bytes, a piece at a time;
    False if it did not all come.
    """
    while length > 0:
        got = len(rfile.read(min(PIECE, length)))
        if not got:
            return False
        length -= got
    return True
