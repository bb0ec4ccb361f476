"""``python -m mpc_pca.cli``: the command line (how the launcher starts party processes)."""

import sys

from mpc_pca.cli.app import main

sys.exit(main())
