"""The cinder-flash wheel, built from this checkout as a release would be."""

import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def build(dest):
    """Path of the wheel built into ``dest``."""
    subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--quiet',
                    '--no-deps', '--no-build-isolation', '--wheel-dir',
                    dest, ROOT], check=True, capture_output=True,
                   timeout=600)
    found = glob.glob(os.path.join(dest, 'cinder_flash-*.whl'))
    if len(found) != 1:
        raise RuntimeError('expected one cinder-flash wheel in %s, found '
                           '%s' % (dest, found))
    return found[0]
