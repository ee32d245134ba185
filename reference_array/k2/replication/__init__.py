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

"""Asynchronous, snapshot-based replication between two reference arrays.

The K2 model: arrays are paired (``replication/peer_k2arrays``); a
*session* replicates one volume group to a group of the peer, and
``replication/peer_volumes`` names the peer volume of each local volume.
The source array decides the remote names, creates the remote objects
when the session first goes ``in_sync``, then ships one consistent point
in time of the whole group every ``rpo`` seconds (or at once when asked).

How a cycle works
-----------------
* Source: every volume's layer is frozen in one transaction (a
  consistent image of the group); the chunks that changed since the image
  shipped last time are sent; then the previous image is released.
* Target: ``begin`` freezes its volumes too, so an interrupted cycle can
  be rolled back; ``commit`` drops that image. A failover in the middle of
  a cycle therefore exposes the last complete image, never a mix.

Session states are K2's: ``idle``, ``in_sync``, ``suspended``,
``failed_over``; roles ``source`` and ``target``. ``failed_over`` on a
target makes its volumes writable; ``in_sync`` on a failed-over target
reverses the direction (the old source becomes the target and receives a
full copy), which is how a failback is done.

Modules: ``sessions`` (what every side shares), ``objects`` (the REST
objects: peers, sessions, peer volumes, state changes), ``shipper`` (the
source's cycle loop), ``peer`` (the client of a paired array and the API
that answers it).
"""
