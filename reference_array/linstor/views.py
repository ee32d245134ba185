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

"""Wire forms of ``models.ResourceDefinition`` and its volumes.

The one copy of a definition's view: the single GET builds it from the
model, and the store keeps it beside each stored definition
(``models.VIEW_FUNCTIONS``), written in the transaction of every change,
so that a page of definitions is its stored texts joined.
"""

# The names of a definition's stored views (``store.page_text``).
PLAIN = 'rd'
WITH_VDS = 'rd+vds'
# How this module writes a definition's views: a change here moves it, so
# that the views stored before are written again (``core/views.py``).
FORM = 1


def _layer_data(rd):
    out = []
    for layer in rd.layers:
        entry = {'type': layer}
        if layer == 'DRBD':
            entry['data'] = {
                'peer_slots': rd.peer_slots,
                'al_stripes': 1,
                'al_stripe_size_kib': 32,
                'port': rd.port,
                'transport_type': 'IP',
                'secret': rd.secret,
                'down': False
            }
        out.append(entry)
    return out


def vd_view(rd, vd):
    layer_data = [{'type': layer} for layer in rd.layers]
    for entry in layer_data:
        if entry['type'] == 'DRBD':
            entry['data'] = {'minor_number': vd.minor}
    return {
        'volume_number': vd.volume_number,
        'size_kib': vd.size_kib,
        'props': dict(vd.props),
        'flags': list(vd.flags),
        'layer_data': layer_data,
        'uuid': vd.uuid
    }


def rd_view(rd, with_vds=False):
    view = {
        'name': rd.name,
        'props': dict(rd.props),
        'flags': [],
        'layer_data': _layer_data(rd),
        'uuid': rd.uuid,
        'resource_group_name': rd.rg
    }
    if rd.external_name:
        view['external_name'] = rd.external_name
    if with_vds:
        view['volume_definitions'] = [vd_view(rd, vd) for vd in rd.vds]
    return view


def stored_views(rd):
    """The views the store keeps of ``rd``, by name."""
    plain = rd_view(rd)
    return {PLAIN: plain,
            WITH_VDS: dict(plain, volume_definitions=[
                vd_view(rd, vd) for vd in rd.vds])}
