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

"""The few K2 REST calls the data-path probes need."""

import urllib.parse


class K2(object):
    def __init__(self, arr):
        self.arr = arr

    def _ok(self, status, reply, what):
        if not 200 <= status < 300:
            raise RuntimeError('%s: %s %s' % (what, status, reply))
        return reply

    def create(self, resource, body):
        return self._ok(*self.arr.k2('POST', '/' + resource, body),
                        'create ' + resource)

    def patch(self, resource, oid, body):
        return self._ok(*self.arr.k2('PATCH', '/%s/%d' % (resource, oid),
                                     body), 'patch ' + resource)

    def search(self, resource, **query):
        q = urllib.parse.urlencode(query)
        reply = self._ok(*self.arr.k2('GET', '/%s?%s' % (resource, q)),
                         'search ' + resource)
        return reply['hits']

    def volume(self, name, size_gib, group=None):
        if group is None:
            group = self.create('volume_groups', {
                'name': name + '-vg', 'is_dedup': True, 'quota': 0})
        vol = self.create('volumes', {
            'name': name, 'size': size_gib * 1024 * 1024,
            'volume_group': {'ref': '/volume_groups/%d' % group['id']}})
        return group, vol

    def host(self, name, initiator):
        host = self.create('hosts', {'name': name, 'type': 'Linux'})
        self.create('host_iqns', {'iqn': initiator,
                                  'host': {'ref': '/hosts/%d' % host['id']}})
        return host

    def map(self, host, ref):
        m = self.create('mappings', {'host': {'ref': '/hosts/%d' % host['id']},
                                     'volume': {'ref': ref}})
        return m['lun']
