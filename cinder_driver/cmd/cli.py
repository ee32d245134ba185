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
