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
