"""Timing, memory and traffic helpers: the one place studies measure things.

Every speed figure in a study is a ratio against a baseline timed in the same
point of the same run; variants are interleaved within each repeat so that
load from other processes on shared cores hits all of them alike.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from typing import Any


def interleaved_seconds(
    runs: dict[str, Callable[[], Any]], repeats: dict[str, int] | int
) -> dict[str, list[float]]:
    """Wall seconds of every run, ``repeats`` times each, in rotating order.

    Parameters
    ----------
    runs : dict of str to callable
        Variant name -> zero-argument function.
    repeats : int or dict of str to int
        Repeats per variant (a variant with fewer repeats drops out of later rounds).
    """
    counts = {name: repeats if isinstance(repeats, int) else repeats[name] for name in runs}
    names = list(runs)
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for i in range(max(counts.values(), default=0)):
        shift = i % max(len(names), 1)
        for name in names[shift:] + names[:shift]:
            if len(seconds[name]) >= counts[name]:
                continue
            start = time.perf_counter()
            runs[name]()
            seconds[name].append(time.perf_counter() - start)
    return seconds


def peak_traced_bytes(fn: Callable[[], Any]) -> int:
    """Peak bytes allocated through Python's allocators (numpy arrays included) while ``fn`` runs.

    Runs ``fn`` once under :mod:`tracemalloc`, which slows Python code: measure
    time in a separate call.
    """
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return int(peak - base)


def traffic_by_role(report: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Bytes sent/received and protocol seconds per role kind (providers averaged).

    ``report`` is a PPPCA ``report_`` (role name -> bytes_sent, bytes_received, seconds, ...).
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for role, rep in report.items():
        kind = "provider" if role.startswith("provider") else role
        groups.setdefault(kind, []).append(rep)
    return {
        kind: {
            "bytes_sent": sum(r["bytes_sent"] for r in reps) / len(reps),
            "bytes_received": sum(r["bytes_received"] for r in reps) / len(reps),
            "seconds": max(r["seconds"] for r in reps),
            "count": len(reps),
        }
        for kind, reps in groups.items()
    }


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn`` (the micro-benchmarks' unit of measure)."""
    import statistics

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
