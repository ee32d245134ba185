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

"""The one reader of the API versions arrays and controllers report.

``"2.2"`` is 2.2.0; ``"1.9.0-rc2"`` is a pre-release of 1.9.0, which
comes before 1.9.0 itself (semantic versioning); build metadata after
``+`` is ignored. Anything else is not a version, and a minimum is never
met by something that is not a version.
"""

import collections
import re

_VERSION = re.compile(
    r'^v?(\d{1,9})(?:\.(\d{1,9}))?(?:\.(\d{1,9}))?'
    r'(?:[-~]([0-9A-Za-z.-]{1,64}))?(?:\+[0-9A-Za-z.-]{1,64})?$')


class Version(collections.namedtuple('Version',
                                     'major minor patch final')):
    """A parsed version; ``final`` is False for a pre-release.

    Tuples order correctly: a pre-release sorts before its release.
    """

    @property
    def release(self):
        return (self.major, self.minor, self.patch)

    def __str__(self):
        text = '%d.%d.%d' % self.release
        return text if self.final else text + '-pre'


def parse(text):
    """A ``Version`` of ``text``, or None if it is not a version."""
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):
        return None
    match = _VERSION.match(str(text).strip())
    if match is None:
        return None
    major, minor, patch, pre = match.groups()
    return Version(int(major), int(minor or 0), int(patch or 0), pre is None)


def at_least(text, minimum):
    """Whether ``text`` is a version at or above ``minimum`` (a tuple)."""
    version = parse(text)
    wanted = tuple(minimum) + (0,) * (3 - len(minimum))
    return version is not None and version >= Version(*wanted, final=True)


def dotted(minimum):
    """``(2, 2, 0)`` -> ``'2.2.0'``, for messages."""
    return '.'.join(str(part) for part in minimum)
