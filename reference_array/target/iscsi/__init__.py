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

"""The array's iSCSI target (RFC 7143): one target, LUN masking per host.

The target serves a single IQN, as a K2 does. What an initiator sees is
decided per initiator by ``exports``: the LUNs mapped to its host, and
whether its host requires CHAP. Every connection runs in its own thread
and handles its commands in order.

Negotiated: no digests, one connection per session, ImmediateData,
InitialR2T=Yes, one outstanding R2T, data in order, ErrorRecoveryLevel 0.

Layers, from the wire up: ``transport`` (PDUs over TCP), ``pdu`` (the
header by field name), ``params`` (the key table), ``login`` (stages and
CHAP), ``session`` (the command loop), ``server`` (the portal).
"""

from reference_array.target.iscsi import server

Target = server.Target
