import os
import sys

# The charm's modules, and those it shares with the classic charm, as
# the packed charm holds them in src/; pack.py.
_HERE = os.path.dirname(os.path.abspath(__file__))
_CHARM = os.path.dirname(os.path.dirname(_HERE))
sys.path[:0] = [os.path.join(_CHARM, 'src'),
                os.path.join(os.path.dirname(_CHARM), 'src'),
                os.path.dirname(_CHARM)]
