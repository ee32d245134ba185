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

"""The login phase of a connection: who logs in, CHAP, operational keys.

``Login.step(pdu)`` takes one Login Request and returns the pairs to
answer and whether the stage changes; it raises ``LoginFailed`` to refuse
the login. The stages are RFC 7143's: security (CSG 0), operational
(CSG 1), then full feature phase (NSG 3).

The initiator's first request names it and the target; ``exports`` then
says whether its host needs CHAP (one-way, MD5: RFC 1994 as RFC 7143
12.1.3 uses it).
"""

import hashlib
import hmac
import os

from reference_array.target.iscsi import errors
from reference_array.target.iscsi import params
from reference_array.target.iscsi import pdu as pdus

LoginFailed = errors.LoginFailed
CHAP_MD5 = '5'


class Chap(object):
    """One-way CHAP for one login: a challenge, then the response."""

    def __init__(self, user, secret):
        self.user, self.secret = user, secret
        self.identifier = self.challenge = None
        self.done = False

    def offer(self, algorithms):
        """Answer CHAP_A with the algorithm and a fresh challenge."""
        if CHAP_MD5 not in algorithms.split(','):
            raise LoginFailed(LoginFailed.AUTHENTICATION,
                              'only CHAP with MD5 is supported')
        self.identifier = os.urandom(1)[0]
        self.challenge = os.urandom(16)
        return [('CHAP_A', CHAP_MD5), ('CHAP_I', str(self.identifier)),
                ('CHAP_C', '0x' + self.challenge.hex())]

    def check(self, keys):
        """Check CHAP_N/CHAP_R against the challenge."""
        if self.challenge is None:
            raise LoginFailed(LoginFailed.AUTHENTICATION,
                              'CHAP response before a challenge')
        try:
            response = bytes.fromhex(keys.get('CHAP_R', '')[2:])
        except ValueError:
            response = b''
        expected = hashlib.md5(bytes([self.identifier]) +
                               self.secret.encode() +
                               self.challenge).digest()
        # Compared in constant time: how long a refusal takes says
        # nothing of how much of the response was right.
        if not (hmac.compare_digest(keys['CHAP_N'].encode(),
                                    self.user.encode()) &
                hmac.compare_digest(response, expected)):
            raise LoginFailed(LoginFailed.AUTHENTICATION,
                              'CHAP response rejected')
        if 'CHAP_I' in keys or 'CHAP_C' in keys:
            raise LoginFailed(LoginFailed.AUTHENTICATION,
                              'mutual CHAP is not supported')
        self.done = True


class Login(object):
    """The login state of one connection."""

    def __init__(self, exports, negotiated):
        self.exports = exports
        self.negotiated = negotiated
        self.initiator = None
        self.discovery = False
        self.chap = None            # a Chap when the host requires it

    def _authenticated(self):
        return self.chap is None or self.chap.done

    def step(self, pdu):
        """(pairs to answer, transit) for one Login Request."""
        if pdu.flags & pdus.CONTINUE:
            raise LoginFailed(LoginFailed.MISCELLANEOUS,
                              'continued login text unsupported')
        transit = bool(pdu.transit)
        csg, nsg = pdu.csg, pdu.nsg
        offered = pdus.parse_text(pdu.data)
        keys = dict(offered)
        if self.initiator is None:
            self._first(keys)
        reply = []
        if csg == pdus.SECURITY:
            reply, done = self._security(keys)
            if not done:
                return reply, False
        elif not self._authenticated():
            raise LoginFailed(LoginFailed.AUTHENTICATION, 'CHAP required')
        if csg in (pdus.SECURITY, pdus.OPERATIONAL):
            reply += params.negotiate(offered, self.negotiated)
        if nsg == pdus.FULL_FEATURE and not self._authenticated():
            raise LoginFailed(LoginFailed.AUTHENTICATION, 'CHAP required')
        if not self.discovery and transit and nsg == pdus.FULL_FEATURE:
            reply.append(('TargetPortalGroupTag', '1'))
        return reply, transit

    def _first(self, keys):
        """The first request names the initiator and the session type."""
        self.initiator = keys.get('InitiatorName')
        if not self.initiator:
            raise LoginFailed(LoginFailed.MISSING_PARAMETER,
                              'no InitiatorName')
        self.discovery = keys.get('SessionType') == 'Discovery'
        if self.discovery:
            return
        if keys.get('TargetName') != self.exports.iqn:
            raise LoginFailed(LoginFailed.NOT_FOUND,
                              'unknown target %s' % keys.get('TargetName'))
        credentials = self.exports.chap(self.initiator)
        if credentials is not None:
            self.chap = Chap(*credentials)

    def _security(self, keys):
        """(pairs, whether security is done) in the security stage."""
        if 'AuthMethod' in keys:
            methods = keys['AuthMethod'].split(',')
            if self.chap is not None:
                if 'CHAP' not in methods:
                    raise LoginFailed(LoginFailed.AUTHENTICATION,
                                      'CHAP required')
                return [('AuthMethod', 'CHAP')], False
            if 'None' not in methods:
                raise LoginFailed(LoginFailed.AUTHENTICATION,
                                  'only AuthMethod=None offered here')
            return [('AuthMethod', 'None')], True
        if self.chap is None:
            return [], True
        if 'CHAP_A' in keys:
            return self.chap.offer(keys['CHAP_A']), False
        if 'CHAP_N' in keys:
            self.chap.check(keys)
            return [], True
        return [], self.chap.done
