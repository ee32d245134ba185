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

"""Where LINSTOR puts replicas: autoplace, spawn and size queries."""

import re

from reference_array.core import errors
from reference_array.linstor import fields
from reference_array.linstor import models
from reference_array.linstor import outcomes
from reference_array.linstor import records as rec


def _probe():
    """A definition with nothing placed, to ask where one would go."""
    return models.ResourceDefinition(name='', rg='', uuid='', port=0,
                                     secret='')


class Placement(object):

    def __init__(self, records, pool_kib, nodes, groups, definitions):
        self.records = records
        self.pool_kib = pool_kib
        self.nodes = nodes
        self.groups = groups
        self.definitions = definitions
        self.store = records.store

    def _merged_filter(self, rd, override):
        merged = dict(self.records.load(rec.RGS, rd.rg).select_filter)
        merged.update(override or {})
        return merged

    def _candidates(self, rd, flt):
        pools = flt.get('storage_pool_list') or []
        providers = flt.get('provider_list') or []
        nodes = [n.lower() for n in flt.get('node_name_list') or []]
        avoid = [r.lower() for r in flt.get('not_place_with_rsc') or []]
        regex = flt.get('not_place_with_rsc_regex')
        size = sum(vd.size_kib for vd in rd.vds)
        out = []
        for node in self.records.nodes():
            name = node.name
            if name in rd.resources or set(
                    node.flags) & {'EVACUATE', 'EVICTED'} or str(
                        node.props.get('AutoplaceTarget',
                                       'true')).lower() == 'false':
                continue
            if nodes and name.lower() not in nodes:
                continue
            if (avoid or regex) and self._avoided(name, avoid, regex):
                continue
            best = None
            for pool_name, pool in sorted(node.pools.items()):
                kind = pool.provider_kind
                if kind == 'DISKLESS' or (pools and pool_name not in pools) \
                        or (providers and kind not in providers):
                    continue
                if not pools and pool_name != rec.DEFAULT_POOL and \
                        rec.DEFAULT_POOL in node.pools:
                    continue
                free, largest = self.nodes.room(node, pool_name)
                if largest < size:
                    continue
                if best is None or free > best[1]:
                    best = (pool_name, free, largest)
            if best:
                out.append((name, best[0], best[1], node.props, best[2]))
        out.sort(key=lambda c: (-c[2], c[0]))
        return out

    def _avoided(self, node_name, avoid, regex):
        """Whether a definition on the node is one the filter avoids
        (by name, any case, or by ``regex``); names only are read.
        """
        others = self.store.pluck(rec.RDS, 'resources.key', node_name,
                                  '$.name')
        return any(o.lower() in avoid for o in others) or bool(
            regex and any(re.match(regex, o) for o in others))

    def _pick(self, rd, flt, count):
        chosen = []
        placed = [self.records.load(rec.NODES, n).props
                  for n in rd.diskful()]
        for cand in self._candidates(rd, flt):
            props = cand[3]
            group = placed + [c[3] for c in chosen]
            if any(
                    props.get(k) != g.get(k)
                    for k in flt.get('replicas_on_same') or [] for g in group):
                continue
            if any(
                    props.get(k) is not None and props.get(k) == g.get(k)
                    for k in flt.get('replicas_on_different') or []
                    for g in group):
                continue
            chosen.append(cand)
            if len(chosen) == count:
                return chosen
        raise outcomes.refused(
            'no_nodes', 'Not enough available '
            'nodes: %d more replicas of %s needed, %d '
            'possible' % (count, rd.name, len(chosen)), obj='rsc',
            op='create', refs={'RscDfn': rd.name})

    def add_resource(self, rd, node_name, pool, diskless, props=None):
        node = self.records.load(rec.NODES, node_name)
        if diskless:
            pool = rec.DISKLESS_POOL if rec.DISKLESS_POOL in node.pools \
                else None
        elif pool not in node.pools or \
                node.pools[pool].provider_kind == 'DISKLESS':
            raise outcomes.refused(
                'no_pool', "Storage pool "
                "'%s' not found on node '%s'." % (pool, node_name),
                obj='stor_pool')
        rd.add_resource(node.name, pool, diskless, props)
        return node.name

    def _place(self, rd, flt):
        """Reach place_count diskful replicas; entries for the reply."""
        diskful = rd.diskful()
        want = flt.get('place_count', rec.DEFAULT_PLACE_COUNT)
        if flt.get('additional_place_count'):
            want = len(diskful) + flt['additional_place_count']
        entries = []
        if want < len(diskful):
            raise outcomes.refused(
                'place_count', 'Resource %s has %d '
                'replicas, more than the %d asked' %
                (rd.name, len(diskful), want), obj='rsc', op='create')
        if want == len(diskful):
            entries.append(
                outcomes.report(
                    'info', 'already_deployed', "Resource '%s' was already "
                    "deployed on %d nodes" % (rd.name, want), obj='rsc',
                    op='create', refs={'RscDfn': rd.name}))
        else:
            for name, pool, _free, _props, _largest in self._pick(
                    rd, flt, want - len(diskful)):
                self.add_resource(rd, name, pool, False)
                entries.append(outcomes.resource_created(rd.name, name))
        if flt.get('diskless_on_remaining') and 'DRBD' in rd.layers:
            for node in self.records.nodes():
                if node.name not in rd.resources:
                    self.add_resource(rd, node.name, None, True)
        return entries

    def autoplace(self, name, body):
        body = body or {}
        with self.store.transaction():
            rd = self.records.load(rec.RDS, name, op='create')
            flt = self.groups.select_filter(body.get('select_filter'), name)
            if body.get('diskless_on_remaining') is not None:
                flt['diskless_on_remaining'] = bool(
                    body['diskless_on_remaining'])
            if body.get('layer_list'):
                layers = fields.layers(body['layer_list'], name)
                if not rd.resources:
                    rd.layers = layers
            entries = self._place(rd, self._merged_filter(rd, flt))
            self.nodes.store_placed(rd)
        return entries

    def spawn(self, rg_name, body):
        name = body.get('resource_definition_name')
        sizes = body.get('volume_sizes') or []
        if not isinstance(sizes, list):
            raise outcomes.invalid('volume_sizes must be a list')
        with self.store.transaction():
            rg = self.records.load(rec.RGS, rg_name, op='create')
            rd = self.definitions.new_rd(
                name, body.get('resource_definition_external_name'),
                rg.name,
                fields.properties(body, 'resource_definition_props',
                                  str(name)), None, 'create')
            groups = rg.volume_groups
            if groups and len(sizes) != len(
                    groups) and not body.get('partial'):
                raise outcomes.invalid(
                    '%d volume sizes for %d volume groups of '
                    '%s' % (len(sizes), len(groups), rg_name))
            for number, size in enumerate(sizes):
                self.definitions.add_vd(rd, number, size)
            entries = [
                outcomes.report(
                    'ok', 'created', "Resource definition '%s' "
                    "created." % rd.name, obj='rsc_dfn', op='create',
                    refs={'RscDfn': rd.name})
            ]
            if not body.get('definitions_only'):
                flt = self.groups.select_filter(body.get('select_filter'),
                                                rg_name)
                try:
                    entries += self._place(rd, self._merged_filter(rd, flt))
                except errors.Conflict as exc:
                    if exc.reason != 'no_nodes':
                        raise
                    # A spawn's placement fails on the group, as LINSTOR
                    # reports it.
                    raise outcomes.refused(
                        'no_nodes', 'Not enough available nodes',
                        obj='rsc_grp', op='create',
                        refs={'RscDfn': rd.name, 'RscGrp': rg_name},
                        details=exc.message)
            self.nodes.store_placed(rd)
        return entries

    def query_size_info(self, rg_name, body):
        rg = self.records.load(rec.RGS, rg_name)
        flt = dict(rg.select_filter)
        flt.update(
            self.groups.select_filter((body or {}).get('select_filter'),
                                      rg_name))
        count = flt.get('place_count', rec.DEFAULT_PLACE_COUNT)
        cands = self._candidates(_probe(), flt)
        info = {
            'default_max_oversubscription_ratio': rec.THIN_RATIO,
            'max_oversubscription_ratio': rec.THIN_RATIO,
            'max_free_capacity_oversubscription_ratio': rec.THIN_RATIO,
            'max_total_capacity_oversubscription_ratio': rec.THIN_RATIO
        }
        if len(cands) < count:
            info.update(max_vlm_size_in_kib=0, available_size_in_kib=0,
                        capacity_in_kib=0, next_spawn_result=[])
        else:
            chosen = cands[:count]
            info.update(
                max_vlm_size_in_kib=min(c[4] for c in chosen),
                available_size_in_kib=min(c[2] for c in chosen),
                capacity_in_kib=self.pool_kib,
                next_spawn_result=[{
                    'node_name': c[0],
                    'stor_pool_name': c[1]
                } for c in cands[:count]])
        return {'space_info': info, 'reports': []}

    def max_volume_sizes(self, flt):
        """What ``query-max-volume-size`` answers for a select filter.

        As LINSTOR does: one candidate per storage pool name where
        ``place_count`` replicas fit, with its nodes and the smallest
        free space among them (thin pools: before oversubscription, which
        the client applies with ``default_max_oversubscription_ratio``).
        """
        count = flt.get('place_count')
        if not count:
            raise outcomes.refused('place_count', 'Replica count is '
                                   'required for this operation')
        names = flt.get('storage_pool_list') or sorted({
            name for node in self.records.nodes()
            for name, pool in node.pools.items()
            if pool.provider_kind != 'DISKLESS'})
        probe = _probe()
        out = []
        for name in sorted(names):
            try:
                chosen = self._pick(probe, dict(flt, storage_pool_list=[
                    name]), count)
            except errors.Conflict:
                continue
            out.append({
                'storage_pool': name,
                'max_volume_size_kib': min(c[2] for c in chosen),
                'node_names': [c[0] for c in chosen],
                'all_thin': all(rec.PROVIDERS[self.records.load(
                    rec.NODES, c[0]).pools[name].provider_kind][0]
                    for c in chosen)})
        if not out:
            raise outcomes.refused('no_nodes', 'Not enough nodes')
        return {'candidates': out,
                'default_max_oversubscription_ratio': rec.THIN_RATIO}

    def query_max_volume_size(self, body):
        """``OPTIONS /v1/query-max-volume-size``: the body is a filter."""
        return self.max_volume_sizes(self.groups.select_filter(
            body, 'query-max-volume-size', check_pools=False))

    def group_max_volume_size(self, rg_name):
        rg = self.records.load(rec.RGS, rg_name)
        return self.max_volume_sizes(dict(
            {'place_count': rec.DEFAULT_PLACE_COUNT}, **rg.select_filter))
