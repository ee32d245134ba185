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

"""``python -m reference_array serve --data-dir DIR``."""

import argparse
import logging
import os
import sys

from reference_array import private
try:
    from reference_array import server
except ModuleNotFoundError as e:
    # The engine's dependencies are the "array" extra: a cinder-volume
    # host installs the drivers without them.
    if e.name not in ('zstandard', 'blake3', 'cryptography'):
        raise
    server = None
    _missing = e.name

PASSWORD_ENV = 'REFERENCE_ARRAY_PASSWORD'
PEER_PASSWORD_ENV = 'REFERENCE_ARRAY_PEER_PASSWORD'


def main(argv=None):
    if server is None:
        print('the reference array needs %s, which the drivers do not: '
              "pip install 'cinder-flash[array]'" % _missing,
              file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(
        prog='reference_array',
        description='The cinder-flash reference array.')
    sub = parser.add_subparsers(dest='command', required=True)
    serve = sub.add_parser('serve', help='run an array until SIGTERM')
    serve.add_argument('--data-dir', required=True,
                       help='state directory; kept across restarts')
    serve.add_argument('--listen', default='127.0.0.1',
                       help='address every service binds to '
                            '(default 127.0.0.1)')
    serve.add_argument('--k2-port', type=int, default=0,
                       help='K2 REST port (default: any free port)')
    serve.add_argument('--linstor-port', type=int, default=0,
                       help='LINSTOR REST port (default: any free port)')
    serve.add_argument('--linstor-tls', action='store_true',
                       help='serve LINSTOR REST over HTTPS (default: plain '
                            'HTTP, as a LINSTOR controller does)')
    serve.add_argument('--linstor-local-node', metavar='NAME',
                       help='name of the diskless LINSTOR node that stands '
                            'for this machine on first start (default: '
                            'the host name)')
    serve.add_argument('--iscsi-port', type=int, default=3260,
                       help='iSCSI portal port (default 3260; 0: any free '
                            'port)')
    serve.add_argument('--user', help='add or reset this REST user')
    serve.add_argument('--password-file', metavar='PATH',
                       help='file (0600) holding the password of --user; '
                            'or set $%s. Never on the command line.'
                            % PASSWORD_ENV)
    serve.add_argument('--name', help='system name on first start')
    serve.add_argument('--capacity-gib', type=int, default=None,
                       help='physical capacity (default %d on first '
                            'start)' % server.DEFAULT_CAPACITY_GIB)
    serve.add_argument('--no-tls', action='store_true',
                       help='serve K2 REST over plain HTTP')
    serve.add_argument('--faults', help='JSON file of fault rules to '
                       'apply from the start (see reference_array.faults)')
    serve.add_argument('--fault-injection', action='store_true',
                       help='serve POST/GET/DELETE /_admin/faults on the K2 '
                            'port (authenticated); off by default')
    serve.add_argument('--linstor-auth', choices=('none', 'basic'),
                       default='none',
                       help='LINSTOR REST authentication: none (default, '
                            'as a LINSTOR controller without LDAP) or '
                            'basic (the array\'s REST users, HTTP Basic '
                            'over HTTPS)')
    serve.add_argument('--linstor-client-ca', metavar='PATH',
                       help='serve LINSTOR over HTTPS and accept only '
                            'clients whose certificate this CA signed')
    serve.add_argument('--fault-seed', type=int, default=None,
                       help='seed of the fault dice, for repeatable runs')
    serve.add_argument('--no-volume-source', action='store_true',
                       help='do not offer volume copies (the "source" of a '
                            'new volume), like arrays whose API has none')
    serve.add_argument('--peer', metavar='URL',
                       help='pair with the array at this K2 URL for '
                            'replication (once; later changes go through '
                            'replication/peer_k2arrays)')
    serve.add_argument('--peer-name', help='name of the --peer pairing')
    serve.add_argument('--peer-user', help='REST user on the --peer array')
    serve.add_argument('--peer-password-file', metavar='PATH',
                       help='file (0600) holding its password; or set $%s'
                            % PEER_PASSWORD_ENV)
    serve.add_argument('--peer-ca-cert', metavar='PATH',
                       help='CA certificate of the --peer array')
    serve.add_argument('--log-file', help='write the array log here')
    serve.add_argument('--debug', action='store_true')
    args = parser.parse_args(argv)
    try:
        args.password = private.read_secret(
            args.password_file, PASSWORD_ENV, '--password-file')
        args.peer_password = private.read_secret(
            args.peer_password_file, PEER_PASSWORD_ENV,
            '--peer-password-file')
    except private.SecretError as exc:
        parser.error(str(exc))
    if bool(args.user) != bool(args.password):
        parser.error('--user needs a password: --password-file or $%s'
                     % PASSWORD_ENV)
    if args.peer and not (args.peer_user and args.peer_password):
        parser.error('--peer needs --peer-user and a password: '
                     '--peer-password-file or $%s' % PEER_PASSWORD_ENV)
    if args.capacity_gib is not None and args.capacity_gib <= 0:
        parser.error('--capacity-gib must be positive, not %s' %
                     args.capacity_gib)
    # Whatever the array writes from here on is private to its user.
    os.umask(0o077)
    target = ({'filename': args.log_file} if args.log_file
              else {'stream': sys.stderr})
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.INFO,
        format='%(asctime)s %(levelname)s %(name)s %(message)s',
        **target)
    array = server.Array(args)
    array.serve_until_signalled()
    return 0


if __name__ == '__main__':
    sys.exit(main())
