"""``python -m mpc_pca``: the same command line as ``mpc-pca``."""

import sys

from mpc_pca.cli.app import main

sys.exit(main())
