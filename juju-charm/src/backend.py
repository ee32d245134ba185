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

"""The cinder.conf section of one cinder-flash backend, from charm config.

Pure functions, no Juju: ``section`` validates the options and returns the
``[key, value]`` pairs the cinder charm writes into cinder.conf, or raises
``ConfigError`` naming the bad option.
"""

import ipaddress
import re
import urllib.parse

DRIVERS = {
    ('k2', 'iscsi'): 'cinder_driver.k2.driver.K2ISCSIDriver',
    ('k2', 'fc'): 'cinder_driver.k2.driver.K2FCDriver',
    ('linstor', 'drbd'): 'cinder_driver.linstor.driver.LinstorDrbdDriver',
    ('linstor', 'iscsi'): 'cinder_driver.linstor.driver.LinstorISCSIDriver',
}
BACKEND_TYPES = sorted({kind for kind, _p in DRIVERS})
_HOST = re.compile(r'^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?'
                   r'(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$')
_BACKEND_ID = re.compile(r'^[A-Za-z0-9_.-]+$')
_ZONE = re.compile(r'^[A-Za-z0-9_.:-]{1,255}$')
LINSTOR_SCHEMES = ('linstor', 'linstor+ssl', 'http', 'https')


class ConfigError(Exception):
    """A bad or missing option; the message is the unit's status."""


def valid_host(value):
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return bool(_HOST.match(value))


def _host_port(option, value):
    host, sep, port = value.rpartition(':')
    if not sep or not port.isdigit():
        host, port = value, None
    if not valid_host(host):
        raise ConfigError('%s: %r is not a host name or IP address' % (
            option, value))
    if port is not None and not 0 < int(port) < 65536:
        raise ConfigError('%s: port %s is out of range' % (option, port))
    return host, port


def _credentials(option, content, required):
    if content is None:
        if required:
            raise ConfigError('%s is required (a secret with username and '
                              'password)' % option)
        return None
    missing = [k for k in ('username', 'password') if not content.get(k)]
    if missing:
        raise ConfigError('%s: the secret has no %s' % (
            option, ' or '.join(missing)))
    for key in ('username', 'password'):
        if any(c in content[key] for c in ',:\n'):
            raise ConfigError('%s: the %s holds a character cinder.conf '
                              'cannot carry here (, : or a newline)' % (
                                  option, key))
    return content['username'], content['password']


def section(config, app_name, credentials=None, replication=None,
            ca_path=None, chap=None, client_paths=None):
    """[[key, value], ...] of the backend section.

    ``credentials``/``replication``/``chap``: the secrets' contents (dicts)
    or None; ``ca_path``: where the charm wrote ``ca-certificate``, if set;
    ``client_paths``: (certificate, key) files the charm wrote from
    ``linstor-client-certificate``, if set.
    """
    kind = (config.get('backend-type') or '').strip().lower()
    if kind not in BACKEND_TYPES:
        raise ConfigError('backend-type: %r is not one of %s' % (
            config.get('backend-type'), ', '.join(BACKEND_TYPES)))
    protocol = (config.get('protocol') or '').strip().lower()
    protocols = sorted(p for k, p in DRIVERS if k == kind)
    if protocol not in protocols:
        raise ConfigError('protocol: %r is not one of %s for %s' % (
            config.get('protocol'), ', '.join(protocols), kind))
    name = config.get('volume-backend-name') or app_name
    ratio = config.get('max-over-subscription-ratio', 20.0)
    if not isinstance(ratio, (int, float)) or ratio < 1:
        raise ConfigError('max-over-subscription-ratio: %r is below 1' % (
            ratio,))
    pairs = [['volume_driver', DRIVERS[(kind, protocol)]],
             ['volume_backend_name', name]]
    if kind == 'k2':
        if client_paths:
            raise ConfigError('linstor-client-certificate applies to '
                              'linstor only')
        pairs += _k2(config, credentials, replication)
    else:
        pairs += _linstor(config, credentials)
        if client_paths:
            pairs += [['linstor_client_cert', client_paths[0]],
                      ['linstor_client_key', client_paths[1]]]
    verify = bool(config.get('tls-verify', True))
    multipath = bool(config.get('use-multipath', True))
    # The LINSTOR driver has TLS options of its own (as LINBIT's has).
    verify_key, ca_key = {
        'k2': ('driver_ssl_cert_verify', 'driver_ssl_cert_path'),
        'linstor': ('linstor_verify_tls', 'linstor_trusted_ca')}[kind]
    pairs += [[verify_key, str(verify)],
              ['use_multipath_for_image_xfer', str(multipath)],
              ['max_over_subscription_ratio', str(float(ratio))]]
    if ca_path:
        pairs.append([ca_key, ca_path])
    zone = (config.get('backend-availability-zone') or '').strip()
    if zone:
        if not _ZONE.match(zone):
            raise ConfigError('backend-availability-zone: %r is not a zone '
                              'name' % zone)
        pairs.append(['backend_availability_zone', zone])
    pairs += _chap(protocol, chap)
    return pairs


