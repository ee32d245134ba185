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

"""Group replication rounds of the fault soak (``tools/soak.py``).

Each round makes a replicated consistent group (one K2 session per
group), gives it two members, enables its replication, fails the group
over to the secondary and back, and adds a third member while it
replicates, all through the driver while both arrays inject faults.
What ended in an error is cleaned up afterwards as a user would (the
group is deleted with its volumes). Once the faults stop, every group
that came through must replicate from the primary, with its members
copied to the secondary under the primary's names; then every group is
deleted and neither array may keep anything of them.

Cinder reads a group's type from its database, so the rounds run on a
SQLite database of their own.
"""

import time

from cinder.objects import fields

# A cycle of one group's session on the reference array takes well under
# a second; the bound only keeps a stuck session from hanging the soak.
SHIP_TIMEOUT = 30
ENABLED = fields.ReplicationStatus.ENABLED
FAILED_OVER = fields.ReplicationStatus.FAILED_OVER


def setup_database(path):
    """Cinder's schema in a SQLite file (group types live there)."""
    from cinder.db import migration
    from oslo_config import cfg
    cfg.CONF.set_override('connection', 'sqlite:///%s' % path,
                          group='database')
    migration.db_sync()


class GroupRounds(object):

    def __init__(self, soak):
        from cinder.volume import group_types
        self.soak = soak
        self.driver, self.ctx = soak.driver, soak.ctx
        self.counts = soak.counts
        self.group_type = group_types.create(
            self.ctx, 'soak-replicated-%s' % soak._uuid()[:8],
            {'consistent_group_replication_enabled': '<is> True'})
        # {group id: (group, members)}: groups that came through.
        self.groups = {}
        self.errored = []

    def _group(self):
        from cinder import objects
        from cinder.tests.unit import fake_group
        grp = fake_group.fake_group_obj(
            self.ctx, id=self.soak._uuid(),
            group_type_id=self.group_type['id'],
            replication_status=fields.ReplicationStatus.DISABLED)
        grp.volume_types = objects.VolumeTypeList(
            objects=[self.soak.types['replicated']])
        return grp

    def _member(self, grp, members):
        vol = self.soak.fake_volume.fake_volume_obj(
            self.ctx, id=self.soak._uuid(), size=1, provider_id=None,
            group_id=grp.id)
        vol.volume_type = self.soak.types['replicated']
        vol.group = grp
        members.append(vol)
        vol.update(self.driver.create_volume(vol))

    @staticmethod
    def _apply(grp, members, model, updates):
        grp.update(model or {})
        by_id = {u['id']: u for u in updates or []}
        for vol in members:
            vol.update({k: v for k, v in by_id.get(vol.id, {}).items()
                        if k != 'id'})

    def _step(self, name, grp, members, call, *args):
        model, updates = call(self.ctx, grp, members, *args)
        self._apply(grp, members, model, updates)
        self.counts['group %s ok' % name] += 1

    def round(self):
        grp = self._group()
        members = []
        step = 'create'
        try:
            self.driver.create_group(self.ctx, grp)
            self.counts['group create ok'] += 1
            step = 'member'
            for _n in range(2):
                self._member(grp, members)
            step = 'enable'
            self._step(step, grp, members, self.driver.enable_replication)
            step = 'failover'
            self._step(step, grp, members, self.driver.failover_replication,
                       'secondary')
            step = 'failback'
            self._step(step, grp, members, self.driver.failover_replication,
                       'default')
            step = 'member'
            self._member(grp, members)
            self.counts['group member ok'] += 1
        except Exception as e:
            self.counts['group %s failed' % step] += 1
            self.counts['error: ' + type(e).__name__] += 1
            self.errored.append((grp, members))
            return
        self.groups[grp.id] = (grp, members)

    def run(self, rounds):
        for _n in range(rounds):
            self.round()

    def settle(self):
        """Delete what ended in an error, as a user would."""
        errored, self.errored = self.errored, []
        for grp, members in errored:
            try:
                _model, updates = self.driver.delete_group(self.ctx, grp,
                                                           members)
                if any(u.get('status') != 'deleted' for u in updates or []):
                    raise RuntimeError('a member was not deleted')
                self.counts['follow-up delete_group ok'] += 1
            except Exception:
                self.counts['follow-up delete_group failed'] += 1
                self.errored.append((grp, members))

    @staticmethod
    def _holds(k2, grp):
        """Names of the volumes in the group's volume group on ``k2``."""
        from cinder_driver.k2 import groups
        from cinder_driver.k2 import rest
        vg = k2.search('volume_groups', name=groups.group_name(grp))
        if not vg:
            return set()
        return {v['name'] for v in k2.search('volumes', **{
            'volume_group.ref': rest.ref_text('volume_groups',
                                              vg[0]['id'])})}

    def _shipped(self, primary, secondary, grp, want):
        """Ask for a cycle and wait (bounded) until the secondary holds
        ``want``: a member joins the copy at its session's next cycle.
        """
        from cinder_driver.k2 import group_replication
        deadline = time.monotonic() + SHIP_TIMEOUT
        session = primary.find('replication/sessions',
                               name=group_replication.session_name(grp))
        if session is not None:
            primary.update('replication/sessions', session['id'],
                           {'state': 'in_sync'})
        while True:
            names = self._holds(secondary, grp)
            if names == want or time.monotonic() > deadline:
                return names
            time.sleep(0.2)

    def reconcile(self, primary, secondary):
        """Differences between the groups kept and the two arrays."""
        from cinder_driver.common import naming
        from cinder_driver.k2 import group_replication
        problems = []
        for grp, members in self.groups.values():
            session = group_replication.session_name(grp)
            if grp.replication_status != ENABLED or any(
                    v.replication_status != ENABLED for v in members):
                problems.append('group %s: replication %s, members %s' % (
                    grp.id, grp.replication_status,
                    sorted(v.replication_status for v in members)))
            for k2, role in ((primary, 'source'), (secondary, 'target')):
                found = [s for s in k2.search('replication/sessions')
                         if s.get('name') == session]
                if [s.get('current_role') for s in found] != [role] or \
                        found[0].get('state') != 'in_sync':
                    problems.append('group %s: sessions %s on the %s '
                                    'array' % (grp.id, found, role))
                want = {naming.volume_name(v) for v in members}
                names = self._holds(k2, grp) if k2 is primary else \
                    self._shipped(primary, secondary, grp, want)
                if names != want:
                    problems.append('group %s on the %s array holds %s, '
                                    'not %s' % (grp.id, role, sorted(names),
                                                sorted(want)))
        return problems

    def delete_all(self):
        for grp, members in self.groups.values():
            self.errored.append((grp, members))
        self.groups = {}
        self.settle()

    @staticmethod
    def leftovers(k2):
        """Anything of a group on an array after every group went."""
        from cinder_driver.k2 import group_replication
        from cinder_driver.k2 import groups
        found = ['session %s' % s['name']
                 for s in k2.search('replication/sessions')
                 if str(s.get('name')).startswith(
                     group_replication.SESSION_PREFIX)]
        found += ['volume group %s' % g['name']
                  for g in k2.search('volume_groups')
                  if str(g.get('name')).startswith(groups.GROUP_PREFIX)]
        return found
