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

"""The one TLS policy of every cinder-flash backend.

The array's certificate is verified unless the backend section turns
verification off itself (a warning says so each time a client is built);
a configured CA bundle replaces the system store. A client certificate
may be given alone (key inside) or with its key, never a key alone.

Each family names the policy's options its own way; ``FAMILIES`` is the
table. A family may read more than one CA option, first set wins: a
LINSTOR backend also takes Cinder's ``driver_ssl_cert_path``, the option
Canonical's cinder-volume snap writes for every backend given a CA.
"""

import collections

from oslo_log import log as logging

from cinder_driver.common import exception

LOG = logging.getLogger(__name__)

K2 = 'k2'
LINSTOR = 'linstor'

Options = collections.namedtuple('Options', 'verify ca cert key explicit')
FAMILIES = {
    # Cinder's own driver_ssl_cert_verify defaults to False; cinder-flash
    # verifies unless the backend section sets it to False itself.
    K2: Options(verify='driver_ssl_cert_verify', ca=('driver_ssl_cert_path',),
                cert=None, key=None, explicit=True),
    LINSTOR: Options(verify='linstor_verify_tls',
                     ca=('linstor_trusted_ca', 'driver_ssl_cert_path'),
                     cert='linstor_client_cert', key='linstor_client_key',
                     explicit=False),
}


def _explicit(configuration, name):
    """The value set in the backend section itself, or None if unset.

    Cinder's backend-group configuration defaults every grafted option to
    None inside the backend section, so None means "not set there".
    """
    backend_conf = getattr(configuration.conf, 'backend_conf', None)
    if backend_conf is None:
        return configuration.safe_get(name)
    try:
        return getattr(backend_conf, name)
    except Exception:
        return None


def verify(configuration, family, log=LOG):
    """What to pass as requests' ``verify``: True, False or a CA path.

    ``log``: the logger that warns when verification is off (None: no
    warning, for callers that only compare).
    """
    options = FAMILIES[family]
    if options.explicit:
        value = _explicit(configuration, options.verify)
    else:
        value = configuration.safe_get(options.verify)
    if value is False:
        if log is not None:
            log.warning('TLS certificate verification of backend %s is '
                        'disabled by %s=False.', configuration.config_group,
                        options.verify)
        return False
    for name in options.ca:
        path = configuration.safe_get(name)
        if path:
            return path
    return True


def client_cert(configuration, family):
    """None, the certificate path, or (certificate, key) to present."""
    options = FAMILIES[family]
    if options.cert is None:
        return None
    cert = configuration.safe_get(options.cert)
    key = configuration.safe_get(options.key)
    if key and not cert:
        raise exception.InvalidBackendConfig(
            option=options.key, value=key,
            reason='%s must be set with it' % options.cert)
    if cert and key:
        return cert, key
    return cert or None
