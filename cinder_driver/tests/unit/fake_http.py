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

"""A requests transport adapter that answers from a script.

Tests mount it on a RestSession, so everything above the socket runs for
real: retries, timeouts, TLS arguments, decoding and error mapping.
"""

import json

import requests
from requests import adapters


class Reply(object):

    def __init__(self, status=200, payload=None, text=None,
                 content_type='application/json', raises=None):
        self.status = status
        self.payload = payload
        self.text = text
        self.content_type = content_type
        self.raises = raises


class ScriptedAdapter(adapters.BaseAdapter):

    def __init__(self, replies):
        super().__init__()
        self.replies = list(replies)
        self.calls = []

    def send(self, request, stream=False, timeout=None, verify=True,
             cert=None, proxies=None):
        self.calls.append({'method': request.method, 'url': request.url,
                           'body': request.body, 'timeout': timeout,
                           'verify': verify,
                           'headers': dict(request.headers)})
        reply = self.replies.pop(0)
        if reply.raises is not None:
            raise reply.raises
        resp = requests.Response()
        resp.status_code = reply.status
        resp.reason = 'scripted'
        resp.url = request.url
        resp.request = request
        if reply.text is not None:
            resp._content = reply.text.encode()
        elif reply.payload is not None:
            resp._content = json.dumps(reply.payload).encode()
        else:
            resp._content = b''
        if reply.content_type and resp._content:
            resp.headers['Content-Type'] = reply.content_type
        return resp

    def close(self):
        pass


def mount(rest_session, replies):
    adapter = ScriptedAdapter(replies)
    rest_session.session.mount('https://', adapter)
    rest_session.session.mount('http://', adapter)
    return adapter
