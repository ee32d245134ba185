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

"""Pair two running reference arrays for replication, as an admin would.

``pair(array, peer, name)`` registers ``peer`` on ``array`` through
``POST replication/peer_k2arrays``; ``array`` and ``peer`` are the JSON
ready lines the arrays printed. Pair both ways for failback.
"""

import requests

TIMEOUT = (5, 60)


class PairingError(Exception):
    pass


def pair(array, peer, name):
    with open(peer['ca_cert']) as f:
        ca_pem = f.read()
    # verify per call: REQUESTS_CA_BUNDLE would override a session's.
    reply = requests.post(
        array['k2'] + '/api/v2/replication/peer_k2arrays',
        auth=(array['user'], array['password']), verify=array['ca_cert'],
        timeout=TIMEOUT, json={
            'name': name, 'mgmt_host': peer['k2'].split('://', 1)[1],
            'username': peer['user'], 'password': peer['password'],
            'ca_cert': ca_pem})
    if reply.status_code != 201:
        raise PairingError('pairing %s with %s failed: HTTP %d %s' % (
            array['k2'], peer['k2'], reply.status_code, reply.text[:300]))
    return reply.json()
