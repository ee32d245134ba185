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

"""Operational key negotiation (RFC 7143 section 13) as a table of keys.

Each key says how its values are written (a number in a range, Yes or
No, a list of choices), what the target itself wants, and the rule that
reconciles the initiator's offer with it: the smaller or the larger
number, either or both of two booleans, the first offered choice the
target supports, or a declaration (each side states its own value; the
target keeps the initiator's and answers with its own).

A value that is not of the key's type or lies outside its range refuses
the login (initiator error); it never ends the connection any other way.
A new key is one row of ``KEYS``; a value the session uses lands on
``Negotiated`` under the row's attribute name.
"""

from reference_array.target.iscsi import errors

# The target's own limits, the only place they are written.
MAX_RECV_DATA_SEGMENT = 262144      # the most it receives in one PDU
MAX_BURST = 262144                  # the most it solicits or sends per burst
FIRST_BURST = 65536                 # the most unsolicited data it accepts
LENGTH_LIMIT = (1 << 24) - 1        # RFC 7143 ceiling of the length keys

# Keys of the login itself (login.py), not answered here.
LOGIN_KEYS = frozenset(('InitiatorName', 'TargetName', 'SessionType',
                        'InitiatorAlias', 'AuthMethod'))


class Negotiated(object):
    """The values a session works with; RFC defaults until negotiated."""

    def __init__(self):
        # The initiator's MaxRecvDataSegmentLength: Data-In PDUs carry
        # at most this much.
        self.max_send_segment = 8192
        self.max_burst = MAX_BURST
        self.first_burst = FIRST_BURST
        self.immediate_data = True


# -- value types -------------------------------------------------------------
class Number(object):
    """A decimal or hexadecimal (0x) number within [low, high]."""

    def __init__(self, low, high):
        self.low, self.high = low, high

    def parse(self, text):
        if text[:2] in ('0x', '0X'):
            digits, base = text[2:], 16
            valid = set('0123456789abcdefABCDEF')
        else:
            digits, base = text, 10
            valid = set('0123456789')
        if not digits or not set(digits) <= valid:
            raise ValueError('not a number')
        # Longer than any 64-bit number: out of range, not converted.
        value = int(digits, base) if len(digits.lstrip('0')) <= 20 else -1
        if not self.low <= value <= self.high:
            raise ValueError('outside %d..%d' % (self.low, self.high))
        return value

    def format(self, value):
        return str(value)


class Boolean(object):

    def parse(self, text):
        if text == 'Yes':
            return True
        if text == 'No':
            return False
        raise ValueError('neither Yes nor No')

    def format(self, value):
        return 'Yes' if value else 'No'


class Choices(object):
    """A comma-separated list of values, in the initiator's preference."""

    def parse(self, text):
        values = tuple(text.split(','))
        if not all(values):
            raise ValueError('an empty choice')
        return values

    def format(self, value):
        return value


# -- reconcile rules: (offer, ours) -> result ------------------------------
def smaller(offer, ours):
    return min(offer, ours)


def larger(offer, ours):
    return max(offer, ours)


def either(offer, ours):
    return offer or ours


def both(offer, ours):
    return offer and ours


def first_supported(offer, ours):
    """The first offered choice the target supports; None: none is."""
    for value in offer:
        if value in ours:
            return value
    return None


def declared(offer, ours):
    """Each side declares its own value: the target keeps the offer."""
    return offer


class Key(object):

    def __init__(self, name, kind, ours, rule, attribute=None):
        self.name, self.kind, self.ours, self.rule = name, kind, ours, rule
        self.attribute = attribute

    def negotiate(self, text, negotiated):
        """The answer to ``name=text``; records the result."""
        try:
            offer = self.kind.parse(text)
        except ValueError as e:
            raise errors.LoginFailed(
                errors.LoginFailed.MISCELLANEOUS,
                '%s=%r: %s' % (self.name, text[:64], e))
        result = self.rule(offer, self.ours)
        if result is None:
            return 'Reject'
        if self.attribute:
            setattr(negotiated, self.attribute, result)
        return self.kind.format(self.ours if self.rule is declared
                                else result)


_LENGTH = Number(512, LENGTH_LIMIT)

KEYS = {key.name: key for key in (
    Key('HeaderDigest', Choices(), ('None',), first_supported),
    Key('DataDigest', Choices(), ('None',), first_supported),
    Key('MaxConnections', Number(1, 65535), 1, smaller),
    Key('InitialR2T', Boolean(), True, either),
    Key('ImmediateData', Boolean(), True, both, 'immediate_data'),
    Key('MaxRecvDataSegmentLength', _LENGTH, MAX_RECV_DATA_SEGMENT,
        declared, 'max_send_segment'),
    Key('MaxBurstLength', _LENGTH, MAX_BURST, smaller, 'max_burst'),
    Key('FirstBurstLength', _LENGTH, FIRST_BURST, smaller, 'first_burst'),
    Key('DefaultTime2Wait', Number(0, 3600), 2, larger),
    Key('DefaultTime2Retain', Number(0, 3600), 0, smaller),
    Key('MaxOutstandingR2T', Number(1, 65535), 1, smaller),
    Key('DataPDUInOrder', Boolean(), True, either),
    Key('DataSequenceInOrder', Boolean(), True, either),
    Key('ErrorRecoveryLevel', Number(0, 2), 0, smaller),
    Key('IFMarker', Boolean(), False, both),
    Key('OFMarker', Boolean(), False, both),
)}


def negotiate(offered, negotiated):
    """Answers to the operational keys among ``offered`` (key, value)
    pairs, in order; raises LoginFailed for a malformed value.
    """
    reply = []
    for name, text in offered:
        if name in LOGIN_KEYS or name.startswith('CHAP_'):
            continue
        key = KEYS.get(name)
        reply.append((name, key.negotiate(text, negotiated) if key
                      else 'NotUnderstood'))
    return reply
