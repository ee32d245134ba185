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

"""Run the LINSTOR functional tests against a real LINSTOR controller.

``tox -e linstor-real``. The controller comes from the environment (see
cinder_driver/tests/functional/linstor_target.py):

    CINDER_FLASH_LINSTOR_URL=http://127.0.0.1:3370 \\
    CINDER_FLASH_LINSTOR_POOL=thinpool \\
    CINDER_FLASH_LINSTOR_LAYERS=storage tox -e linstor-real

Without a URL the run stops at once with a message and exit status 2: a
run that skipped every test would look like a pass. The tests create and
remove their own resource groups (prefix ``cft-``), definitions and
snapshots; point them at a controller meant for testing. They run one at
a time. Extra arguments are passed to stestr as a test filter.
"""

import os
import subprocess
import sys

import requests

SUITE = 'cinder_driver.tests.functional.test_linstor_'


def main(argv):
    url = os.environ.get('CINDER_FLASH_LINSTOR_URL', '').strip()
    if not url:
        sys.stderr.write(
            'tox -e linstor-real needs a LINSTOR controller: set '
            'CINDER_FLASH_LINSTOR_URL (e.g. http://127.0.0.1:3370), and '
            'CINDER_FLASH_LINSTOR_POOL / CINDER_FLASH_LINSTOR_LAYERS as '
            'the controller needs. Nothing was run.\n')
        return 2
    try:
        resp = requests.get(url.rstrip('/') + '/v1/controller/version',
                            timeout=(5, 30))
        resp.raise_for_status()
        version = resp.json()
    except (requests.RequestException, ValueError) as e:
        sys.stderr.write('LINSTOR controller %s does not answer: %s\n' % (
            url, e))
        return 2
    print('LINSTOR %s (REST API %s) at %s; pool %s; layers %s' % (
        version.get('version'), version.get('rest_api_version'), url,
        os.environ.get('CINDER_FLASH_LINSTOR_POOL', 'DfltStorPool'),
        os.environ.get('CINDER_FLASH_LINSTOR_LAYERS') or 'the default'))
    sys.stdout.flush()
    filters = argv or [SUITE]
    return subprocess.call(['stestr', '--test-path',
                            './cinder_driver/tests/functional', 'run',
                            '--concurrency', '1'] + filters)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
