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

"""LINSTOR's ApiCallRc entries: what a controller's answer means.

Every LINSTOR mutation answers a list of entries, on success and on
refusal alike (a refusal is usually HTTP 500 with such a list). An entry's
``ret_code`` is a signed 64-bit integer: the top two bits give its kind
(error, warning, info; none for success), bits 24-25 the operation, bits
18-22 the object and bits 0-14 the code. Code numbers are reused across
kinds (10000 is "no resource spawned" as an info and "sign-in failed" as
an error), so a code is only ever read together with its kind. Values are
those of LINSTOR's published ApiConsts.
"""

KIND_BITS = 0xC000000000000000
ERROR = 0xC000000000000000
WARN = 0x8000000000000000
INFO = 0x4000000000000000
SUCCESS = 0
OP_BITS = 0x3000000
CREATE, MODIFY, DELETE = 0x1000000, 0x2000000, 0x3000000
OBJECT_BITS = 0x7C0000
CODE_BITS = 0x7FFF
OBJECTS = {
    'node': 0x3C0000, 'rsc_dfn': 0x380000, 'rsc': 0x340000,
    'vlm_dfn': 0x300000, 'vlm': 0x2C0000, 'stor_pool': 0x140000,
    'snapshot': 0x0C0000, 'rsc_grp': 0x440000, 'vlm_grp': 0x480000,
}

# Success codes.
CREATED = 1
DELETED = 2
MODIFIED = 3
# Error codes: FAIL_NOT_FOUND_* and FAIL_EXISTS_* fill these ranges.
NOT_FOUND_RANGE = range(300, 400)
FAIL_NOT_FOUND_NODE = 300
EXISTS_RANGE = range(500, 600)
FAIL_EXISTS_RSC_DFN = 501
FAIL_EXISTS_RSC = 502
FAIL_EXISTS_SNAPSHOT_DFN = 514
FAIL_EXISTS_RSC_GRP = 522
FAIL_INVLD_PROP = 213
FAIL_IN_USE = 997
FAIL_UNKNOWN_ERROR = 998
# Warning codes.
WARN_NOT_FOUND = 3000


def unsigned(ret_code):
    ret_code = int(ret_code)
    return ret_code + (1 << 64) if ret_code < 0 else ret_code


def kind(entry):
    """ERROR, WARN, INFO or SUCCESS."""
    return unsigned(entry.get('ret_code', 0)) & KIND_BITS


def code(entry):
    return unsigned(entry.get('ret_code', 0)) & CODE_BITS


def obj(entry):
    return unsigned(entry.get('ret_code', 0)) & OBJECT_BITS


def is_error(entry):
    return kind(entry) == ERROR


def is_entry(value):
    return isinstance(value, dict) and isinstance(value.get('ret_code'),
                                                  int)


def entries_of(payload):
    """The ApiCallRc list of a reply, or None when it carries none.

    Most replies are the list itself; a clone answers an object whose
    ``messages`` holds it.
    """
    if isinstance(payload, dict) and 'messages' in payload:
        payload = payload['messages']
    if isinstance(payload, list) and payload and all(
            is_entry(e) for e in payload):
        return payload
    return None


def errors(entries):
    return [e for e in entries or () if is_error(e)]


def has(entries, wanted_kind, wanted_code, wanted_obj=None):
    """Whether an entry of that kind and code (and object) is present."""
    return any(kind(e) == wanted_kind and code(e) == wanted_code and (
        wanted_obj is None or obj(e) == OBJECTS[wanted_obj])
        for e in entries or ())


def text(entries):
    return '; '.join(str(e.get('message') or '').strip()
                     for e in entries) or None
