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

"""What differs between the Cinder series cinder-flash runs on.

The drivers support Cinder 24 (2024.1) to 29 (2026.2); the unit and
functional tiers run on 24, 28 and 29. Every Cinder interface the drivers
call (the volume driver base class and its options, ``cinder.objects``
fields, ``volume_utils``, ``coordination``, ``san`` options, the
exceptions) has the same name and signature in each of these series, so
no driver code branches on the series.

What does differ, for the tools around the drivers:

* policy: Cinder 29 enforces the new (secure RBAC) policy defaults and
  token scopes by default, and scope enforcement can no longer be turned
  off; Cinder 24 to 28 enforce neither unless configured (28 sets both
  defaults to off explicitly). Tempest must match: ``[enforce_scope]
  cinder``. Used by the Tempest bed and the devstack plugin.

Cinder's master branch (what devstack master installs) carries a
development version: of the next major, or a pre-release of the newest
one. It is taken as the newest series, whose policy it inherits, and
named ``master``; a release outside 24 to 29 is refused.

``python -m cinder_driver.common.compat`` prints the installed Cinder's
major version, series and whether it enforces scopes by default, one per
line (the devstack plugin reads them).
"""

from importlib import metadata
import sys

from packaging import version as pep440

SERIES = {
    24: '2024.1',
    25: '2024.2',
    26: '2025.1',
    27: '2025.2',
    28: '2026.1',
    29: '2026.2',
}
OLDEST, NEWEST = min(SERIES), max(SERIES)
# The first series whose policy enforces token scopes by default.
SCOPE_ENFORCED_FROM = 29


class UnsupportedCinder(Exception):
    """A Cinder release outside the supported series."""


def _installed(version):
    """``version``, or the installed Cinder's, as a PEP 440 version."""
    if version is None:
        try:
            version = metadata.version('cinder')
        except metadata.PackageNotFoundError:
            raise UnsupportedCinder('Cinder is not installed')
    try:
        return pep440.Version(str(version))
    except pep440.InvalidVersion:
        raise UnsupportedCinder('Cinder version %r is not a version'
                                % (version,))


def is_master(version=None):
    """Whether ``version`` (default: the installed Cinder) is master's."""
    parsed = _installed(version)
    return parsed.is_prerelease and parsed.major in (NEWEST, NEWEST + 1)


def cinder_major(version=None):
    """Major version of ``version`` or of the installed Cinder.

    Master's development version of the next major counts as the newest.
    """
    parsed = _installed(version)
    if is_master(parsed):
        return NEWEST
    return parsed.major


def series(major):
    """The release series (``'2026.1'``) of a Cinder major version."""
    if major not in SERIES:
        raise UnsupportedCinder(
            'Cinder %d is not supported: cinder-flash runs on Cinder %d '
            '(%s) to %d (%s)' % (major, OLDEST, SERIES[OLDEST], NEWEST,
                                 SERIES[NEWEST]))
    return SERIES[major]


def scope_enforced_by_default(major):
    """Whether that series' policy enforces token scopes unconfigured."""
    series(major)
    return major >= SCOPE_ENFORCED_FROM


def main(argv=None):
    try:
        major = cinder_major()
        name = 'master' if is_master() else series(major)
        print('%d\n%s\n%s' % (major, name,
                              scope_enforced_by_default(major)))
    except UnsupportedCinder as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
