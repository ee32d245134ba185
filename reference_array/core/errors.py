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

"""Why the array refuses a call, in no dialect's words.

Backends raise these; each dialect's api module turns them into its wire
errors (K2: an HTTP status and ``{"error_msg": ...}``; LINSTOR: an
ApiCallRc list). ``subject`` names the kind of object concerned and
``reason`` a finer cause, both in the raising backend's own vocabulary,
so that its api can pick the matching wire code; ``context`` carries what
else the wire error names (the objects it refers to, the operation).
"""


class ArrayError(Exception):

    def __init__(self, message, subject=None, reason=None, **context):
        super().__init__(message)
        self.message = message
        self.subject = subject
        self.reason = reason
        self.context = context


class Invalid(ArrayError):
    """The request is malformed or asks for something impossible."""


class NotFound(ArrayError):
    """The object the call names does not exist."""


class Conflict(ArrayError):
    """The call collides with what exists: a name taken, an object in use."""


class WrongState(ArrayError):
    """The object's current state forbids the call for now."""


class NotAllowed(ArrayError):
    """The operation is not offered on this kind of object."""


class Busy(ArrayError):
    """The array cannot take the call now; the same call may succeed later."""
