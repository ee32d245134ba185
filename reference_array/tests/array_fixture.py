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

"""Run a reference array process for a test and stop it afterwards."""

import os
from urllib import parse

import fixtures

from reference_array import launch

ArrayProcessError = launch.ArrayProcessError


class ReferenceArray(fixtures.Fixture):

    def __init__(self, data_dir=None, args=(), fault_injection=False):
        """``fault_injection``: serve /_admin/faults (``inject``)."""
        super().__init__()
        self.data_dir = data_dir
        self.args = list(args)
        if fault_injection:
            self.args.append('--fault-injection')
        if '--iscsi-port' not in self.args:
            # Tests run side by side: never the fixed default port.
            self.args += ['--iscsi-port', '0']
        self.process = None

    @property
    def proc(self):
        return self.process.proc if self.process else None

    @property
    def info(self):
        return self.process.info if self.process else None

    def _setUp(self):
        if self.data_dir is None:
            self.data_dir = self.useFixture(fixtures.TempDir()).path
        self.log_file = os.path.join(self.data_dir, 'array.log')
        self.start()
        self.addCleanup(self.stop)

    def start(self):
        self.process = launch.ArrayProcess(
            self.data_dir, ['--debug'] + self.args, self.log_file)
        return self.process.start()

    def stop(self):
        """SIGTERM and wait; returns the exit code."""
        return self.process.stop() if self.process else None

    @property
    def k2_host(self):
        return parse.urlsplit(self.info['k2']).hostname

    @property
    def k2_port(self):
        return parse.urlsplit(self.info['k2']).port

    def k2_requests(self):
        """Requests the array has served so far, as 'METHOD path' lines."""
        path = os.path.join(self.data_dir, 'k2-requests.log')
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [' '.join(line.split()[:2]) for line in f]

    def k2_failures(self):
        """Requests the array answered with an error status."""
        path = os.path.join(self.data_dir, 'k2-requests.log')
        with open(path) as f:
            return [line.strip() for line in f
                    if int(line.split()[2]) >= 400]

    def inject(self, *rules):
        """Add fault rules to the array (see reference_array.faults)."""
        self.k2_client().http.session.post(
            'https://%s:%s/_admin/faults' % (self.k2_host, self.k2_port),
            json=list(rules), verify=self.info['ca_cert'],
            timeout=10).raise_for_status()

    def clear_faults(self):
        self.k2_client().http.session.delete(
            'https://%s:%s/_admin/faults' % (self.k2_host, self.k2_port),
            verify=self.info['ca_cert'], timeout=10).raise_for_status()

    def k2_client(self, password=None, verify=None, retries=0):
        from cinder_driver.k2 import rest
        return rest.K2Rest(
            self.k2_host, self.info['user'],
            self.info['password'] if password is None else password,
            port=self.k2_port,
            verify=self.info['ca_cert'] if verify is None else verify,
            connect_timeout=5, read_timeout=30, retries=retries)

    @property
    def linstor_url(self):
        return self.info['linstor']

    def linstor_requests(self):
        """LINSTOR requests served so far, as 'METHOD path' lines."""
        path = os.path.join(self.data_dir, 'linstor-requests.log')
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [' '.join(line.split()[:2]) for line in f]

    def linstor(self, method, path, body=None, params=None):
        """(status, decoded reply) of one raw LINSTOR call."""
        import requests
        resp = requests.request(method, self.linstor_url + path, json=body,
                                params=params, timeout=30,
                                verify=self.info['ca_cert'])
        return resp.status_code, (resp.json() if resp.content else None)

    def pair_with(self, other, name=None):
        """Register ``other`` as this array's replication peer."""
        from reference_array import pairing
        return pairing.pair(self.info, other.info,
                            name or 'peer-%s' % other.k2_port)
