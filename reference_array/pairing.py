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
