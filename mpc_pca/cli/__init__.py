"""The ``mpc-pca`` command line.

Modules
-------
app
    The parser and ``run`` (every protocol in one process; a deployable one
    as local processes through :mod:`mpc_pca.deploy`). Named ``app``, not
    ``main``, so that importing it never shadows the exported :func:`main`.
party
    ``party`` (one party of a multi-host run, parsed into a PartySpec).
relay
    ``relay``: the relay for parties that can only dial out (one run, then exits).
certs
    ``certs``: the one-shot CA + keys (demos), and enrolment: ``init-ca``,
    ``request`` (a party's own key and CSR), ``sign`` (the CA).
runners, dp, flags
    ``run``'s runners of a protocol object (threads or local processes, and
    the fields only this harness can compute); the DP options; the one table
    of the protocols' flags.
wide
    The flags of ``pppca-randomized``'s solver settings (``run`` and ``party``).
errors
    Every command's errors in flag terms: a library message's ``chunk_rows=0``
    printed as ``--chunk-rows 0``, from the parser's own table.
privacy, row_bound
    The ``private`` and ``privacy_leaks`` fields of every DP release (``run``
    and each ``party`` that holds one) and the summary's privacy lines;
    ``--row-bound``, each site's division of its rows by a public bound.
options
    Exit codes, the registry's per-protocol options checked and filled in,
    the data-reading options, checked and atomic output files.
progress
    Progress on stderr for ``run`` and ``party``: the first line at once
    (what starts, where a party joins), then one line per phase (or one
    line rewritten on a terminal).
plot
    ``mpc-pca plot``: scree plot and the projected rows by provider.
studies
    ``mpc-pca study`` and ``mpc-pca report``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mpc_pca.lazy import lazy_exports

if TYPE_CHECKING:
    from mpc_pca.cli.app import build_parser, main

#: Public name -> the module that defines it, imported on first use (mpc_pca.lazy).
_EXPORTS = {
    "build_parser": "mpc_pca.cli.app",
    "main": "mpc_pca.cli.app",
}

__all__ = [
    "build_parser",
    "main",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
