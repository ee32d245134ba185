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

"""Exceptions raised by cinder-flash; all are Cinder backend exceptions."""

from cinder import exception
from cinder.i18n import _


class ArrayAPIError(exception.VolumeBackendAPIException):
    message = _('%(array)s: %(method)s %(path)s failed: %(reason)s')

    def __init__(self, message=None, status=None, error_code=None, **kwargs):
        # Callers branch on these (not-found on delete, name conflicts).
        self.status = status
        self.error_code = error_code
        super().__init__(message, **kwargs)


class ArrayUnreachable(ArrayAPIError):
    message = _('%(array)s: %(method)s %(path)s: array not reachable: '
                '%(reason)s')


class ArrayTimeout(ArrayAPIError):
    message = _('%(array)s: %(method)s %(path)s: no answer within '
                '%(timeout)s s')


class ArrayAuthError(ArrayAPIError):
    message = _('%(array)s: %(method)s %(path)s: the array refused the '
                'credentials of user %(user)s (HTTP %(status_code)s)')


class ArrayTLSError(ArrayAPIError):
    message = _('%(array)s: %(method)s %(path)s: TLS verification of the '
                'array certificate failed: %(reason)s')


class ArrayBadReply(ArrayAPIError):
    message = _('%(array)s: %(method)s %(path)s: malformed reply '
                '(HTTP %(status_code)s): %(reason)s')


class ObjectNotFound(ArrayAPIError):
    """The array has no object with the id or key the call named."""


class ObjectExists(ArrayAPIError):
    """A create was refused because the object it names exists already.

    ``existing``: the id of that object, as the array reports it.
    """

    def __init__(self, message=None, existing=None, **kwargs):
        self.existing = existing
        super().__init__(message, **kwargs)


class ObjectBusy(ArrayAPIError):
    """A delete was refused: the object is in use (mapped, has members)."""


def typed(cls, error, **kwargs):
    """``error`` (an ArrayAPIError) as its typed kind ``cls``."""
    return cls(error.msg, status=error.status, error_code=error.error_code,
               **kwargs)


class InvalidBackendConfig(exception.InvalidConfigurationValue):
    message = _('Backend configuration %(option)s=%(value)r is invalid: '
                '%(reason)s')
