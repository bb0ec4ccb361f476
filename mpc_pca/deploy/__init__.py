"""The deploy floor: any registered protocol's roles as parties between organisations.

A party is described by a typed :class:`PartySpec` (protocol, party name,
number of providers, its rows, the protocol's settings, its links), never by
command-line arguments; the protocol-specific half is its
:class:`~mpc_pca.deployment.Deployment`, found through :mod:`mpc_pca.registry`.

spec
    :class:`PartySpec` and how a party's rows are loaded.
run_party
    One party in this process, over the authenticated links (one per host:
    ``mpc-pca party``).
run_threads
    Every party as a thread of this process, through the same Deployment steps.
launch_local
    Every party as a local process over TLS with throw-away credentials
    (``mpc-pca run`` with ``transport='processes'``); each child is handed its
    PartySpec, in-memory rows included.
phase_lines
    A child party's phase and iteration records forwarded to its launcher
    as text lines, for the parent's progress report.
"""

from mpc_pca.deploy.local import launch_local, run_threads
from mpc_pca.deploy.party import run_party
from mpc_pca.deploy.spec import ArraySource, FileSource, PartySpec, load_rows
from protocols.runtime.parties import LinkOptions

__all__ = [
    "ArraySource",
    "FileSource",
    "LinkOptions",
    "PartySpec",
    "launch_local",
    "load_rows",
    "run_party",
    "run_threads",
]
