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

"""Every option cinder-flash registers appears in the built reference.

Run after ``sphinx-build`` (``tox -e docs`` does): reads the configuration
page's HTML and exits non-zero naming any registered option it lacks.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from cinder_driver.common import opts  # noqa: E402

PAGE = os.path.join(ROOT, 'doc', 'build', 'html', 'admin',
                    'configuration.html')


def main():
    with open(PAGE) as f:
        html = f.read()
    names = sorted(o.name for _group, group in opts.list_opts()
                   for o in group)
    missing = [name for name in names if name not in html]
    if missing:
        print('options missing from %s: %s' % (PAGE, ', '.join(missing)))
        return 1
    print('all %d options are in the configuration reference' % len(names))
    return 0


if __name__ == '__main__':
    sys.exit(main())
