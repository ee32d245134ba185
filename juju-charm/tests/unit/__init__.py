import os
import sys

# The charm's modules live in src/, as Juju runs them; pack.py beside it.
_CHARM = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(_CHARM, 'src'), _CHARM]
