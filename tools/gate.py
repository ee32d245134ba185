"""``tox -e tempest``: the Keystone + Cinder + Tempest test bed."""

import sys

sys.stderr.write('tox -e tempest: the Tempest test bed is not available '
                 'yet in this tree; run tox -e functional for the array '
                 'and driver tests.\n')
sys.exit(2)
