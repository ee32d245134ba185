import os
import sys

# The charm's modules live in src/, as Juju runs them.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))), 'src'))
