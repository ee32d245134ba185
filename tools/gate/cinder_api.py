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

"""A small Cinder v3 REST client for the bed's load and checks: the calls
Nova and an operator make, through Keystone, with timeouts on each.
"""

import threading
import uuid

from keystoneauth1.identity import v3
from keystoneauth1 import service_token
from keystoneauth1 import session as ks_session

MICROVERSION = '3.70'
TIMEOUT = (5, 90)  # connect, read: a call to a dead service ends at 60 s


class ApiError(Exception):

    def __init__(self, method, url, status, body):
        super().__init__('%s %s: HTTP %s %s' % (method, url, status,
                                                body[:300]))
        self.status = status


class CinderApi(object):

    def __init__(self, admin_env, service=None):
        """``service``: (user, password, project) of a user with the
        service role, sent as a service token the way Nova sends one
        (Cinder lets only a service delete a connected attachment).
        """
        auth = v3.Password(
            auth_url=admin_env['OS_AUTH_URL'],
            username=admin_env['OS_USERNAME'],
            password=admin_env['OS_PASSWORD'],
            project_name=admin_env['OS_PROJECT_NAME'],
            user_domain_id=admin_env['OS_USER_DOMAIN_ID'],
            project_domain_id=admin_env['OS_PROJECT_DOMAIN_ID'])
        if service is not None:
            auth = service_token.ServiceTokenAuthWrapper(auth, v3.Password(
                auth_url=admin_env['OS_AUTH_URL'], username=service[0],
                password=service[1], project_name=service[2],
                user_domain_id='default', project_domain_id='default'))
        self.session = ks_session.Session(auth=auth, timeout=TIMEOUT[1])
        self._calls = threading.local()
        self.endpoint = self.session.get_endpoint(
            service_type='block-storage', interface='public',
            region_name=admin_env['OS_REGION_NAME']).rstrip('/')

    def call(self, method, path, body=None, ok=(200, 202, 204)):
        url = self.endpoint + path
        reply = self.session.request(
            url, method, json=body, raise_exc=False,
            connect_retries=2,
            headers={'OpenStack-API-Version': 'volume ' + MICROVERSION,
                     'Accept': 'application/json'})
        ids = getattr(self._calls, 'request_ids', None)
        if ids is not None:
            ids.append(reply.headers.get('x-openstack-request-id'))
        if reply.status_code not in ok:
            raise ApiError(method, path, reply.status_code, reply.text)
        if reply.status_code == 204 or not reply.content:
            return {}
        return reply.json()

    def track(self):
        """Collect this thread's request ids from now on; the list."""
        self._calls.request_ids = []
        return self._calls.request_ids

    def _get_or_none(self, path, key):
        try:
            return self.call('GET', path)[key]
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    # -- volumes -------------------------------------------------------------
    def create_volume(self, size, volume_type, name, source_volid=None,
                      snapshot_id=None):
        body = {'size': size, 'volume_type': volume_type, 'name': name}
        if source_volid:
            body['source_volid'] = source_volid
        if snapshot_id:
            body['snapshot_id'] = snapshot_id
        return self.call('POST', '/volumes', {'volume': body})['volume']

    def volume(self, volume_id):
        return self._get_or_none('/volumes/%s' % volume_id, 'volume')

    def volumes(self):
        return self.call('GET', '/volumes/detail?all_tenants=1&limit=1000'
                         )['volumes']

    def delete_volume(self, volume_id):
        self.call('DELETE', '/volumes/%s' % volume_id)

    def volume_action(self, volume_id, action, args=None):
        self.call('POST', '/volumes/%s/action' % volume_id, {action: args})

    def extend(self, volume_id, new_size):
        self.volume_action(volume_id, 'os-extend', {'new_size': new_size})

    def reset_volume(self, volume_id, status, attach_status=None):
        args = {'status': status}
        if attach_status:
            args['attach_status'] = attach_status
        self.volume_action(volume_id, 'os-reset_status', args)

    # -- snapshots -----------------------------------------------------------
    def create_snapshot(self, volume_id, name):
        return self.call('POST', '/snapshots', {'snapshot': {
            'volume_id': volume_id, 'name': name, 'force': True}}
        )['snapshot']

    def snapshot(self, snapshot_id):
        return self._get_or_none('/snapshots/%s' % snapshot_id, 'snapshot')

    def snapshots(self):
        return self.call('GET', '/snapshots/detail?all_tenants=1&limit=1000'
                         )['snapshots']

    def delete_snapshot(self, snapshot_id):
        self.call('DELETE', '/snapshots/%s' % snapshot_id)

    def reset_snapshot(self, snapshot_id, status):
        self.call('POST', '/snapshots/%s/action' % snapshot_id,
                  {'os-reset_status': {'status': status}})

    # -- attachments (as Nova makes them) ------------------------------------
    def reserve(self, volume_id):
        """An attachment without a connection (Nova, at boot or attach)."""
        return self.call('POST', '/attachments', {'attachment': {
            'volume_uuid': volume_id, 'instance_uuid': str(uuid.uuid4()),
            'mode': 'rw'}})['attachment']

    def connect(self, attachment_id, connector):
        """The connection to ``connector``'s host (the volume service
        maps the volume to it).
        """
        return self.call('PUT', '/attachments/%s' % attachment_id,
                         {'attachment': {'connector': connector}}
                         )['attachment']

    def complete(self, attachment_id):
        """The attachment in use (Nova, once the guest has its disk)."""
        self.call('POST', '/attachments/%s/action' % attachment_id,
                  {'os-complete': None})

    def terminate_connection(self, volume_id, connector):
        """The backend forgets ``connector``'s connection to the volume."""
        self.volume_action(volume_id, 'os-terminate_connection',
                           {'connector': connector})

    def attachments(self):
        return self.call('GET', '/attachments/detail?all_tenants=1'
                         )['attachments']

    def detach(self, attachment_id):
        self.call('DELETE', '/attachments/%s' % attachment_id)

    def unlimited_quotas(self):
        """No quota in the way of a load in the admin project."""
        project = self.session.get_project_id()
        self.call('PUT', '/os-quota-sets/%s' % project, {'quota_set': {
            key: -1 for key in ('volumes', 'snapshots', 'gigabytes',
                                'per_volume_gigabytes', 'groups',
                                'backups', 'backup_gigabytes')}})

    # -- services ------------------------------------------------------------
    def services(self, binary=None):
        path = '/os-services' + ('?binary=%s' % binary if binary else '')
        return self.call('GET', path)['services']

    def workers_cleanup(self, **filters):
        return self.call('POST', '/workers/cleanup', filters)
