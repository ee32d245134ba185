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

"""A LINSTOR controller faked at the HTTP boundary.

Replies have the shapes LINSTOR 1.33.3 sends (recorded from a controller
and satellite with a FILE_THIN pool and the storage-only layer list):
refusals are HTTP 500 (404 for a missing object on GET) with a list of
ApiCallRc entries, ``ret_code`` is a signed 64-bit integer, a deleted
missing object is a warning with HTTP 200, and a clone answers an object
holding its entries. Everything above the socket runs for real: the
client, retries, decoding.
"""

import json
import re
import urllib.parse

import requests
from requests import adapters

from cinder_driver.linstor import apicallrc

KINDS = {'ok': apicallrc.SUCCESS, 'error': apicallrc.ERROR,
         'warn': apicallrc.WARN, 'info': apicallrc.INFO}
OPS = {None: 0, 'create': apicallrc.CREATE, 'modify': apicallrc.MODIFY,
       'delete': apicallrc.DELETE}


def ret_code(kind, code, obj=None, op=None):
    value = KINDS[kind] | OPS[op] | (apicallrc.OBJECTS[obj] if obj else 0) \
        | code
    return value - (1 << 64) if value >= 1 << 63 else value


def entry(kind, code, message, obj=None, op=None, **refs):
    out = {'ret_code': ret_code(kind, code, obj, op), 'message': message,
           'obj_refs': refs, 'created_at': '2026-11-22T21:04:51.385Z'}
    if kind == 'error':
        out['error_report_ids'] = ['6B03588C-00000-000001']
    return out


class Reply(object):

    def __init__(self, status, payload=None, raises=None):
        self.status = status
        self.payload = payload
        self.raises = raises


# -- replies as LINSTOR 1.33.3 words them ------------------------------------
def rg_created(rg):
    return Reply(201, [entry('ok', 1, "New resource group '%s' created." %
                             rg, 'rsc_grp', 'create', RscGrp=rg)])


def rg_exists(rg):
    return Reply(500, [entry('error', 522, 'A Resource group: %s already '
                             'exists.' % rg, 'rsc_grp', 'create',
                             RscGrp=rg)])


def rg_modified(rg):
    return Reply(200, [entry('ok', 3, "Resource group '%s' modified." % rg,
                             'rsc_grp', 'create', RscGrp=rg)])


def prop_refused(obj, key, value):
    return Reply(500, [entry('error', 213, 'Invalid property(%s) value: %s'
                             % (key, value), obj, 'create')])


def rg_view(rg, select_filter, props=None):
    """A group as GET shows it: no props key when it has none."""
    out = {'name': rg, 'description': 'cinder-flash volume type t',
           'select_filter': dict(select_filter), 'uuid': 'u-' + rg}
    if props:
        out['props'] = dict(props)
    return Reply(200, out)


def spawned(rg, rd):
    return Reply(201, [
        entry('info', 0, "Resource-group doesn't have any volume-groups, "
              'automatically assume partial mode.', 'rsc_grp', RscDfn=rd,
              RscGrp=rg),
        entry('ok', 1, "Volume definition with number '0' successfully  "
              "created in resource definition '%s'." % rd, 'vlm_dfn',
              'create', RscDfn=rd, VlmNr='0'),
        entry('ok', 1, "New resource definition '%s' created." % rd,
              'rsc_dfn', 'create', RscDfn=rd, RscGrp=rg),
        entry('ok', 1, "Resource '%s' successfully autoplaced on 1 nodes" %
              rd, 'rsc_grp', 'create', RscDfn=rd),
        entry('ok', 3, "Created resource '%s' on 'stlt1'" % rd, 'rsc_grp',
              'create', RscDfn=rd)])


def rd_exists_on_spawn(rg, rd):
    # Object bits of the group, code of the definition.
    return Reply(500, [entry('error', 501, "A resource definition with "
                             "the name '%s' already exists" % rd, 'rsc_grp',
                             'create', RscDfn=rd, RscGrp=rg)])


def rd_exists(rd):
    return Reply(500, [entry('error', 501, "A resource definition with the "
                             "name '%s' already exists" % rd, 'rsc_dfn',
                             'create', RscDfn=rd)])


def rd_created(rd):
    return Reply(201, [entry('ok', 1, "New resource definition '%s' "
                             "created." % rd, 'rsc_dfn', 'create',
                             RscDfn=rd)])


def not_found_get(what):
    """GET of a missing object: 404, no object or operation bits."""
    return Reply(404, [entry('error', 301, "%s not found." % what)])


def deleted(rd):
    return Reply(200, [entry('ok', 2, "Resource definition '%s' deleted." %
                             rd, 'rsc_dfn', 'delete', RscDfn=rd)])


def delete_missing(obj='rsc_dfn', what='Resource definition: x'):
    return Reply(200, [entry('warn', 3000, '%s not found.' % what, obj,
                             'delete')])


def ok(message='done', obj='rsc_dfn', op='modify'):
    return Reply(200, [entry('ok', 3, message, obj, op)])


def refused(code, message, obj='rsc_dfn', op='create', status=500):
    return Reply(status, [entry('error', code, message, obj, op)])


def clone_refused(src, dst):
    return Reply(500, {
        'location': '/v1/resource-definitions/%s/clone/%s' % (src, dst),
        'source_name': src, 'clone_name': dst,
        'messages': [entry('error', 227, 'Clone source contains '
                           'unsupported storage pools', 'rsc_dfn', 'create',
                           RscDfn=dst)]})


