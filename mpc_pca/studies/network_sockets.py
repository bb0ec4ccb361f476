"""The network study's check of the link model against real sockets: processes over the user-space WAN emulator.

:func:`run_over_emulator` runs every party of a run as its own process over
TLS, with every TCP connection (party to party, party to rendezvous) through
a :class:`protocols.testing.wan_emulator.DelayForwarder` that delays each direction by
RTT/2 and paces it at the bandwidth (``launch_local(..., link_profile=...)``).
The in-process model (:mod:`protocols.testing.link_model`) runs the same
parties as threads with the same :class:`~protocols.testing.link_model.LinkProfile`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from protocols.testing.link_model import LinkProfile


def run_over_emulator(
    protocol: str,
    parts: Sequence[np.ndarray],
    settings: Mapping[str, Any],
    profile: LinkProfile,
    *,
    timeout: float = 900.0,
) -> tuple[float, dict[str, Any]]:
    """Wall seconds and result of one run as processes with every link through the WAN emulator.

    The time includes what a real run pays and the thread model does not:
    process start-up, throw-away certificates, the rendezvous, TCP and TLS
    handshakes over the emulated links, and the settings' agreement.
    """
    from mpc_pca.deploy.local import launch_local

    start = time.perf_counter()
    result = launch_local(
        protocol, list(parts), dict(settings), timeout=timeout, connect_timeout=300, link_profile=profile
    )
    return time.perf_counter() - start, result


def setup_seconds(report: dict[str, Any]) -> float:
    """A process run's set-up from its parties' reports: the fewest ``setup.agreed_seconds`` over the parties.

    That is the party that started last (it waited for nobody at the
    rendezvous): from its first dial to every link up and the settings agreed.
    """
    return min(float(r["setup"]["agreed_seconds"]) for r in report.values())


__all__ = ["run_over_emulator", "setup_seconds"]
