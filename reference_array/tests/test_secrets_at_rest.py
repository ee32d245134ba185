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

"""Secrets at rest: the data directory is private whoever made it, and
passwords reach the array through a file or the environment, never argv.
"""

import os
import stat
import subprocess
import sys

import fixtures
import testtools

from reference_array.tests import array_fixture


def _modes(top):
    """{relative path: mode} of ``top`` and everything below it."""
    found = {'.': stat.S_IMODE(os.stat(top).st_mode)}
    for parent, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(parent, name)
            found[os.path.relpath(path, top)] = stat.S_IMODE(
                os.lstat(path).st_mode)
    return found


def _loosen(top):
    """What devstack or a tool with umask 022 leaves behind."""
    os.chmod(top, 0o755)
    for parent, dirs, files in os.walk(top):
        for name in dirs:
            os.chmod(os.path.join(parent, name), 0o755)
        for name in files:
            os.chmod(os.path.join(parent, name), 0o644)


class DataDirectoryTest(testtools.TestCase):

    def assertPrivate(self, top):
        modes = _modes(top)
        loose = {path: '%04o' % mode for path, mode in modes.items()
                 if mode not in (0o700, 0o600)}
        self.assertEqual({}, loose)
        self.assertEqual(0o700, modes['.'])

    def test_private_whoever_made_it(self):
        top = self.useFixture(fixtures.TempDir()).path
        data_dir = os.path.join(top, 'array')
        os.mkdir(data_dir, 0o755)
        os.chmod(data_dir, 0o755)
        with open(os.path.join(data_dir, 'ready.json'), 'w'):
            pass
        old = os.umask(0o022)
        self.addCleanup(os.umask, old)
        arr = self.useFixture(array_fixture.ReferenceArray(
            data_dir=data_dir))
        arr.k2_client().system_state()
        names = set(_modes(data_dir))
        # SQLite's journal is there, and under the rule too.
        self.assertTrue({'array.db', 'array.db-wal', 'array.db-shm',
                         'array.json', 'array.log'} <= names, names)
        self.assertPrivate(data_dir)

    def test_loosened_between_runs_fixed_at_start(self):
        data_dir = self.useFixture(fixtures.TempDir()).path
        first = array_fixture.ReferenceArray(data_dir=data_dir)
        first.setUp()
        self.assertEqual(0, first.stop())
        first.cleanUp()
        _loosen(data_dir)
        self.assertEqual(0o644, _modes(data_dir)['array.db'])
        arr = self.useFixture(array_fixture.ReferenceArray(
            data_dir=data_dir))
        self.assertEqual('ONLINE', arr.k2_client().system_state()['state'])
        self.assertPrivate(data_dir)


class PasswordTest(testtools.TestCase):

    def _password_file(self, secret, mode=0o600):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'pw')
        with open(path, 'w') as f:
            f.write(secret + '\n')
        os.chmod(path, mode)
        return path

    def _cmdline(self, arr):
        with open('/proc/%d/cmdline' % arr.proc.pid, 'rb') as f:
            return f.read().decode()

    def test_from_file_not_argv(self):
        secret = 'pw-from-a-file'
        arr = self.useFixture(array_fixture.ReferenceArray(args=[
            '--user', 'cinder', '--password-file',
            self._password_file(secret)]))
        self.assertEqual('cinder', arr.info['user'])
        self.assertNotIn(secret, self._cmdline(arr))
        self.assertEqual('ONLINE', arr.k2_client(
            password=secret).system_state()['state'])

    def test_from_environment_not_argv(self):
        secret = 'pw-from-the-environment'
        self.useFixture(fixtures.EnvironmentVariable(
            'REFERENCE_ARRAY_PASSWORD', secret))
        arr = self.useFixture(array_fixture.ReferenceArray(
            args=['--user', 'cinder']))
        self.assertNotIn(secret, self._cmdline(arr))
        self.assertEqual('ONLINE', arr.k2_client(
            password=secret).system_state()['state'])

    def _refused(self, *args):
        data_dir = self.useFixture(fixtures.TempDir()).path
        proc = subprocess.run(
            [sys.executable, '-m', 'reference_array', 'serve',
             '--data-dir', data_dir, '--iscsi-port', '0'] + list(args),
            capture_output=True, text=True, timeout=60,
            env=dict(os.environ, REFERENCE_ARRAY_PASSWORD=''))
        self.assertEqual(2, proc.returncode, proc.stderr)
        return proc.stderr

    def test_world_readable_file_refused(self):
        path = self._password_file('pw-shown-to-all', 0o644)
        err = self._refused('--user', 'cinder', '--password-file', path)
        self.assertIn('%s is mode 0644' % path, err)
        self.assertNotIn('pw-shown-to-all', err)

    def test_password_on_command_line_refused(self):
        err = self._refused('--user', 'cinder', '--password', 'pw')
        self.assertIn('--password', err)

    def test_user_without_password_refused(self):
        err = self._refused('--user', 'cinder')
        self.assertIn('--password-file or $REFERENCE_ARRAY_PASSWORD', err)
