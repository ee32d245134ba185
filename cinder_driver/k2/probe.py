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

"""``probe()`` of a K2 adapter: can this array serve this backend?

Runs on the adapter's own client, built from the backend section exactly
as the driver builds it, and applies the driver's own rules (API version,
portals, retention policy).
"""

from cinder_driver.common import exception
from cinder_driver.common import probe
from cinder_driver.common import tls
from cinder_driver.common import versions
from cinder_driver.k2 import client as k2_client

PASS, FAIL = probe.PASS, probe.FAIL
AFTER_LOGIN = probe.AFTER_LOGIN


def run(adapter):
    results = probe.Results()
    client = adapter.client
    host, port = client.endpoint
    results.add(PASS, 'config', 'K2 %s driver, array %s:%s, user %s' % (
        adapter.PROTOCOL, host, port, client.http.username))
    timeout = client.http.timeout[0]
    if not probe.reachable(results, host, port, timeout):
        results.skip(('tls', 'credentials') + AFTER_LOGIN,
                     'array not reachable')
        return results
    if not probe.handshake(results, host, port, client.http.verify, timeout,
                           tls.K2):
        results.skip(('credentials',) + AFTER_LOGIN, 'TLS failed')
        return results

    def log_in():
        client.discover_capabilities()
        return client.system_state()

    state = probe.login(
        results, log_in,
        'user %s was refused (HTTP 401): check san_login and san_password'
        % client.http.username,
        'the array REST service did not answer as a K2 does: %s')
    if state is None:
        return results
    results.add(PASS, 'credentials', 'user %s accepted' %
                client.http.username)
    api(results, state, adapter)
    adapter.probe_ports(results, state)
    capacity(results, client)
    return results


def api(results, state, adapter=None):
    """The array speaks a REST API the driver supports and is ONLINE."""
    name = state.system_name
    if not versions.at_least(state.api_version, k2_client.MIN_API_VERSION):
        return results.add(FAIL, 'api', 'array %s has REST API %s; at least '
                           '%s is needed' % (name, state.api_version,
                                             versions.dotted(
                                                 k2_client.MIN_API_VERSION)))
    if str(state.state).upper() != 'ONLINE':
        return results.add(FAIL, 'api', 'array %s is %s, not ONLINE' % (
            name, state.state or 'in no state'))
    if adapter is not None:
        policy = adapter.configuration.k2_retention_policy
        if adapter.client.retention_policy_id(policy) is None:
            return results.add(FAIL, 'api', 'array %s has no retention '
                               'policy %s (k2_retention_policy)' % (
                                   name, policy))
    return results.add(PASS, 'api', 'array %s, REST API %s, ONLINE' % (
        name, state.api_version))


def capacity(results, client):
    try:
        cap = client.capacity()
    except exception.ArrayBadReply:
        return results.add(FAIL, 'capacity',
                           'system/capacity has no total/free')
    if cap.free <= 0:
        return results.add(FAIL, 'capacity', 'the array is full (%d KiB '
                           'total)' % cap.total)
    return results.add(PASS, 'capacity', '%.1f GiB free of %.1f GiB' % (
        cap.free / 2.0 ** 20, cap.total / 2.0 ** 20))
