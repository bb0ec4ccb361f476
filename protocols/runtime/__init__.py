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

Transports that run the same role functions across processes live in
:mod:`protocols.transport`.
"""

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
    "INLINE_WORK",
    "ChannelWrapper",
    "PartyReport",
    "Role",
    "RunResult",
    "check_timeout",
    "make_report",
    "map_parties",
    "run_inprocess",
    "single_threaded_blas",
    "usable_cpus",
]
