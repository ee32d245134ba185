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

"""``provider_id``: where a Cinder volume or snapshot is on a K2 array.

Text form ``<container>/<member>[/g][@<array>]``:

* a volume: ``<volume group id>/<volume id>``; a snapshot: ``<snapshot
  id>/<volsnap id>``;
* ``/g`` when the container is shared (a member of a consistent group):
  deleting the member never deletes the container;
* ``@<backend_id>`` when the ids are those of the replication target's
  array; ids of one array name other objects on another.
"""

import collections
import re

SHARED = 'g'
_TEXT = re.compile(r'^(\d{1,18})/(\d{1,18})(/%s)?(?:@(.{1,255}))?$' % SHARED,
                   re.DOTALL)


class ProviderId(collections.namedtuple('ProviderId',
                                        'container member shared array')):

    def __new__(cls, container, member, shared=False, array=None):
        return super().__new__(cls, int(container), int(member),
                               bool(shared), array or None)

    @classmethod
    def parse(cls, text):
        """The ProviderId of ``text``, or None when it is not one."""
        if not isinstance(text, str):
            return None
        match = _TEXT.match(text)
        if match is None:
            return None
        container, member, shared, array = match.groups()
        return cls(container, member, bool(shared), array)

    def __str__(self):
        text = '%d/%d' % (self.container, self.member)
        if self.shared:
            text += '/' + SHARED
        if self.array:
            text += '@' + self.array
        return text

    @property
    def ids(self):
        return self.container, self.member


def is_shared(text):
    """Whether a provider_id marks a member of a consistent group."""
    pid = ProviderId.parse(text)
    return pid is not None and pid.shared
