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
