"""Plot helpers shared by the studies: readable titles, units, legends outside the data, error bars."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def pyplot() -> Any:
    """matplotlib's pyplot on the non-interactive Agg backend (imported only when plotting)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 10, "axes.titlesize": 10, "legend.fontsize": 9})
    return plt


def mean_and_error(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard deviation (0 for a single value) of repeated measurements."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return float("nan"), 0.0
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0


def errorbar_series(
    ax: Any,
    series: dict[str, list[tuple[float, Sequence[float]]]],
    styles: dict[str, dict[str, Any]] | None = None,
) -> None:
    """One line per series: ``series[label] = [(x, repeated_values), ...]``, mean ± sd."""
    for label, pts in series.items():
        if not pts:
            continue
        pts = sorted(pts, key=lambda p: p[0])
        xs = [p[0] for p in pts]
        stats = [mean_and_error(p[1]) for p in pts]
        style = {"marker": "o", "capsize": 3, "linewidth": 1.5, "markersize": 4}
        style.update((styles or {}).get(label, {}))
        ax.errorbar(xs, [s[0] for s in stats], yerr=[s[1] for s in stats], label=label, **style)


def legend_outside(fig: Any, axes: Sequence[Any], ncol: int | None = None) -> None:
    """One legend for the whole figure, below the panels (never on top of the data)."""
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if not handles:
        return
    ncol = ncol or min(len(labels), 3)
    fig.legend(handles, labels, loc="lower center", ncol=ncol, frameon=False, bbox_to_anchor=(0.5, 0.0))
    rows = -(-len(labels) // ncol)
    fig.tight_layout(rect=(0, min(0.035 * rows + 0.03, 0.45), 1, 0.95))


def save(fig: Any, path: Path) -> Path:
    """Save at 110 dpi and close."""
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def plot_seconds_by_contributors(
    rows: list[dict[str, Any]],
    series: dict[str, str],
    seconds: Any,
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
    plt.close(fig)