def _chap(protocol, content):
    """Fixed CHAP credentials for iSCSI hosts, from their secret.

    Without them the K2 driver gives each host a secret of its own.
    """
    creds = _credentials('chap-credentials', content, False)
    if creds is None:
        return []
    if protocol != 'iscsi':
        raise ConfigError('chap-credentials: CHAP applies to iscsi only, '
                          'not %s' % protocol)
    return [['use_chap_auth', 'True'], ['chap_username', creds[0]],
            ['chap_password', creds[1]]]


def _k2(config, credentials, replication):
    address = (config.get('san-ip') or '').strip()
    if not address:
        raise ConfigError('san-ip is required for k2')
    _host_port('san-ip', address)
    user, password = _credentials('credentials', credentials, True)
    pairs = [['san_ip', address], ['san_login', user],
             ['san_password', password]]
    port = config.get('san-api-port') or 0
    if port:
        if not 0 < port < 65536:
            raise ConfigError('san-api-port: %s is out of range' % port)
        pairs.append(['san_api_port', str(port)])
    if config.get('auto-over-subscription'):
        pairs.append(['k2_auto_max_over_subscription_ratio', 'True'])
    target = (config.get('replication-target') or '').strip()
    if target:
        backend_id, sep, address = target.partition(':')
        if not sep or not _BACKEND_ID.match(backend_id) or \
                backend_id == 'default':
            raise ConfigError('replication-target: %r is not '
                              'backend_id:host[:port]' % target)
        host, port = _host_port('replication-target', address)
        r_user, r_password = _credentials('replication-credentials',
                                          replication, True)
        device = [('backend_id', backend_id), ('san_ip', host)]
        if port:
            device.append(('san_api_port', port))
        device += [('san_login', r_user), ('san_password', r_password)]
        pairs.append(['replication_device', ','.join(
            '%s:%s' % item for item in device)])
    elif replication is not None:
        raise ConfigError('replication-credentials is set but '
                          'replication-target is empty')
    return pairs


def _linstor(config, credentials):
    uris = [u.strip() for u in (config.get('linstor-uris') or '').split(',')
            if u.strip()]
    if not uris:
        raise ConfigError('linstor-uris is required for linstor')
    for uri in uris:
        parsed = urllib.parse.urlsplit(uri)
        if parsed.scheme not in LINSTOR_SCHEMES or not parsed.hostname or \
                not valid_host(parsed.hostname):
            raise ConfigError('linstor-uris: %r is not a %s URI' % (
                uri, '/'.join(LINSTOR_SCHEMES)))
    count = config.get('linstor-placement-count', 2)
    if not isinstance(count, int) or count < 1:
        raise ConfigError('linstor-placement-count: %r is below 1' % (
            count,))
    pool = (config.get('linstor-storage-pool') or '').strip()
    if not pool:
        raise ConfigError('linstor-storage-pool is required for linstor')
    pairs = [['linstor_uris', ','.join(uris)],
             ['linstor_placement_count', str(count)],
             ['linstor_storage_pool', pool]]
    creds = _credentials('credentials', credentials, False)
    if creds:
        pairs += [['linstor_username', creds[0]],
                  ['linstor_password', creds[1]]]
    return pairs


def ca_pem(config):
    """The ``ca-certificate`` option's PEM text, or None when empty."""
    pem = (config.get('ca-certificate') or '').strip()
    if not pem:
        return None
    if '-----BEGIN CERTIFICATE-----' not in pem:
        raise ConfigError('ca-certificate is not a PEM certificate')
    return pem


def client_certificate(content):
    """(certificate PEM, key PEM) of a ``linstor-client-certificate``
    secret's content, or None when the option is empty.
    """
    if content is None:
        return None
    cert = (content.get('certificate') or '').strip()
    key = (content.get('key') or '').strip()
    if '-----BEGIN CERTIFICATE-----' not in cert:
        raise ConfigError('linstor-client-certificate: the secret has no '
                          'PEM certificate under "certificate"')
    if not re.search(r'-----BEGIN [A-Z ]*PRIVATE KEY-----', key):
        raise ConfigError('linstor-client-certificate: the secret has no '
                          'PEM private key under "key"')
    return cert, key


def check_verdict(returncode, output):
    """None when ``cinder-flash check`` passed, else its first failure."""
    if returncode == 0:
        return None
    failed = [line for line in output.splitlines()
              if line.startswith('FAIL')]
    return 'check failed: %s' % (
        ' '.join(failed[0].split()[1:]) if failed else
        'exit status %d' % returncode)


def render(backend, pairs):
    """The section as cinder.conf text (for ``cinder-flash check``)."""
    lines = ['[%s]' % backend] + ['%s = %s' % (k, v) for k, v in pairs]
    return '\n'.join(lines) + '\n'
