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

"""Configuration files of the compute bed's services, as an operator
would write them for one machine.

Pure functions of a ``Context`` (paths, passwords, URLs) so that the
text can be read and tested without starting anything.
"""

import os
import textwrap

from tools.gate.compute import network

KEYSTONE = 'http://127.0.0.1:5000'
PORTS = {'nova-api': 8774, 'placement': 8778, 'glance': 9292,
         'neutron': 9696}
ENDPOINTS = (
    # name, type, URL
    ('nova', 'compute', 'http://127.0.0.1:8774/v2.1'),
    ('placement', 'placement', 'http://127.0.0.1:8778'),
    ('glance', 'image', 'http://127.0.0.1:9292'),
    ('neutron', 'network', 'http://127.0.0.1:9696'),
)
SERVICE_USERS = ('nova', 'placement', 'glance', 'neutron')
DATABASES = ('nova_api', 'nova_cell0', 'nova', 'placement', 'neutron',
             'glance')
COMPUTE_HOST = 'compute1'


class Context(object):

    def __init__(self, bed_dir, logs, cvenv, db_url, service_password,
                 libvirt_uri, transport_url):
        self.dir = bed_dir
        self.logs = logs
        self.cvenv = cvenv
        self.db_url = db_url
        self.service_password = service_password
        self.libvirt_uri = libvirt_uri
        self.transport_url = transport_url

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def etc(self, project, name):
        """A file the project's wheel installs under the venv's etc/."""
        return os.path.join(self.cvenv, 'etc', project, name)

    def privsep(self, conf_files):
        """oslo.privsep's helper, started directly.

        The bed runs as root; the default (sudo and rootwrap) is not
        installed.
        """
        return '%s %s' % (os.path.join(self.cvenv, 'bin', 'privsep-helper'),
                          ' '.join('--config-file %s' % f
                                   for f in conf_files))


def _auth(ctx, user, token_middleware=False):
    """Keystone password credentials of a service user."""
    text = textwrap.dedent('''\
        auth_url = %(ks)s
        auth_type = password
        username = %(user)s
        password = %(pw)s
        user_domain_name = Default
        project_name = service
        project_domain_name = Default
        region_name = RegionOne
        ''') % {'ks': KEYSTONE, 'user': user, 'pw': ctx.service_password}
    if token_middleware:
        text = ('www_authenticate_uri = %s\nservice_token_roles_required = '
                'true\n' % KEYSTONE) + text
    return text


def _database(ctx, name):
    return '%s/%s?charset=utf8' % (ctx.db_url, name)


def placement(ctx):
    return textwrap.dedent('''\
        [DEFAULT]
        debug = True
        [placement_database]
        connection = %(db)s
        [api]
        auth_strategy = keystone
        [keystone_authtoken]
        %(auth)s''') % {'db': _database(ctx, 'placement'),
                        'auth': _auth(ctx, 'placement', True)}


def glance(ctx):
    return textwrap.dedent('''\
        [DEFAULT]
        debug = True
        enabled_backends = file:file
        [database]
        connection = %(db)s
        [glance_store]
        default_backend = file
        [file]
        filesystem_store_datadir = %(images)s
        [os_glance_staging_store]
        filesystem_store_datadir = %(staging)s
        [os_glance_tasks_store]
        filesystem_store_datadir = %(tasks)s
        [paste_deploy]
        flavor = keystone
        config_file = %(paste)s
        [oslo_concurrency]
        lock_path = %(lock)s
        [keystone_authtoken]
        %(auth)s''') % {
        'db': _database(ctx, 'glance'),
        'images': ctx.path('glance', 'images'),
        'staging': ctx.path('glance', 'staging'),
        'tasks': ctx.path('glance', 'tasks'),
        'paste': ctx.etc('glance', 'glance-api-paste.ini'),
        'lock': ctx.path('glance', 'lock'),
        'auth': _auth(ctx, 'glance', True)}


def neutron(ctx):
    conf_files = [ctx.path('neutron', 'neutron.conf'),
                  ctx.path('neutron', 'plugins', 'ml2', 'ml2_conf.ini')]
    return textwrap.dedent('''\
        [DEFAULT]
        debug = True
        core_plugin = ml2
        service_plugins =
        auth_strategy = keystone
        transport_url = %(transport)s
        state_path = %(state)s
        api_paste_config = %(paste)s
        rpc_workers = 1
        rpc_state_report_workers = 1
        notify_nova_on_port_status_changes = True
        notify_nova_on_port_data_changes = True
        dhcp_agent_notification = False
        [database]
        connection = %(db)s
        [agent]
        # The bed runs as root: agent commands need no root helper.
        root_helper = env
        [privsep]
        helper_command = %(privsep)s
        [oslo_concurrency]
        lock_path = %(lock)s
        [keystone_authtoken]
        %(auth)s[nova]
        %(nova)s''') % {
        'transport': ctx.transport_url, 'state': ctx.path('neutron', 'state'),
        'paste': ctx.etc('neutron', 'api-paste.ini'),
        'db': _database(ctx, 'neutron'), 'privsep': ctx.privsep(conf_files),
        'lock': ctx.path('neutron', 'lock'),
        'auth': _auth(ctx, 'neutron', True), 'nova': _auth(ctx, 'nova')}


