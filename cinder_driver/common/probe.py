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

"""What ``cinder-flash check`` asks of an adapter: verdict lines.

Each backend family's adapter has ``probe() -> [(verdict, name,
detail)]``, run on the clients the driver itself built from the section,
so check passes exactly the configurations the driver accepts. The steps
every family shares (a TCP connection, a verified TLS handshake) are here.
"""

import socket
import ssl
import time

from cinder_driver.common import exception
from cinder_driver.common import tls

PASS, FAIL, WARN, SKIP = 'PASS', 'FAIL', 'WARN', 'SKIP'
AFTER_LOGIN = ('api', 'ports', 'capacity')


class Results(list):
    """(verdict, name, detail) tuples, in the order the checks ran."""

    def add(self, verdict, name, detail):
        self.append((verdict, name, detail))
        return verdict

    def skip(self, names, why):
        for name in names:
            self.add(SKIP, name, why)


def login(results, call, refused, unlike):
    """The first authenticated call: its result, or None with a verdict.

    ``refused``: the detail when the credentials are refused; ``unlike``:
    the detail (with %s for the error) when the answer is not the
    family's.
    """
    try:
        return call()
    except exception.ArrayAuthError:
        results.add(FAIL, 'credentials', refused)
        results.skip(AFTER_LOGIN, 'not logged in')
    except exception.ArrayAPIError as e:
        results.add(FAIL, 'credentials', unlike % e.msg)
    return None


def connect(host, port, timeout):
    """None if a TCP connection opens, else why not."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as e:
        return e.strerror or str(e)


def reachable(results, host, port, timeout):
    started = time.monotonic()
    error = connect(host, port, timeout)
    if error:
        results.add(FAIL, 'reachable', '%s:%s: %s' % (host, port, error))
        return False
    results.add(PASS, 'reachable', '%s:%s answered in %.0f ms' % (
        host, port, (time.monotonic() - started) * 1000))
    return True


def handshake(results, host, port, verify, timeout, family):
    """A TLS handshake the way the client will verify it (``verify``)."""
    options = tls.FAMILIES[family]
    if verify is False:
        results.add(WARN, 'tls', 'certificate NOT verified: %s=False in this '
                    'section' % options.verify)
        return True
    ctx = ssl.create_default_context()
    source = 'system CA store'
    if isinstance(verify, str):
        source = verify
        try:
            ctx = ssl.create_default_context(cafile=verify)
        except (OSError, ssl.SSLError) as e:
            results.add(FAIL, 'tls', '%s=%s cannot be read: %s' % (
                ' or '.join(options.ca), verify, e))
            return False
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            with ctx.wrap_socket(s, server_hostname=host) as conn:
                version = conn.version()
    except ssl.SSLCertVerificationError as e:
        results.add(FAIL, 'tls', 'certificate not trusted (%s) against %s; '
                    'set %s to the CA of the array' % (
                        e.verify_message, source, options.ca[0]))
        return False
    except (OSError, ssl.SSLError) as e:
        results.add(FAIL, 'tls', 'TLS handshake failed: %s' % e)
        return False
    results.add(PASS, 'tls', '%s, certificate verified against %s' % (
        version, source))
    return True
