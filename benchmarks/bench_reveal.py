"""What hiding the covariance costs: PPPCA ``reveal="components"`` vs ``reveal="covariance"``.

For d in (10, 30, 100) and M providers in (2, 3, 5), times both modes on the
same synthetic data (planted spectrum: k = 5 leading eigenvalues 10, 8, 6, 5,
4 over a flat bulk of 1, so the default eigengap and variance-ratio settings
hold), alternating the two in the same process, and records the median wall
time, the bytes sent by all parties, the rounds of the busiest party and the
largest component difference between the two modes. Speed is reported as the
ratio components / covariance timed in the same run.

Usage: ``python -m benchmarks.bench_reveal [--quick]`` writes
``benchmarks/results/reveal.json`` and ``reveal.png``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from benchmarks.output import add_out_argument, output_dir, write_json
from mpc_pca import PPPCA
from mpc_pca.studies.machine import describe_machine as machine
from mpc_pca.studies.plotting import pyplot

K = 5


def planted_data(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    spectrum = np.ones(d)
    spectrum[:K] = [10.0, 8.0, 6.0, 5.0, 4.0]
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return (rng.standard_normal((n, d)) * np.sqrt(spectrum)) @ basis.T


def measure(d: int, m: int, n: int, repeats: int) -> dict[str, Any]:
    parts = np.array_split(planted_data(n, d), m)
    seconds: dict[str, list[float]] = {"covariance": [], "components": []}
    models: dict[str, PPPCA] = {}
    for _ in range(repeats):
        for mode in seconds:  # interleaved so load drifts hit both alike
            model = PPPCA(K, reveal=mode)
            start = time.perf_counter()
            model.fit(parts)
            seconds[mode].append(time.perf_counter() - start)
            models[mode] = model
    out: dict[str, Any] = {"d": d, "parties": m, "n_samples": n, "seconds": seconds}
    for mode, model in models.items():
        report = model.report_
        out[mode] = {
            "median_seconds": statistics.median(seconds[mode]),
            "bytes_sent_total": sum(r["bytes_sent"] for r in report.values()),
            "server_bytes_received": report["server"]["bytes_received"],
            "max_rounds": max(r["rounds"] for r in report.values()),
        }
    cov, comp = models["covariance"], models["components"]
    signs = np.sign(np.sum(cov.components_ * comp.components_, axis=1))[:, None]
    out["max_component_difference"] = float(np.max(np.abs(comp.components_ * signs - cov.components_)))
    out["secure_eigensolve"] = comp.model_.secure_eigensolve
    out["time_ratio_components_to_covariance"] = (
        out["components"]["median_seconds"] / out["covariance"]["median_seconds"]
    )
    out["bytes_ratio_components_to_covariance"] = (
        out["components"]["bytes_sent_total"] / out["covariance"]["bytes_sent_total"]
    )
    return out


def plot(rows: list[dict[str, Any]], path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for m in sorted({r["parties"] for r in rows}):
        sub = sorted((r for r in rows if r["parties"] == m), key=lambda r: r["d"])
        ds = [r["d"] for r in sub]
        for mode, style in (("components", "-o"), ("covariance", "--s")):
            axes[0].plot(ds, [r[mode]["median_seconds"] for r in sub], style, label=f"{mode}, M={m}")
            axes[1].plot(ds, [r[mode]["bytes_sent_total"] for r in sub], style, label=f"{mode}, M={m}")
            axes[2].plot(ds, [r[mode]["max_rounds"] for r in sub], style, label=f"{mode}, M={m}")
    for ax, title in zip(
        axes, ("median wall time (s)", "bytes sent, all parties", "rounds, busiest party"), strict=True
    ):
        ax.set_xlabel("d (features)")
        ax.set_yscale("log")
        ax.set_title(title)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"PPPCA reveal='components' vs 'covariance', k={K}, in-process")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="d in (10, 30), M in (2, 3), one repeat (CI)")
    add_out_argument(parser)
    args = parser.parse_args()
    folder = output_dir(args.out, args.quick)
    dims, parties, n, repeats = (
        ((10, 30), (2, 3), 2_000, 1) if args.quick else ((10, 30, 100), (2, 3, 5), 20_000, 2)
    )
    rows = []
    for d in dims:
        for m in parties:
            row = measure(d, m, n, repeats)
            rows.append(row)
            print(
                f"d={d:3d} M={m}: components {row['components']['median_seconds']:.2f} s, "
                f"covariance {row['covariance']['median_seconds']:.3f} s, "
                f"time ratio {row['time_ratio_components_to_covariance']:.1f}, "
                f"bytes ratio {row['bytes_ratio_components_to_covariance']:.1f}, "
                f"rounds {row['components']['max_rounds']} vs {row['covariance']['max_rounds']}, "
                f"max |diff| {row['max_component_difference']:.2e}"
            )
    name = "reveal_quick" if args.quick else "reveal"
    path = write_json(
        f"{name}.json", {"machine": machine(), "k": K, "quick": args.quick, "rows": rows}, folder
    )
    plot(rows, folder / f"{name}.png")
    print(f"wrote {path} and {name}.png")


if __name__ == "__main__":
    main()
