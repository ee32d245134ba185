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

"""Wire rules of the LINSTOR REST v1 dialect.

Mutations answer a list of ApiCallRc entries; the first error decides the
HTTP status. ``ret_code`` is LINSTOR's 64-bit code (type, operation and
object bits over a 15-bit code) sent as a signed integer, as the Java
controller does.
"""

import datetime

from reference_array.http import server as httpd

ERROR = 0xC000000000000000
WARN = 0x8000000000000000
INFO = 0x4000000000000000
CRT, MOD, DEL = 0x1000000, 0x2000000, 0x3000000
OBJECTS = {
    'node': 0x3C0000, 'rsc_dfn': 0x380000, 'rsc': 0x340000,
    'vlm_dfn': 0x300000, 'vlm': 0x2C0000, 'stor_pool': 0x140000,
    'snapshot': 0x0C0000, 'rsc_grp': 0x440000, 'vlm_grp': 0x480000,
    'ctrl_conf': 0x100000,
}
CREATED, DELETED, MODIFIED = 1, 2, 3
INVLD_NODE_NAME = 200
INVLD_RSC_NAME = 202
INVLD_VLM_NR = 205
INVLD_VLM_SIZE = 206
INVLD_MINOR_NR = 207
INVLD_STOR_POOL_NAME = 208
INVLD_PROP = 213
INVLD_SNAPSHOT_NAME = 218
INVLD_PLACE_COUNT = 219
INVLD_LAYER_STACK = 225
# A clone source on pools that cannot clone (FILE, FILE_THIN, ...).
INVLD_CLONE_SOURCE = 227
INVLD_REQUEST = 234
NOT_FOUND = {'node': 300, 'rsc_dfn': 301, 'rsc': 302, 'vlm_dfn': 303,
             'vlm': 304, 'stor_pool': 310, 'snapshot': 313, 'rsc_grp': 317,
             'vlm_grp': 318}
EXISTS = {'node': 500, 'rsc_dfn': 501, 'rsc': 502, 'vlm_dfn': 503,
          'stor_pool': 510, 'snapshot': 514, 'rsc_grp': 522, 'vlm_grp': 523}
NOT_ENOUGH_FREE_SPACE = 980
SNAPSHOTS_NOT_SUPPORTED = 994
NOT_ENOUGH_NODES = 996
IN_USE = 997
UNKNOWN_ERROR = 998
WARN_RSC_ALREADY_DEPLOYED = 1006
WARN_NOT_FOUND = 3000
WARN_DEPRECATED = 4000
INFO_NO_RSC_SPAWNED = 10000
_OPS = {'create': CRT, 'modify': MOD, 'delete': DEL, None: 0}
# A body LINSTOR cannot read: its own code, with no object or operation.
PARSE_ERROR = ERROR | 0x0FFFFFFFFFFFFFFD


def _signed(value):
    return value - (1 << 64) if value >= (1 << 63) else value


def ret_code(kind, code, obj=None, op=None):
    """``kind``: 'error', 'warn', 'info' or 'ok'."""
    mask = {'error': ERROR, 'warn': WARN, 'info': INFO, 'ok': 0}[kind]
    return _signed(mask | _OPS[op] | OBJECTS.get(obj, 0) | code)


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec='milliseconds')


def rc(kind, code, message, obj=None, op=None, refs=None, cause=None,
       details=None, correction=None):
    entry = {'ret_code': ret_code(kind, code, obj, op), 'message': message,
             'obj_refs': dict(refs or {}), 'error_report_ids': [],
             'created_at': now()}
    for key, value in (('cause', cause), ('details', details),
                       ('correction', correction)):
        if value:
            entry[key] = value
    return entry


class Failure(httpd.HTTPError):
    """A refused call: its ApiCallRc list and the status it maps to."""

    def __init__(self, code, message, obj=None, op=None, refs=None,
                 status=None, **kw):
        entry = rc('error', code, message, obj, op, refs, **kw)
        if status is None:
            status = status_for(code)
        super().__init__(status, [entry])


def status_for(code):
    """HTTP status of an error entry, by the code part of ret_code."""
    if 300 <= code < 400:
        return 404
    if 400 <= code < 500:
        return 403
    return 500


def not_found(obj, what, op=None, refs=None):
    return Failure(NOT_FOUND[obj], '%s not found.' % what, obj=obj, op=op,
                   refs=refs)


def exists(obj, what, refs=None):
    return Failure(EXISTS[obj], '%s already exists.' % what, obj=obj,
                   op='create', refs=refs)


def invalid(message, code=INVLD_REQUEST, obj=None, op=None):
    return Failure(code, message, obj=obj, op=op)


def unreadable(details):
    """The 400 LINSTOR answers for a body it cannot parse."""
    entry = rc('error', 0, 'Unable to parse input json.', details=details)
    entry['ret_code'] = _signed(PARSE_ERROR)
    return httpd.HTTPError(400, [entry])
