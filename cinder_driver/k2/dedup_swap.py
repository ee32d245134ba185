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

"""Retype across deduplication on a K2 array: copy, then swap names.

A K2 volume group keeps the deduplication it was made with, so the volume
is copied on the array into a new group of the other kind, under
temporary names (the volume's names with ``-r``); the original is deleted
and the copy takes over its names.

Until the original is deleted a failure leaves the volume as it was, and
the copy and its group go again. Once it is deleted the retype has
succeeded, and the emptied old group goes and the copy takes the names.
When the array does not answer that cleanup or tidying (its REST service
restarts, the link drops) the rest is remembered and done at the next
chance: the next stats refresh (Cinder asks every minute) or the volume's
next retype, and deleting the volume removes it all. Otherwise a copy is
only removed while the original is known to exist: when the delete of
the original may have been applied after all, the copy holds the only
data and stays.
"""

import functools
import threading

from oslo_log import log as logging

from cinder_driver.common import exception as flash_exception
from cinder_driver.common import naming
from cinder_driver.k2 import specs

LOG = logging.getLogger(__name__)
TEMP_SUFFIX = '-r'


def temp_names(volume):
    """(volume name, volume group name) of a volume's copy in progress."""
    return (naming.volume_name(volume) + TEMP_SUFFIX,
            naming.group_name(volume) + TEMP_SUFFIX)


class DedupSwap(object):
    """Copy-and-swap retypes of one array, and what they left behind."""

    def __init__(self, client):
        self.client = client
        # {volume name_id: the rest of a swap, a callable}: work the array
        # did not let through, retried at each stats refresh. The lock
        # keeps a retry from racing the volume's next retype, which makes
        # objects of the same names.
        self._leftovers = {}
        self._lock = threading.Lock()

    def swap(self, volume, group, volume_id, dedup):
        """Copy into a group of ``dedup`` and swap in.

        Returns the (group id, volume id) the volume has afterwards.
        """
        with self._lock:
            rest = self._leftovers.pop(volume.name_id, None)
        if rest is not None:
            # What an earlier attempt left goes first; if it still cannot,
            # this retype changes nothing.
            self._attempt(volume, rest, raising=True)
        names = temp_names(volume)
        original = (group.id, volume_id)
        # An earlier attempt whose cleanup never got through (e.g. the
        # service restarted since) would make the names below clash.
        self._remove(names, original)
        old = self.client.volume(volume_id)
        try:
            temp_group = self.client.create_volume_group(names[1], dedup)
            copy = self.client.create_volume(names[0], old.size, temp_group,
                                             from_volume=volume_id)
            self.client.delete_volume(volume_id)
        except Exception:
            # The original was not deleted, or may have been: the copy
            # goes only once the original is seen in place.
            self._attempt(volume, functools.partial(
                self._remove, names, original))
            raise
        # From here the copy is the volume: whatever fails now must not
        # fail the retype, or Cinder would keep pointing at the deleted
        # original. The old group and the names are tidied now or later.
        self._attempt(volume, functools.partial(
            self._tidy, volume, group.id, temp_group, copy))
        return temp_group, copy

    def _attempt(self, volume, step, raising=False):
        """Run ``step``; if the array does not let it through, keep it."""
        try:
            step()
        except Exception as e:
            LOG.warning('Retype of volume %(vol)s: cleanup failed (retried '
                        'later): %(err)s', {'vol': volume.id, 'err': e})
            with self._lock:
                self._leftovers[volume.name_id] = step
            if raising:
                raise

    def _tidy(self, volume, old_group_id, temp_group, copy):
        """Remove the emptied old group; the copy takes the names."""
        old = self.client.volume_group_by_name(naming.group_name(volume))
        if old is not None and old.id == old_group_id:
            self.client.delete_volume_group(old_group_id)
        try:
            self.client.rename_volume_group(temp_group,
                                            naming.group_name(volume))
            self.client.update_volume(copy, name=naming.volume_name(volume),
                                      description=specs.owner(volume))
        except flash_exception.ObjectNotFound:
            # The volume was deleted since: nothing is left to name.
            pass

    def forget(self, volume, group_id):
        """``volume`` was deleted: what its retypes left goes as well.

        ``group_id``: its volume group, which the caller deletes (or keeps
        when it holds snapshots someone else made).
        """
        with self._lock:
            rest = self._leftovers.pop(volume.name_id, None)
        if rest is not None:
            self._attempt(volume, functools.partial(self._remove_all,
                                                    volume, group_id))

    def _remove_all(self, volume, group_id):
        """The copy, its group and an old group, by name: the volume is
        deleted, so none of them holds data anyone keeps.
        """
        copy_name, group_name = temp_names(volume)
        copy = self.client.volume_by_name(copy_name)
        if copy is not None:
            self.client.delete_volume(copy.id)
        for name in (group_name, naming.group_name(volume)):
            group = self.client.volume_group_by_name(name)
            if group is not None and group.id != group_id:
                self.client.delete_volume_group(group.id)

    def _remove(self, names, original):
        """Remove a copy and its group by name, if the original exists.

        ``original``: (group id, volume id) of the volume, never removed
        (they carry the temporary names when a swap could not rename
        them).
        """
        copy_name, group_name = names
        group_id, volume_id = original
        copy = self.client.volume_by_name(copy_name)
        temp_group = self.client.volume_group_by_name(group_name)
        if copy is None and temp_group is None:
            return
        try:
            self.client.volume(volume_id)
        except flash_exception.ObjectNotFound:
            LOG.error('Volume %(orig)s is gone while its copy %(copy)s '
                      'exists: the copy holds its data and is kept',
                      {'orig': volume_id, 'copy': copy_name})
            return
        if copy is not None and copy.id != volume_id:
            self.client.delete_volume(copy.id)
        if temp_group is not None and temp_group.id != group_id:
            self.client.delete_volume_group(temp_group.id)

    def retry(self):
        """Finish what earlier swaps left; keep what still fails."""
        with self._lock:
            for name_id, step in list(self._leftovers.items()):
                try:
                    step()
                except Exception as e:
                    LOG.warning('Retype cleanup still failing: %s', e)
                    continue
                del self._leftovers[name_id]
