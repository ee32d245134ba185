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

"""``cinder-flash``: operator commands.

``cinder-flash check --config-file /etc/cinder/cinder.conf --backend NAME``
reads the backend section exactly as cinder-volume would and checks the
array before the service is restarted: one verdict line per check.
"""

import argparse
import sys
import warnings

# Importing cinder loads eventlet, which warns on every run; operators
# of this command cannot act on it.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

from cinder_driver.cmd import check  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='cinder-flash',
        description='Operator tools for the cinder-flash volume drivers.')
    sub = parser.add_subparsers(dest='command', required=True)
    chk = sub.add_parser(
        'check', help='validate a backend section against its array')
    chk.add_argument('--config-file', action='append', required=True,
                     help='cinder.conf (may be given more than once)')
    chk.add_argument('--backend', required=True,
                     help='name of the backend section to check')
    args = parser.parse_args(argv)
    if args.command == 'check':
        report = check.run(args.config_file, args.backend)
        for line in report.lines():
            print(line)
        return 0 if report.ok else 1
    return 2


if __name__ == '__main__':
    sys.exit(main())
