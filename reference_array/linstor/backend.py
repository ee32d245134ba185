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

"""The LINSTOR backend: a simulated cluster over the array's engine.

One service per kind of LINSTOR object, each given the services it uses:
``nodes`` (nodes, storage pools, capacity, controller properties),
``groups`` (resource groups), ``definitions`` (resource and volume
definitions), ``placement`` (autoplace, spawn), ``resources`` and
``snapshots`` (with restores, rollbacks and clones). They return views
and ``outcomes.Report`` entries and raise ``core.errors``; ``api`` speaks
the wire.
"""

from reference_array.linstor import definitions as definitions_mod
from reference_array.linstor import groups as groups_mod
from reference_array.linstor import nodes as nodes_mod
from reference_array.linstor import placement as placement_mod
from reference_array.linstor import records as records_mod
from reference_array.linstor import resources as resources_mod
from reference_array.linstor import snapshots as snapshots_mod


class LinstorBackend(object):

    def __init__(self, store, engine, nodes, pool_kib):
        """Build the services.

        ``nodes``: the cluster's nodes on first start (see
        ``records.default_nodes``); ``pool_kib``: each pool's size.
        """
        self.records = records_mod.Records(store, engine)
        self.nodes = nodes_mod.Nodes(self.records, engine, pool_kib)
        self.groups = groups_mod.Groups(self.records)
        self.definitions = definitions_mod.Definitions(
            self.records, engine, pool_kib, self.nodes)
        self.placement = placement_mod.Placement(
            self.records, pool_kib, self.nodes, self.groups,
            self.definitions)
        self.resources = resources_mod.Resources(
            self.records, engine, self.nodes, self.placement)
        self.snapshots = snapshots_mod.Snapshots(
            self.records, engine, self.nodes, self.definitions,
            self.placement)
        self.nodes.seed(nodes)
