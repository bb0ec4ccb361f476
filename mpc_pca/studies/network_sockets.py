"""The network study's check of the link model against real sockets (processes over a WAN emulator).

:func:`run_over_emulator` runs every party of a run as its own process with
every TCP link through a user-space forwarder that delays each direction by
RTT/2 and paces at the bandwidth (``protocols.testing.wan``, used through
``launch_local(..., link_profile=...)``). Where that emulator is not part of
this build, :func:`emulator_available` says so and :func:`run_over_emulator`
raises an error naming what is missing.
"""

from __future__ import annotations

import importlib.util
import inspect
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from protocols.errors import InputValidationError

#: What the check needs from the build, named in its error.
NEEDS = "protocols.testing.wan (LinkProfile, DelayForwarder) and launch_local(..., link_profile=...)"


def emulator_available() -> bool:
    """Whether this build has the user-space WAN emulator and ``launch_local``'s ``link_profile`` option."""
    if importlib.util.find_spec("protocols.testing.wan") is None:
        return False
    from mpc_pca.deploy.local import launch_local

    return "link_profile" in inspect.signature(launch_local).parameters


def run_over_emulator(
    protocol: str,
    parts: Sequence[np.ndarray],
    settings: Mapping[str, Any],
    rtt_seconds: float,
    bandwidth_bits_per_second: float | None,
    *,
    timeout: float = 900.0,
) -> tuple[float, dict[str, Any]]:
    """Wall seconds and result of one run as processes with every link through the WAN emulator.

    Raises
    ------
    InputValidationError
        If this build has no emulator (the message names :data:`NEEDS`).
    """
    if not emulator_available():
        raise InputValidationError(
            f"the socket check of the link model needs {NEEDS}; this build has neither"
        )
    from mpc_pca.deploy.local import launch_local
    from protocols.testing import wan  # type: ignore[attr-defined,unused-ignore]

    profile = wan.LinkProfile(rtt_seconds, bandwidth_bits_per_second)
    start = time.perf_counter()
    result = launch_local(  # type: ignore[call-arg,unused-ignore]
        protocol, list(parts), dict(settings), timeout=timeout, connect_timeout=300, link_profile=profile
    )
    return time.perf_counter() - start, result


__all__ = ["NEEDS", "emulator_available", "run_over_emulator"]