def ml2(ctx):
    return textwrap.dedent('''\
        [ml2]
        type_drivers = flat
        tenant_network_types =
        mechanism_drivers = macvtap
        extension_drivers = port_security
        [ml2_type_flat]
        flat_networks = %(physnet)s
        [securitygroup]
        enable_security_group = True
        ''') % {'physnet': network.PHYSNET}


def macvtap_agent(ctx):
    return textwrap.dedent('''\
        [DEFAULT]
        # Ports are bound to the agent of the instance's compute host.
        host = %(host)s
        [macvtap]
        physical_interface_mappings = %(physnet)s:%(phys)s
        [securitygroup]
        # The macvtap agent filters nothing; the API still takes groups.
        firewall_driver = noop
        [agent]
        polling_interval = 2
        ''') % {'physnet': network.PHYSNET, 'phys': network.PHYS,
                'host': COMPUTE_HOST}


def nova(ctx):
    conf = ctx.path('nova', 'nova.conf')
    return textwrap.dedent('''\
        [DEFAULT]
        debug = True
        host = %(host)s
        my_ip = 127.0.0.1
        state_path = %(state)s
        instances_path = %(instances)s
        transport_url = %(transport)s
        compute_driver = libvirt.LibvirtDriver
        enabled_apis = osapi_compute
        # No DHCP and no metadata service on the provider network: guests
        # read their address and keys from a config drive.
        force_config_drive = True
        config_drive_format = iso9660
        force_raw_images = False
        initial_cpu_allocation_ratio = 16.0
        max_concurrent_builds = 2
        shutdown_timeout = 5
        [api]
        auth_strategy = keystone
        [wsgi]
        api_paste_config = %(paste)s
        [api_database]
        connection = %(api_db)s
        [database]
        connection = %(db)s
        [libvirt]
        # Software emulation: this machine has no usable hardware
        # virtualisation.
        virt_type = qemu
        connection_uri = %(libvirt)s
        cpu_mode = none
        hw_machine_type = x86_64=pc
        tb_cache_size = 128
        device_detach_timeout = 60
        volume_use_multipath = False
        [vnc]
        enabled = False
        [spice]
        enabled = False
        [serial_console]
        enabled = False
        [scheduler]
        discover_hosts_in_cells_interval = 10
        [oslo_concurrency]
        lock_path = %(lock)s
        [oslo_messaging_notifications]
        driver = noop
        [nova_sys_admin]
        helper_command = %(privsep)s
        [privsep_osbrick]
        helper_command = %(privsep)s
        [keystone_authtoken]
        %(authtoken)s[service_user]
        send_service_user_token = True
        %(nova)s[placement]
        %(placement)s[neutron]
        %(neutron)s[cinder]
        os_region_name = RegionOne
        %(cinder)s[glance]
        region_name = RegionOne
        ''') % {
        'host': COMPUTE_HOST, 'state': ctx.path('nova', 'state'),
        'instances': ctx.path('nova', 'instances'),
        'transport': ctx.transport_url,
        'paste': ctx.etc('nova', 'api-paste.ini'),
        'api_db': _database(ctx, 'nova_api'), 'db': _database(ctx, 'nova'),
        'libvirt': ctx.libvirt_uri, 'lock': ctx.path('nova', 'lock'),
        'privsep': ctx.privsep([conf]),
        'authtoken': _auth(ctx, 'nova', True), 'nova': _auth(ctx, 'nova'),
        'placement': _auth(ctx, 'placement'),
        'neutron': _auth(ctx, 'neutron'), 'cinder': _auth(ctx, 'nova')}


def cinder_extra(ctx, cinder_conf, privsep_helper):
    """What Cinder needs on the compute bed.

    Nova's API for extend and snapshot events, and privileged helpers
    started without sudo.
    """
    helper = '%s --config-file %s' % (privsep_helper, cinder_conf)
    return ('[nova]\ninterface = public\n%s'
            '[privsep_osbrick]\nhelper_command = %s\n'
            '[cinder_sys_admin]\nhelper_command = %s\n' % (
                _auth(ctx, 'nova'), helper, helper))
