"""The ``mpc-pca`` command line.

Modules
-------
main
    The parser, ``run`` (every protocol in one process, or PPPCA as local
    processes) and ``party`` (one party of a multi-host run).
dp
    The DP protocols' options and their rows in the protocol table.
options
    Exit codes, which options each protocol uses, the data-reading options,
    checked and atomic output files.
plot
    ``mpc-pca plot``: scree plot and the projected rows by provider.
"""

from mpc_pca.cli.main import build_parser, main, protocol_table

__all__ = ["build_parser", "main", "protocol_table"]
