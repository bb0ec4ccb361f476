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

from __future__ import annotations

from typing import TYPE_CHECKING

from mpc_pca.lazy import lazy_exports

if TYPE_CHECKING:
    from mpc_pca.cli.main import build_parser, main, protocol_table

#: Public name -> the module that defines it, imported on first use (mpc_pca.lazy).
_EXPORTS = {
    "build_parser": "mpc_pca.cli.main",
    "main": "mpc_pca.cli.main",
    "protocol_table": "mpc_pca.cli.main",
}

__all__ = [
    "build_parser",
    "main",
    "protocol_table",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
