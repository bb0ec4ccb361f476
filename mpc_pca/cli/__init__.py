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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mpc_pca.cli.main import build_parser, main, protocol_table

#: Public name -> the module that defines it. Imported on first use (PEP 562),
#: so that importing one submodule (e.g. a party process's transport) does not
#: import every estimator and scikit-learn with it.
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


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
