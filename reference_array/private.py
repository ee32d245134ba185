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

"""Secrets at rest: a private data directory and passwords kept out of argv.

Everything the array keeps (its database with CHAP secrets and peer
passwords, TLS keys, logs) lives in the data directory, so the directory is
0700 and every file in it 0600, whoever created them and with whatever
umask: devstack and tools often make the directory first.
"""

import os
import stat

DIR_MODE = 0o700
FILE_MODE = 0o600


class SecretError(Exception):
    pass


def make_private(data_dir):
    """Create ``data_dir`` if needed; set 0700 on it and 0600 below it."""
    os.makedirs(data_dir, mode=DIR_MODE, exist_ok=True)
    for top, dirs, files in os.walk(data_dir):
        os.chmod(top, DIR_MODE)
        for name in files:
            path = os.path.join(top, name)
            # Never follow a link planted in the directory.
            if not os.path.islink(path):
                os.chmod(path, FILE_MODE)


def precreate(path):
    """Create an empty 0600 file unless it exists.

    SQLite gives its -wal and -shm files the mode of the database file, so
    a database created 0600 keeps its journal private too.
    """
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))


def read_secret(path, env_name, what):
    """The secret in ``path`` (first line) or else in ``$env_name``.

    The file must not be readable by group or others: a secret in a
    world-readable file is no secret.  Returns None when neither is set.
    """
    if path:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise SecretError('%s file %s: %s' % (what, path, exc.strerror))
        with os.fdopen(fd) as f:
            mode = os.fstat(fd).st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise SecretError(
                    '%s file %s is mode %04o: readable by others; make it '
                    '0600' % (what, path, stat.S_IMODE(mode)))
            value = f.readline(4096).rstrip('\r\n')
        if not value:
            raise SecretError('%s file %s is empty' % (what, path))
        return value
    value = os.environ.get(env_name)
    return value or None
