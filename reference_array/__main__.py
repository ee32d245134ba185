import sys

from reference_array import cli

sys.exit(cli.main())
