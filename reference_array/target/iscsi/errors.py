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

"""How the iSCSI layer gives up on a connection or a login."""


class ProtocolError(Exception):
    """The initiator broke the protocol: the connection ends."""


class LoginFailed(Exception):
    """The login is refused with this status (RFC 7143 11.13.5)."""

    INITIATOR_ERROR = 2
    # Status details with class 2.
    MISCELLANEOUS = 0x00        # e.g. a malformed key
    AUTHENTICATION = 0x01
    NOT_FOUND = 0x03
    MISSING_PARAMETER = 0x07

    def __init__(self, detail, why, status_class=INITIATOR_ERROR):
        super().__init__(why)
        self.status_class, self.detail = status_class, detail
