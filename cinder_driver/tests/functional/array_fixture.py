"""Run a reference array process for a test and stop it afterwards."""

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from urllib import parse

import fixtures

START_TIMEOUT = 60


class ArrayProcessError(Exception):
    pass


class ReferenceArray(fixtures.Fixture):

    def __init__(self, data_dir=None, args=()):
        super().__init__()
        self.data_dir = data_dir
        self.args = list(args)
        if '--iscsi-port' not in self.args:
            # Tests run side by side: never the fixed default port.
            self.args += ['--iscsi-port', '0']
        self.proc = None
        self.info = None

    def _setUp(self):
        if self.data_dir is None:
            self.data_dir = self.useFixture(fixtures.TempDir()).path
        self.log_file = os.path.join(self.data_dir, 'array.log')
        self.start()
        self.addCleanup(self.stop)

    def _log_tail(self):
        try:
            with open(self.log_file) as f:
                return ''.join(f.readlines()[-20:])
        except OSError:
            return ''

    def start(self):
        cmd = [sys.executable, '-m', 'reference_array', 'serve',
               '--data-dir', self.data_dir, '--log-file', self.log_file,
               '--debug'] + self.args
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + START_TIMEOUT
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.proc.kill()
                    self.proc.wait()
                    raise ArrayProcessError(
                        'array did not start in %ss; log:\n%s' % (
                            START_TIMEOUT, self._log_tail()))
                if sel.select(timeout=min(left, 0.5)):
                    line = self.proc.stdout.readline()
                    if line:
                        self.info = json.loads(line)
                        return self.info
                if self.proc.poll() is not None:
                    raise ArrayProcessError(
                        'array exited with %s: %s\n%s' % (
                            self.proc.returncode, self.proc.stderr.read(),
                            self._log_tail()))
        finally:
            sel.close()

    def stop(self):
        """SIGTERM and wait; returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise ArrayProcessError('array ignored SIGTERM for 30 s')
        finally:
            self.proc.stdout.close()
            self.proc.stderr.close()
        return code

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
        from cinder_driver.k2 import client
        return client.K2Client(
            self.k2_host, self.info['user'],
            self.info['password'] if password is None else password,
            port=self.k2_port,
            verify=self.info['ca_cert'] if verify is None else verify,
            connect_timeout=5, read_timeout=30, retries=retries)

    def pair_with(self, other, name=None):
        """Register ``other`` as this array's replication peer."""
        from reference_array import pairing
        return pairing.pair(self.info, other.info,
                            name or 'peer-%s' % other.k2_port)
