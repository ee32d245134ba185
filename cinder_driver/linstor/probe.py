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

"""``probe()`` of a LINSTOR adapter: can these controllers serve it?

Runs on the adapter's own client, built by its do_setup (URIs, TLS policy,
client certificate) exactly as the driver builds it.
"""

from urllib import parse

from cinder_driver.common import probe
from cinder_driver.common import tls
from cinder_driver.common import versions
from cinder_driver.linstor import client as linstor_client

PASS, FAIL, WARN = probe.PASS, probe.FAIL, probe.WARN
AFTER_LOGIN = probe.AFTER_LOGIN


def run(adapter):
    results = probe.Results()
    conf = adapter.configuration
    client = adapter.client
    urls = [session.base_url for session in client.sessions]
    results.add(PASS, 'config', 'LINSTOR %s driver, controllers %s, pool '
                '%s, %d replicas' % (adapter.protocol, ', '.join(urls),
                                     conf.linstor_storage_pool,
                                     conf.linstor_placement_count))
    timeout = client.sessions[0].timeout[0]
    answering = None
    for index, url in enumerate(urls):
        parsed = parse.urlsplit(url)
        if probe.connect(parsed.hostname, parsed.port, timeout) is None:
            answering = index
            break
    if answering is None:
        results.add(FAIL, 'reachable', 'no controller answered: %s' %
                    ', '.join(urls))
        results.skip(('tls', 'credentials') + AFTER_LOGIN,
                     'controller not reachable')
        return results
    session = client.sessions[answering]
    results.add(PASS, 'reachable', '%s answered' % session.base_url)
    parsed = parse.urlsplit(session.base_url)
    if parsed.scheme == 'https':
        if not probe.handshake(results, parsed.hostname, parsed.port,
                               session.verify, timeout, tls.LINSTOR):
            results.skip(('credentials',) + AFTER_LOGIN, 'TLS failed')
            return results
    else:
        results.add(WARN, 'tls', 'plain HTTP to %s: use linstor+ssl:// or '
                    'https:// outside a trusted network' % session.base_url)
    client.current = answering
    version = probe.login(
        results, client.version,
        'the controller refused user %s' % conf.linstor_username,
        'the controller did not answer as LINSTOR does: %s')
    if version is None:
        return results
    results.add(PASS, 'credentials', 'controller %s accepted the client' %
                version.get('version', '?'))
    _api(results, version['rest_api_version'])
    _nodes(results, client, adapter)
    _capacity(results, client, conf)
    return results


def _api(results, text):
    if not versions.at_least(text, linstor_client.MIN_API_VERSION):
        return results.add(FAIL, 'api', 'REST API %s; at least %s is '
                           'needed' % (text, versions.dotted(
                               linstor_client.MIN_API_VERSION)))
    return results.add(PASS, 'api', 'REST API %s' % text)


def _nodes(results, client, adapter):
    nodes = {n.get('name'): n for n in client.nodes()}
    online = sorted(n for n, v in nodes.items()
                    if v.get('connection_status') == 'ONLINE')
    if adapter.protocol == 'iSCSI' and adapter.local_node not in nodes:
        return results.add(FAIL, 'ports', 'this host (linstor_local_node=%s)'
                           ' is not a LINSTOR node; it exports volumes over '
                           'iSCSI' % adapter.local_node)
    if not online:
        return results.add(FAIL, 'ports', 'no LINSTOR node is ONLINE')
    return results.add(PASS, 'ports', '%d of %d nodes ONLINE' % (
        len(online), len(nodes)))


def _capacity(results, client, conf):
    pools = [p for p in client.storage_pools()
             if p.get('storage_pool_name') == conf.linstor_storage_pool]
    free = sum(p.get('free_capacity') or 0 for p in pools)
    if len(pools) < conf.linstor_placement_count:
        return results.add(FAIL, 'capacity', 'storage pool %s is on %d '
                           'node(s); linstor_placement_count=%d needs more'
                           % (conf.linstor_storage_pool, len(pools),
                              conf.linstor_placement_count))
    if free <= 0:
        return results.add(FAIL, 'capacity', 'storage pool %s is full' %
                           conf.linstor_storage_pool)
    return results.add(PASS, 'capacity', 'storage pool %s: %.1f GiB free on '
                       '%d nodes' % (conf.linstor_storage_pool,
                                     free / 2.0 ** 20, len(pools)))
