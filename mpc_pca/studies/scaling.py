"""Study ``scaling``: PPPCA-SS wall time and peak memory vs n, d and M, with scikit-learn beside it.

Each point times every entry of :data:`VARIANTS` interleaved (``repeats``
times) on the same data, then runs each once more under :mod:`tracemalloc`
for its peak allocation (numpy arrays included). Speed is reported as the
ratio to scikit-learn's PCA on the pooled rows, timed in the same point.

Performance work (issue 15) plugs in here: add a variant to
:data:`VARIANTS` (name -> factory building the zero-argument run from the
parts, the pooled matrix and ``k``) and it is timed, plotted and tabulated
beside the others with no other change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mpc_pca.studies.framework import Claim, Point, Record, Study, Table
from mpc_pca.studies.plotting import errorbar_series, legend_outside, pyplot, save
from mpc_pca.studies.timing import interleaved_seconds, peak_traced_bytes

N_COMPONENTS = 10
Factory = Callable[[list[np.ndarray], np.ndarray, int], Callable[[], Any]]


def _sklearn(parts: list[np.ndarray], X: np.ndarray, k: int) -> Callable[[], Any]:
    from sklearn.decomposition import PCA

    return lambda: PCA(k, svd_solver="covariance_eigh").fit(X)


def _pppca(backend: str) -> Factory:
    def factory(parts: list[np.ndarray], X: np.ndarray, k: int) -> Callable[[], Any]:
        from mpc_pca.pppca import PPPCA

        return lambda: PPPCA(k, backend=backend, timeout=900).fit(parts)

    return factory


#: Variant name -> (label, factory). The baseline is "sklearn".
VARIANTS: dict[str, tuple[str, Factory]] = {
    "sklearn": ("scikit-learn PCA, pooled rows (covariance_eigh)", _sklearn),
    "pppca_ss": ("PPPCA-SS, additive shares", _pppca("additive")),
    "pppca_masks": ("PPPCA-SS, pairwise masks", _pppca("additive-masks")),
}


def _available_bytes() -> int:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 2 * 1024**3


def points(quick: bool, options: dict[str, str]) -> list[Point]:
    """Sweeps of n (d=50, M=4), d (n=20,000, M=4) and M (n=100,000, d=50)."""
    ns: tuple[int, ...]
    ds: tuple[int, ...]
    ms: tuple[int, ...]
    if quick:
        ns, ds, ms, reps = (10_000, 100_000), (10, 100), (2, 4), 2
    else:
        # largest n whose data and the protocol's copies (about 6x) fit in a quarter of the free memory
        budget = _available_bytes() // 4
        ns = tuple(n for n in (10_000, 100_000, 1_000_000, 2_000_000, 4_000_000) if n * 50 * 8 * 6 < budget)
        ds, ms, reps = (10, 50, 100, 300, 1000), (2, 4, 8, 16, 32), 3
    out = [{"axis": "n", "n": n, "d": 50, "M": 4} for n in ns]
    out += [{"axis": "d", "n": 20_000, "d": d, "M": 4} for d in ds]
    out += [{"axis": "M", "n": 100_000, "d": 50, "M": m} for m in ms]
    for p in out:
        p["key"] = f"{p['axis']}/n={p['n']}/d={p['d']}/M={p['M']}"
        p["repeats"] = reps
    return out


def measure(point: Point) -> dict[str, Any]:
    """Interleaved wall times of every variant, then one traced run each for peak memory."""
    n, d, m = point["n"], point["d"], point["M"]
    rng = np.random.default_rng(n + d + m)
    X = rng.normal(size=(n, d)) * np.linspace(3.0, 0.5, d) + 5.0
    parts = [np.ascontiguousarray(p) for p in np.array_split(X, m)]
    k = min(N_COMPONENTS, d)
    runs = {name: factory(parts, X, k) for name, (_, factory) in VARIANTS.items()}
    runs["sklearn"]()  # warm up the BLAS threads
    seconds = interleaved_seconds(runs, point["repeats"])
    peak = {name: peak_traced_bytes(run) for name, run in runs.items()}
    return {"seconds": seconds, "peak_bytes": peak, "data_bytes": int(X.nbytes)}


def plot(records: list[Record], out: Any, suffix: str) -> list[Any]:
    """Time (top) and peak memory (bottom) along each axis."""
    from pathlib import Path

    plt = pyplot()
    axes_names = [a for a in ("n", "d", "M") if any(r["axis"] == a for r in records)]
    fig, axes = plt.subplots(2, len(axes_names), figsize=(5.5 * len(axes_names), 8.5), squeeze=False)
    xlabels = {
        "n": "rows n (d=50, M=4)",
        "d": "features d (n=20,000, M=4)",
        "M": "data providers M (n=100,000, d=50)",
    }
    for col, axis in enumerate(axes_names):
        rows = sorted((r for r in records if r["axis"] == axis), key=lambda r: r[axis])
        time_series = {
            VARIANTS[v][0]: [(r[axis], r["seconds"][v]) for r in rows if v in r["seconds"]] for v in VARIANTS
        }
        mem_series: dict[str, list[tuple[float, Sequence[float]]]] = {
            VARIANTS[v][0]: [(r[axis], [r["peak_bytes"][v] / 2**20]) for r in rows if v in r["peak_bytes"]]
            for v in VARIANTS
        }
        mem_series["input data itself"] = [(r[axis], [r["data_bytes"] / 2**20]) for r in rows]
        styles = {"input data itself": {"color": "gray", "linestyle": ":"}}
        ax = axes[0][col]
        errorbar_series(ax, time_series, styles)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabels[axis])
        ax.set_ylabel("fit wall time (s, mean ± sd)")
        ax.set_title(f"Time vs {axis}")
        ax.grid(alpha=0.3, which="both")
        ax2 = axes[1][col]
        errorbar_series(ax2, mem_series, styles)
        ax2.set_xscale("log")
        ax2.set_yscale("log")
        ax2.set_xlabel(xlabels[axis])
        ax2.set_ylabel("peak traced allocation (MiB)")
        ax2.set_title(f"Peak memory vs {axis}")
        ax2.grid(alpha=0.3, which="both")
        if axis == "M":  # few small integers: label each measured M plainly
            for a in (ax, ax2):
                a.set_xscale("log", base=2)
                a.set_xticks([r["M"] for r in rows], [str(r["M"]) for r in rows])
                a.tick_params(axis="x", which="minor", bottom=False, labelbottom=False)
    fig.suptitle("PPPCA-SS scaling beside scikit-learn PCA on the pooled rows (k = 10, parties as threads)")
    legend_outside(fig, [a for row in axes for a in row], ncol=2)
    return [save(fig, Path(out) / f"scaling{suffix}.png")]


def tables(records: list[Record]) -> list[Table]:
    rows = []
    for r in sorted(records, key=lambda r: (r["axis"], r["n"], r["d"], r["M"])):
        base = float(np.median(r["seconds"]["sklearn"]))
        for v, secs in r["seconds"].items():
            rows.append(
                [
                    r["axis"],
                    f"{r['n']:,}",
                    str(r["d"]),
                    str(r["M"]),
                    VARIANTS[v][0] if v in VARIANTS else v,
                    f"{np.median(secs):.4f}",
                    f"{np.median(secs) / base:.2f}",
                    f"{r['peak_bytes'][v] / 2**20:.1f}",
                    f"{r['peak_bytes'][v] / r['data_bytes']:.2f}",
                ]
            )
    return [
        Table(
            "Median wall time, ratio to scikit-learn in the same point, peak traced memory",
            ["sweep", "n", "d", "M", "variant", "median s", "x sklearn", "peak MiB", "peak / data size"],
            rows,
        )
    ]


def claims(records: list[Record]) -> list[Claim]:
    """Issue 2's target: PPPCA-SS no slower than scikit-learn at the largest n measured."""
    ns = [r for r in records if r["axis"] == "n"]
    if not ns:
        return []
    top = max(ns, key=lambda r: r["n"])
    ratio = float(np.median(top["seconds"]["pppca_ss"]) / np.median(top["seconds"]["sklearn"]))
    return [
        Claim(
            "this project (issue 2)",
            f"PPPCA-SS is no slower than scikit-learn's PCA on the pooled rows at n = {top['n']:,}, d = 50",
            ratio <= 1.0,
            f"median time ratio {ratio:.2f}",
        )
    ]


STUDY = Study(
    name="scaling",
    summary="PPPCA-SS wall time and peak memory vs n, d and M, with scikit-learn's PCA on the pooled rows beside it",
    points=points,
    measure=measure,
    plot=plot,
    tables=tables,
    claims=claims,
    description=(
        "Synthetic Gaussian data with decreasing per-feature scales; k = 10. The largest n is the largest "
        "of 10^4 ... 4x10^6 whose data, times 6 for the protocol's copies, fits in a quarter of the memory "
        "available when the run starts. Peak memory is what tracemalloc sees (Python and numpy allocations), "
        "from a separate untimed run."
    ),
)
