"""Running role functions as parties.

Modules
-------
runner
    :func:`run_inprocess`: every party a thread of this process over in-memory
    queues (the embedded default); :class:`PartyReport` / :class:`RunResult`,
    the per-party traffic and time every run reports.
threads
    Helpers for parties' purely local work side by side in one process
    (:func:`map_parties`, :func:`single_threaded_blas`).
network
    One party of a run in this process over the authenticated socket links:
    join the rendezvous, connect the mesh, agree settings, run the role, end
    cleanly or tell every peer why not.
launcher
    Start the parties of one run as local OS processes (a fork server or
    command lines) and wait for all of them.
parties
    The public API for a user's own protocol: :func:`run_party` (this process
    is one party, one per host, over TLS links with :class:`LinkOptions`) and
    :func:`run_processes` (every party its own local process over TLS).
exits
    How a party process ends: the exit codes of ``mpc-pca`` and
    :func:`~protocols.runtime.exits.run_or_exit`, the one body of every party process.
gloo
    One party over ``torch.distributed`` (the CrypTen backend, ``insecure=True``).

The runtime sits above :mod:`protocols.transport` (bytes, frames, TLS,
rendezvous, mesh), which never imports it.
"""

from protocols.runtime.network import DEFAULT_MESSAGE_CAP
from protocols.runtime.parties import LinkOptions, run_party, run_processes
from protocols.runtime.runner import (
    ChannelWrapper,
    PartyReport,
    Role,
    RunResult,
    check_timeout,
    make_report,
    run_inprocess,
)
from protocols.runtime.threads import INLINE_WORK, map_parties, single_threaded_blas, usable_cpus

__all__ = [
    "DEFAULT_MESSAGE_CAP",
    "INLINE_WORK",
    "ChannelWrapper",
    "LinkOptions",
    "PartyReport",
    "Role",
    "RunResult",
    "check_timeout",
    "make_report",
    "map_parties",
    "run_inprocess",
    "run_party",
    "run_processes",
    "single_threaded_blas",
    "usable_cpus",
]