def clone_started(src, dst):
    return Reply(201, {
        'location': '/v1/resource-definitions/%s/clone/%s' % (src, dst),
        'source_name': src, 'clone_name': dst,
        'messages': [entry('ok', 1, "New resource definition '%s' "
                           "created." % dst, 'rsc_dfn', 'create')]})


def already_deployed(rd, node):
    return Reply(200, [entry('ok', 0, 'Resource already deployed as '
                             'requested', 'rsc', 'create', RscDfn=rd,
                             Node=node)])


def made_available(rd, node):
    return Reply(200, [
        entry('ok', 1, 'Successfully set property key(s): StorPoolName',
              'rsc', 'create', RscDfn=rd, Node=node),
        entry('ok', 1, "New resource '%s' on node '%s' registered." % (
            rd, node), 'rsc', 'create', RscDfn=rd, Node=node),
        entry('ok', 3, "Created resource '%s' on '%s'" % (rd, node), 'rsc',
              'create', RscDfn=rd, Node=node)])


def snapshot_made(rd, snap):
    return Reply(201, [entry('ok', 1, "New snapshot '%s' of resource '%s' "
                             "registered." % (snap, rd), 'snapshot',
                             'create', RscDfn=rd, Snapshot=snap)])


def rd_view(rd, rg='DfltRscGrp', layers=('STORAGE',)):
    """GET of one definition: never any volume definitions."""
    return {'name': rd, 'props': {'DrbdOptions/Resource/quorum': 'off'},
            'layer_data': [{'type': t} for t in layers],
            'uuid': 'u-' + rd, 'resource_group_name': rg}


def vd_view(size_kib, number=0):
    return {'volume_number': number, 'size_kib': size_kib,
            'props': {'DrbdOptions/Disk/block-size': '512'},
            'layer_data': [{'type': 'STORAGE'}], 'uuid': 'vd-%d' % number}


def resource_view(rd, node, pool='filethin', props=None, flags=(),
                  drbd_minor=None):
    """A resource with volume 0; storage-only unless a DRBD minor is given.

    A storage-only volume has no usable_size_kib.
    """
    layers = [{'type': 'STORAGE', 'data': {
        'volume_number': 0, 'device_path': '/dev/loop1',
        'allocated_size_kib': 8, 'usable_size_kib': 8,
        'disk_state': '[]'}}]
    path = '/dev/loop1'
    if drbd_minor is not None:
        path = '/dev/drbd%d' % drbd_minor
        layers.insert(0, {'type': 'DRBD', 'data': {
            'device_path': path, 'usable_size_kib': 1048576}})
    return {'name': rd, 'node_name': node, 'props': dict(
        props or {'StorPoolName': pool}), 'flags': list(flags),
        'layer_object': {'type': layers[0]['type']}, 'state': {},
        'uuid': 'r-' + rd + node,
        'volumes': [{'volume_number': 0, 'storage_pool_name': pool,
                     'provider_kind': 'FILE_THIN', 'device_path': path,
                     'allocated_size_kib': 0, 'layer_data_list': layers}]}


def pool_view(node, name='filethin', kind='FILE_THIN', total=4128768,
              free=4066860):
    return {'storage_pool_name': name, 'node_name': node,
            'provider_kind': kind,
            'static_traits': {'Provisioning': 'Thin' if 'THIN' in kind
                              else 'Fat', 'SupportsSnapshots': 'true'},
            'free_capacity': free, 'total_capacity': total,
            'uuid': 'sp-' + node + name}


class FakeController(adapters.BaseAdapter):
    """Answers by route: (method, path regex) -> replies in order.

    The last reply of a route repeats. A request no route expects fails
    the test with the request in the message.
    """

    def __init__(self):
        super().__init__()
        self.routes = []
        self.calls = []

    def on(self, method, pattern, *replies):
        replies = [r if isinstance(r, Reply) else Reply(200, r)
                   for r in replies]
        self.routes.insert(0, (method, re.compile('^%s$' % pattern),
                               replies))
        return self

    def requests(self):
        return ['%s %s' % (c['method'], c['path']) for c in self.calls]

    def bodies(self, method, pattern):
        rx = re.compile('^%s$' % pattern)
        return [c['body'] for c in self.calls
                if c['method'] == method and rx.match(c['path'])]

    def send(self, request, stream=False, timeout=None, verify=True,
             cert=None, proxies=None):
        url = urllib.parse.urlsplit(request.url)
        body = json.loads(request.body) if request.body else None
        self.calls.append({'method': request.method, 'path': url.path,
                           'query': url.query, 'body': body})
        for method, rx, replies in self.routes:
            if method == request.method and rx.match(url.path):
                reply = replies.pop(0) if len(replies) > 1 else replies[0]
                break
        else:
            raise AssertionError('unexpected LINSTOR request %s %s %s' % (
                request.method, url.path, body))
        if reply.raises is not None:
            raise reply.raises
        resp = requests.Response()
        resp.status_code = reply.status
        resp.reason = 'Internal Server Error' if reply.status == 500 else ''
        resp.url = request.url
        resp.request = request
        resp._content = b'' if reply.payload is None else json.dumps(
            reply.payload).encode()
        if resp._content:
            resp.headers['Content-Type'] = 'application/json'
        return resp

    def close(self):
        pass


def mount(linstor_client):
    fake = FakeController()
    for session in linstor_client.sessions:
        session.session.mount('http://', fake)
        session.session.mount('https://', fake)
    return fake
