"""Timing helpers shared by the benchmark scripts.

Every speed figure is a ratio against a baseline timed in the same process and
run, so machine load shifts both sides alike. Each measurement is the median
of several repeats.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def machine() -> dict[str, Any]:
    """A short description of where the numbers were measured."""
    import os

    import numpy as np
    from threadpoolctl import threadpool_info

    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "cpu_affinity": affinity,
        "blas": [
            {"library": pool.get("internal_api"), "threads": pool.get("num_threads")}
            for pool in threadpool_info()
            if pool.get("user_api") == "blas"
        ],
        "platform": platform.platform(),
    }


#: Default folder of ``--quick`` runs: they never overwrite the published results in :data:`RESULTS`.
QUICK_RESULTS = RESULTS / "quick"


def add_out_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--out DIR`` option every benchmark shares."""
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for the JSON and PNG files (default benchmarks/results/, with --quick "
        "benchmarks/results/quick/: a quick run never overwrites the published results)",
    )


def output_dir(out: Path | None, quick: bool) -> Path:
    """The folder a run writes to (created): ``out``, else the published or the quick results folder.

    Raises
    ------
    SystemExit
        When a ``--quick`` run is pointed at the published results folder.
    """
    folder = Path(out) if out is not None else (QUICK_RESULTS if quick else RESULTS)
    if quick and folder.resolve() == RESULTS.resolve():
        raise SystemExit(f"--quick never writes into the published results {RESULTS}; choose another --out")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_json(name: str, payload: dict[str, Any], folder: Path = RESULTS) -> Path:
    """Write ``payload`` to ``FOLDER/NAME`` (default ``benchmarks/results/NAME``) and return the path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(payload, indent=2))
    return path


def pyplot():
    """matplotlib's pyplot on the non-interactive Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_seconds_by_contributors(
    rows: list[dict[str, Any]],
    series: dict[str, str],
    seconds: Callable[[dict[str, Any], str], float],
    path: Path,
    title: str = "M = {m}",
    ylabel: str = "seconds (median)",
) -> None:
    """One log-log panel per contributor count ``M``: seconds against ``d`` for each series.

    Parameters
    ----------
    rows : list of dict
        Measurements with keys ``M`` and ``d``.
    series : dict of str to str
        Series name to matplotlib line style.
    seconds : callable
        ``seconds(row, name)`` reads a series' time from a row.
    path : Path
        Where the PNG goes.
    """
    plt = pyplot()
    ms = sorted({r["M"] for r in rows})
    fig, axes = plt.subplots(1, len(ms), figsize=(4 * len(ms), 3.5), sharey=True, squeeze=False)
    for ax, m in zip(axes[0], ms, strict=True):
        sub = sorted((r for r in rows if r["M"] == m), key=lambda r: r["d"])
        ds = [r["d"] for r in sub]
        for name, style in series.items():
            ax.loglog(ds, [seconds(r, name) for r in sub], style, label=name)
        ax.set_title(title.format(m=m))
        ax.set_xlabel("d (array is d x d)")
    axes[0][0].set_ylabel(ylabel)
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
