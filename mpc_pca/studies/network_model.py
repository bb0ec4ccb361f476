"""The network study's arithmetic: a run's time decomposed by the link model, and where two protocols cross.

A run over links of round-trip time ``RTT`` and uplink bandwidth ``b``
(:mod:`protocols.testing.link_model`) takes about

    T = compute + depth x RTT/2 + 8 bytes / b + set-up round trips x RTT

where ``compute`` is the run's wall time with no network at all, ``depth``
the run's message depth (the longest chain of messages, each sent after the
previous one arrived: the one-way delays on the critical path, counted by
:class:`protocols.testing.link_model.ModelledLinks`; issue 28 wrote it with
the providers' *rounds*, their speaking turns, which can be fewer when the
chain passes through the server), ``bytes`` the most bytes any one party
sends (its uplink serialises them) and the set-up is stated in round trips.
The study measures the first three terms and checks the sum against the
modelled wall time; :func:`crossover` and :func:`line_crossover` find where
two protocols' times cross as the RTT grows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from protocols.errors import InputValidationError

#: Role-name prefixes of the parties that hold rows (PPPCA and capePCA: providers; DPDPCA: owners).
DATA_HOLDER_PREFIXES = ("provider", "owner")


@dataclass(frozen=True)
class Traffic:
    """What a run's parties sent, from its ``report`` (party -> bytes_sent, rounds, ...)."""

    #: Most speaking turns of any party (the rounds on the critical path, at most).
    rounds: int
    #: Most speaking turns of a data holder ("rounds per provider").
    provider_rounds: int
    #: Most bytes one party sent (what one uplink must carry).
    max_bytes_sent: int
    #: Bytes the busiest data holder sent.
    provider_bytes_sent: int
    #: Bytes every party sent together.
    total_bytes_sent: int


def traffic(report: Mapping[str, Mapping[str, Any]]) -> Traffic:
    """Summarise a run's per-party report (:func:`mpc_pca.deploy.local.run_threads`' ``report``).

    Raises
    ------
    InputValidationError
        If the report names no party, or no data holder (no name starting with
        one of :data:`DATA_HOLDER_PREFIXES`).
    """
    if not report:
        raise InputValidationError("the run's report names no party")
    holders = {n: r for n, r in report.items() if n.startswith(DATA_HOLDER_PREFIXES)}
    if not holders:
        raise InputValidationError(
            f"the run's report names no data holder (a party named {DATA_HOLDER_PREFIXES}...): {sorted(report)}"
        )
    return Traffic(
        rounds=max(int(r["rounds"]) for r in report.values()),
        provider_rounds=max(int(r["rounds"]) for r in holders.values()),
        max_bytes_sent=max(int(r["bytes_sent"]) for r in report.values()),
        provider_bytes_sent=max(int(r["bytes_sent"]) for r in holders.values()),
        total_bytes_sent=sum(int(r["bytes_sent"]) for r in report.values()),
    )


@dataclass(frozen=True)
class Decomposition:
    """The link model's terms of one run's wall time, in seconds."""

    compute: float
    latency: float
    transmission: float
    setup: float

    @property
    def total(self) -> float:
        """The predicted wall time: the sum of the four terms."""
        return self.compute + self.latency + self.transmission + self.setup


def decompose(
    compute: float,
    depth: int,
    nbytes: int,
    rtt_seconds: float,
    bandwidth_bits_per_second: float | None,
    setup_round_trips: float,
) -> Decomposition:
    """``compute + depth x RTT/2 + 8 nbytes / bandwidth + setup_round_trips x RTT``.

    Parameters
    ----------
    compute : float
        Wall seconds of the run with no network (RTT 0, unlimited bandwidth).
    depth : int
        One-way delays on the critical path (the run's message depth).
    nbytes : int
        Bytes the busiest uplink carries (:attr:`Traffic.max_bytes_sent`).
    rtt_seconds, bandwidth_bits_per_second : float
        The link (``None`` bandwidth: unlimited).
    setup_round_trips : float
        Connection set-up, in round trips.
    """
    for name, value in (
        ("compute", compute),
        ("rtt_seconds", rtt_seconds),
        ("setup_round_trips", setup_round_trips),
    ):
        if not np.isfinite(value) or value < 0:
            raise InputValidationError(f"{name}={value!r} must be a finite number >= 0")
    if depth < 0 or nbytes < 0:
        raise InputValidationError(f"depth={depth} and nbytes={nbytes} must be >= 0")
    bw = bandwidth_bits_per_second
    if bw is not None and not 0 < bw < float("inf"):
        raise InputValidationError(f"bandwidth_bits_per_second={bw!r} must be positive and finite, or None")
    return Decomposition(
        compute=float(compute),
        latency=depth * rtt_seconds / 2.0,
        transmission=0.0 if bw is None else 8.0 * nbytes / bw,
        setup=setup_round_trips * rtt_seconds,
    )


def _series(xs: Sequence[float], a: Sequence[float], b: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    x, ya, yb = (np.asarray(v, dtype=float) for v in (xs, a, b))
    if x.ndim != 1 or x.shape != ya.shape or x.shape != yb.shape or x.size < 2:
        raise InputValidationError(
            f"a crossover needs two series over the same >= 2 points; got {len(xs)} points, "
            f"{len(a)} and {len(b)} values"
        )
    diff = ya - yb
    if not np.all(np.isfinite(x)) or not np.all(np.isfinite(diff)):
        raise InputValidationError("a crossover needs finite points and values")
    order = np.argsort(x)
    return x[order], diff[order]


def crossover(xs: Sequence[float], a: Sequence[float], b: Sequence[float]) -> float | None:
    """The first ``x`` within the measured range where ``a - b`` changes sign (linear between points).

    Returns
    -------
    float or None
        ``x`` where series ``a`` and ``b`` are equal by linear interpolation
        between the two neighbouring measured points where their order flips
        (a point where they are exactly equal counts), or ``None`` if one is
        below the other at every measured point.

    Examples
    --------
    >>> crossover([0, 10, 20], [1, 2, 3], [2, 2.5, 2.5])
    15.0
    """
    x, diff = _series(xs, a, b)
    for i in range(x.size):
        if diff[i] == 0:
            return float(x[i])
        if i + 1 < x.size and np.sign(diff[i]) != np.sign(diff[i + 1]) and diff[i + 1] != 0:
            return float(x[i] + (x[i + 1] - x[i]) * diff[i] / (diff[i] - diff[i + 1]))
    return None


def line_crossover(xs: Sequence[float], a: Sequence[float], b: Sequence[float]) -> float | None:
    """Where the least-squares lines through ``a`` and through ``b`` meet (may lie beyond the points).

    Returns
    -------
    float or None
        ``x`` of the intersection if it is at ``x >= 0``; ``None`` if the
        lines are parallel or meet only at a negative ``x`` (the times never
        cross as the RTT grows).

    Examples
    --------
    >>> round(line_crossover([0, 10], [1, 2], [3, 3.5]), 9)
    40.0
    """
    x, diff = _series(xs, a, b)
    slope, intercept = np.polyfit(x, diff, 1)
    if abs(slope) <= 1e-12 * max(1.0, abs(intercept)):
        return None
    at = -intercept / slope
    return float(at) if at >= 0 else None


__all__ = [
    "DATA_HOLDER_PREFIXES",
    "Decomposition",
    "Traffic",
    "crossover",
    "decompose",
    "line_crossover",
    "traffic",
]
