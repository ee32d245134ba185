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

"""Start a reference array process, read its ready line, stop it.

One way for every caller (test fixtures, the gate bed, benchmarks, the
soak): the array logs to a file, its ready line is read within a
deadline, and a start that fails says why with the end of the log.
"""

import json
import os
import selectors
import signal
import subprocess
import sys
import time

START_TIMEOUT = 60
STOP_TIMEOUT = 30


class ArrayProcessError(Exception):
    pass


class ArrayProcess(object):

    def __init__(self, data_dir, args=(), log_file=None, detach=False):
        """``detach``: own session, so the array outlives its starter."""
        self.data_dir = data_dir
        self.args = list(args)
        self.log_file = log_file or os.path.join(data_dir, 'array.log')
        self.detach = detach
        self.proc = None
        self.info = None

    @property
    def pid(self):
        return self.proc.pid

    def log_tail(self, lines=20):
        try:
            with open(self.log_file) as f:
                return ''.join(f.readlines()[-lines:])
        except OSError:
            return ''

    def start(self, timeout=START_TIMEOUT):
        os.makedirs(self.data_dir, exist_ok=True)
        cmd = [sys.executable, '-m', 'reference_array', 'serve',
               '--data-dir', self.data_dir, '--log-file',
               self.log_file] + self.args
        # stderr is never a pipe: nobody would read it, and a full pipe
        # would stall the array.
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, text=True,
            start_new_session=self.detach)
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.kill()
                    raise ArrayProcessError(
                        'array did not start in %ss; log:\n%s' % (
                            timeout, self.log_tail()))
                if sel.select(timeout=min(left, 0.5)):
                    line = self.proc.stdout.readline()
                    if line:
                        self.info = json.loads(line)
                        return self.info
                if self.proc.poll() is not None:
                    raise ArrayProcessError(
                        'array exited with %s; log:\n%s' % (
                            self.proc.returncode, self.log_tail()))
        finally:
            sel.close()

    def _reap(self):
        self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM and wait; the exit code (None if never started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise ArrayProcessError('array ignored SIGTERM for %ss' %
                                        timeout)
        self._reap()
        return self.proc.returncode

    def kill(self):
        """SIGKILL: a crash, for crash tests."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self._reap()
