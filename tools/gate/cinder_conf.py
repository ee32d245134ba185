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

"""The cinder.conf of the gate bed: every backend as an operator would
configure it (K2 iSCSI replicating to a second array, K2 FC, LINSTOR).
"""

import textwrap

BACKEND = 'k2-iscsi'
LINSTOR_BACKEND = 'linstor-drbd'
BACKENDS = (BACKEND, 'k2-fc', LINSTOR_BACKEND)


def text(bed, cdir, etc, host, port):
    """cinder.conf for ``bed``: state under ``cdir``, Cinder's paste and
    rootwrap files from ``etc``, the array's K2 API at ``host``:``port``.
    """
    return (textwrap.dedent('''\
        [DEFAULT]
        debug = True
        auth_strategy = keystone
        transport_url = rabbit://guest:guest@127.0.0.1:5672/
        host = gate
        my_ip = 127.0.0.1
        state_path = %(c)s/state
        api_paste_config = %(etc)s/api-paste.ini
        rootwrap_config = %(etc)s/rootwrap.conf
        resource_query_filters_file = %(etc)s/resource_filters.json
        osapi_volume_listen = 127.0.0.1
        osapi_volume_workers = 1
        scheduler_driver_init_wait_time = 10
        backend_stats_polling_interval = 10
        enabled_backends = %(backends)s
        default_volume_type = dedup
        [database]
        connection = %(dburl)s/cinder?charset=utf8
        [oslo_concurrency]
        lock_path = %(c)s/lock
        [keystone_authtoken]
        www_authenticate_uri = http://127.0.0.1:5000
        auth_url = http://127.0.0.1:5000
        auth_type = password
        username = cinder
        password = %(svc)s
        user_domain_name = Default
        project_name = service
        project_domain_name = Default
        service_token_roles_required = true
        [%(backend)s]
        volume_driver = cinder_driver.k2.driver.K2ISCSIDriver
        volume_backend_name = %(backend)s
        san_ip = %(host)s
        san_api_port = %(port)s
        san_login = %(user)s
        san_password = %(pw)s
        driver_ssl_cert_path = %(ca)s
        replication_device = %(replica)s
        [k2-fc]
        volume_driver = cinder_driver.k2.driver.K2FCDriver
        volume_backend_name = k2-fc
        san_ip = %(host)s
        san_api_port = %(port)s
        san_login = %(user)s
        san_password = %(pw)s
        driver_ssl_cert_path = %(ca)s
        [%(linstor)s]
        volume_driver = cinder_driver.linstor.driver.LinstorDrbdDriver
        volume_backend_name = %(linstor)s
        linstor_uris = %(linstor_uri)s
        linstor_placement_count = 2
        %(extra)s''') % {
        'backends': ','.join(BACKENDS), 'c': cdir,
        'extra': bed._cinder_extra_conf(),
        'linstor': LINSTOR_BACKEND,
        'linstor_uri': bed.array['linstor'],
        'etc': etc, 'dburl': bed.db_url,
        'svc': bed.passwords['service'], 'backend': BACKEND,
        'host': host, 'port': port, 'user': bed.array['user'],
        'pw': bed.array['password'], 'ca': bed.array['ca_cert'],
        'replica': bed._replication_device()})
