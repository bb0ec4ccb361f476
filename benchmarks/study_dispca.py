"""Reproduce Imtiaz & Sarwate, ICASSP 2018, Fig. 1: captured energy of distributed DP PCA.

For each data set, the captured-energy ratio ``q / q_o`` (``q(V) = tr(V^T A V)``
with ``A`` the pooled second-moment matrix, ``q_o`` its top-``K`` optimum) is
measured while one parameter varies and the others stay at their defaults:

(a) privacy ``epsilon``; (b) samples per site ``N_s``; (c) number of sites ``S``
at fixed total ``N``; (d) intermediate dimension ``R / K``.

Methods (the paper's Table 1 plus capePCA from JSTSP 2018):

* ``pooled``   Analyze Gauss on all the data (``q_pooled``);
* ``dispca``   DPdisPCA, Alg. 1, sites send ``P_s`` (``q_DPdisPCA``);
* ``full``     DPdisPCA sending the whole ``Â_s`` (``q_full``);
* ``local``    Analyze Gauss on one site's data (``q_local``);
* ``capepca``  capePCA with CAPE correlated noise, the JSTSP 2018 calibration
  (pooled-AG noise at the aggregator; the aggregator's joint view of all
  releases is only ``(epsilon sqrt(2S/(S+1)), delta)``-DP per site);
* ``capepca_joint``  capePCA calibrated so that the aggregator's joint view is
  ``(epsilon, delta)``-DP per site (all noise times ``sqrt(2S/(S+1))``); see
  :mod:`mpc_pca.dp.cape`.

Every estimate comes from the real protocols (threads over the metered
channel). As in the papers: data centred and divided by the largest row norm
of the whole data set (not DP, as ICASSP 2018 §4 says), ``delta = 0.01``,
sensitivity ``1/N_s`` (``neighbour="add-remove"``: the papers' calibration),
``R = 2K``, 10 repetitions, full ``(epsilon, delta)`` at every site.

Data sets: the paper's synthetic set (``D = 200``, ``K = 50``, zero mean,
diagonal covariance with ``linspace(10, 1, K)`` on the first ``K`` axes and
``0.5 U(0, 1)`` on the others) and the offline scikit-learn ``digits``
(``D = 64``, ``N = 1797``; ``K = 10``), in place of MNIST/COVTYPE, which would
need a download.

Writes (to ``benchmarks/results/``, or ``--out DIR``; ``--quick`` to
``benchmarks/results/quick/``) ``dispca_study.json`` and
``dispca_study_<dataset>.png``; the JSON's ``conclusions`` say whether
capePCA (paper calibration) matches pooled AG, how far the joint calibration
falls behind it, and whether DPdisPCA beats local PCA.

Usage: ``python -m benchmarks.study_dispca [--quick] [--reps N] [--seed S] [--out DIR]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from benchmarks.timing import RESULTS, add_out_argument, machine, output_dir, pyplot, write_json
from mpc_pca.dp.baselines import AnalyzeGaussPCA, LocalPCA
from mpc_pca.dp.cape_estimator import CapePCA
from mpc_pca.dp.dispca import DPdisPCA
from mpc_pca.dp.metrics import captured_energy_ratio, second_moment
from mpc_pca.dp.preprocessing import center_and_scale_non_private

METHODS = ("pooled", "dispca", "dispca_psd", "full", "local_svd", "local", "capepca", "capepca_joint")
LABELS = {
    "pooled": "q_pooled / q_o (AG, pooled)",
    "dispca": "q_DPdisPCA / q_o (Alg. 1, SVD)",
    "dispca_psd": "DPdisPCA, PSD site factor (variant)",
    "full": "q_full / q_o (send Â_s)",
    "local_svd": "q_local / q_o (SVD, authors' code)",
    "local": "local, top eigenvalues",
    "capepca": "q_capePCA / q_o (paper calibration)",
    "capepca_joint": "capePCA, joint calibration (aggregator view (eps, delta)-DP)",
}
STYLES = {
    "pooled": "ko:",
    "dispca": "bo--",
    "dispca_psd": "c^--",
    "full": "ro--",
    "local_svd": "b*--",
    "local": "m*:",
    "capepca": "gs-",
    "capepca_joint": "yD-",
}
NEIGHBOUR = "add-remove"


@dataclass
class Setting:
    """One data set and its sweep grids."""

    name: str
    pool: np.ndarray
    k: int
    s: int
    n_s: int
    epsilon: float
    epsilons: list[float]
    n_s_values: list[int]
    total_n: int
    sites_values: list[int]
    r_over_k: list[float]
    delta: float = 0.01
    notes: dict[str, Any] = field(default_factory=dict)


def synthetic_pool(d: int, k: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """The paper's synthetic data: zero mean, covariance diag(linspace(10, 1, K), 0.5 U(0, 1))."""
    variances = np.r_[np.linspace(10.0, 1.0, k), 0.5 * rng.random(d - k)]
    return rng.normal(size=(n, d)) * np.sqrt(variances)


def digits_pool() -> np.ndarray:
    from sklearn.datasets import load_digits

    return np.asarray(load_digits().data, dtype=np.float64)


def fit_all(
    parts: list[np.ndarray], k: int, r: int, epsilon: float, delta: float, seeds: np.random.SeedSequence
) -> dict[str, np.ndarray]:
    """Components of every method on one split of the data."""
    children = seeds.spawn(len(METHODS))
    common = {"epsilon": epsilon, "delta": delta, "neighbour": NEIGHBOUR, "row_norm": "error"}
    r = min(r, parts[0].shape[1])
    factories: dict[str, Callable[[np.random.SeedSequence], Any]] = {
        "pooled": lambda ss: AnalyzeGaussPCA(k, random_state=ss, **common),
        "dispca": lambda ss: DPdisPCA(k, intermediate_dim=r, random_state=ss, **common),
        "dispca_psd": lambda ss: DPdisPCA(
            k, intermediate_dim=r, site_factor="psd", random_state=ss, **common
        ),
        "full": lambda ss: DPdisPCA(k, full=True, random_state=ss, **common),
        "local_svd": lambda ss: LocalPCA(k, site=0, ordering="magnitude", random_state=ss, **common),
        "local": lambda ss: LocalPCA(k, site=0, random_state=ss, **common),
        "capepca": lambda ss: CapePCA(k, calibration="paper", random_state=ss, **common),
        "capepca_joint": lambda ss: CapePCA(k, calibration="joint", random_state=ss, **common),
    }
    return {m: factories[m](ss).fit(parts).components_ for m, ss in zip(METHODS, children, strict=True)}


def measure(
    setting: Setting, s: int, n_s: int, r: int, epsilon: float, reps: int, seed: list[int]
) -> dict[str, list[float]]:
    """``q / q_o`` per method over ``reps`` random draws of ``S N_s`` rows split into ``S`` sites."""
    ratios: dict[str, list[float]] = {m: [] for m in METHODS}
    for rep in range(reps):
        ss = np.random.SeedSequence([*seed, rep])
        data_rng = np.random.default_rng(ss.spawn(1)[0])
        rows = data_rng.permutation(setting.pool.shape[0])[: s * n_s]
        parts = np.split(setting.pool[rows], s)
        A = second_moment(parts)
        for method, components in fit_all(parts, setting.k, r, epsilon, setting.delta, ss).items():
            ratios[method].append(captured_energy_ratio(A, components))
    return ratios


def sweep(
    setting: Setting, axis: str, values: list[Any], reps: int, seed: int, log: Callable[[str], None]
) -> dict[str, Any]:
    """One panel: vary ``axis`` over ``values``, others at the setting's defaults."""
    out: dict[str, Any] = {
        "values": values,
        "methods": {m: {"mean": [], "std": [], "runs": []} for m in METHODS},
    }
    for i, value in enumerate(values):
        s, n_s, r, eps = setting.s, setting.n_s, 2 * setting.k, setting.epsilon
        if axis == "epsilon":
            eps = value
        elif axis == "n_s":
            n_s = value
        elif axis == "sites":
            s, n_s = value, setting.total_n // value
        elif axis == "r_over_k":
            r = round(value * setting.k)
        start = time.perf_counter()
        axis_id = ["epsilon", "n_s", "sites", "r_over_k"].index(axis)
        ratios = measure(setting, s, n_s, r, eps, reps, [seed, axis_id, i])
        for m in METHODS:
            out["methods"][m]["mean"].append(float(np.mean(ratios[m])))
            out["methods"][m]["std"].append(float(np.std(ratios[m], ddof=1)) if reps > 1 else 0.0)
            out["methods"][m]["runs"].append([float(x) for x in ratios[m]])
        means = ", ".join(f"{m} {np.mean(ratios[m]):.3f}" for m in METHODS)
        log(
            f"  {setting.name} {axis}={value} (S={s}, N_s={n_s}, R={r}, eps={eps:g}): {means} "
            f"[{time.perf_counter() - start:.1f} s]"
        )
    return out


def conclusions(results: dict[str, Any], reps: int) -> dict[str, Any]:
    """Does capePCA match pooled AG, and does DPdisPCA beat local PCA? From the epsilon sweeps."""
    out: dict[str, Any] = {}
    for name, panels in results.items():
        eps_panel = panels["epsilon"]
        methods = eps_panel["methods"]
        cape = np.array(methods["capepca"]["runs"])
        pooled = np.array(methods["pooled"]["runs"])
        diff = cape.mean(axis=1) - pooled.mean(axis=1)
        se = np.sqrt((cape.var(axis=1, ddof=1) + pooled.var(axis=1, ddof=1)) / reps)
        z = np.where(se > 0, np.abs(diff) / np.where(se > 0, se, 1.0), 0.0)
        # Bonferroni over the epsilon grid at alpha = 0.001: |z| below the two-sided critical value
        critical = float(stats.norm.isf(0.001 / (2 * len(diff))))
        matches = bool(np.all((z < critical) | (np.abs(diff) < 0.01)))
        joint = np.array(methods["capepca_joint"]["runs"])
        joint_diff = joint.mean(axis=1) - pooled.mean(axis=1)
        entry: dict[str, Any] = {
            "epsilons": [float(e) for e in eps_panel["values"]],
            "capepca_minus_pooled_mean": diff.tolist(),
            "capepca_vs_pooled_max_abs_diff": float(np.max(np.abs(diff))),
            "capepca_matches_pooled": matches,
            "capepca_joint_minus_pooled_mean": joint_diff.tolist(),
            "capepca_joint_vs_pooled_max_gap": float(np.max(-joint_diff)),
            "capepca_matches_pooled_rule": (
                f"at every epsilon, |mean difference| < 0.01 or below the Bonferroni z critical value "
                f"{critical:.2f} (alpha = 0.001 over {len(diff)} settings), {reps} runs each"
            ),
        }
        for dis_name, loc_name in (("dispca", "local_svd"), ("dispca", "local"), ("dispca_psd", "local")):
            dis = np.array(methods[dis_name]["mean"])
            loc = np.array(methods[loc_name]["mean"])
            key = f"{dis_name}_vs_{loc_name}"
            entry[key] = {
                "mean_difference": (dis - loc).tolist(),
                "better_at_epsilon": [
                    float(e) for e, d in zip(eps_panel["values"], dis - loc, strict=True) if d > 0.005
                ],
                "worse_at_epsilon": [
                    float(e) for e, d in zip(eps_panel["values"], dis - loc, strict=True) if d < -0.005
                ],
            }
        out[name] = entry
    return out


def closing_note(summary: dict[str, Any]) -> str:
    """One paragraph per data set answering the two questions the papers raise."""
    lines = []
    for name, c in summary.items():
        parts = [
            f"{name}: capePCA {'matches' if c['capepca_matches_pooled'] else 'does NOT match'} pooled AG "
            f"(largest mean gap over the epsilon grid {c['capepca_vs_pooled_max_abs_diff']:.4f}); "
            f"capePCA with the joint calibration trails pooled AG by up to "
            f"{c['capepca_joint_vs_pooled_max_gap']:.4f}."
        ]
        for key, what in (
            ("dispca_vs_local_svd", "DPdisPCA vs local PCA as in the authors' code (SVD ordering)"),
            ("dispca_vs_local", "DPdisPCA vs local PCA keeping the top eigenvalues"),
            ("dispca_psd_vs_local", "DPdisPCA with PSD site factor vs local PCA (top eigenvalues)"),
        ):
            cmp = c[key]
            parts.append(
                f"{what}: better (by > 0.005) at epsilon {cmp['better_at_epsilon']}, "
                f"worse at {cmp['worse_at_epsilon']}, otherwise within 0.005."
            )
        lines.append(" ".join(parts))
    return "\n".join(lines)


def plot(name: str, panels: dict[str, Any], setting: Setting, suffix: str, folder: Path = RESULTS) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.6))
    titles = {
        "epsilon": (f"vs epsilon (S={setting.s}, N_s={setting.n_s})", "privacy parameter epsilon", True),
        "n_s": (f"vs N_s (S={setting.s}, eps={setting.epsilon:g})", "samples per site N_s", True),
        "sites": (f"vs S (N={setting.total_n}, eps={setting.epsilon:g})", "number of sites S", True),
        "r_over_k": (f"vs R/K (S={setting.s}, N_s={setting.n_s}, eps={setting.epsilon:g})", "R / K", False),
    }
    for ax, (axis, (title, xlabel, logx)) in zip(axes, titles.items(), strict=True):
        panel = panels[axis]
        for m in (m for m in METHODS if m in panel["methods"]):
            mean = np.array(panel["methods"][m]["mean"])
            std = np.array(panel["methods"][m]["std"])
            x = np.array(panel["values"], dtype=float)
            ax.plot(x, mean, STYLES[m], label=LABELS[m], linewidth=2, markersize=6)
            ax.fill_between(x, mean - std, mean + std, alpha=0.12, color=STYLES[m][0])
            if logx:
                ax.set_xscale("log")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"{name}: {title}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("captured energy ratio q / q_o")
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle(f"ICASSP 2018 Fig. 1 reproduction, {name} (delta={setting.delta}, K={setting.k}, mean ± sd)")
    fig.tight_layout()
    folder.mkdir(parents=True, exist_ok=True)
    fig.savefig(folder / f"dispca_study_{name}{suffix}.png", dpi=110)
    plt.close(fig)


def settings(quick: bool, rng: np.random.Generator) -> list[Setting]:
    eps_grid = [1e-3, 5e-3, 1e-2, 5e-2, 1e-1, 5e-1, 1.0, 5.0, 10.0]
    digits = center_and_scale_non_private(digits_pool())
    if quick:
        synth = center_and_scale_non_private(synthetic_pool(50, 10, 6000, rng))
        return [
            Setting(
                "synthetic",
                synth,
                k=10,
                s=5,
                n_s=400,
                epsilon=0.5,
                epsilons=[1e-2, 1e-1, 1.0, 10.0],
                n_s_values=[100, 400, 1200],
                total_n=2000,
                sites_values=[1, 5, 20],
                r_over_k=[1, 2, 4],
            ),
            Setting(
                "digits",
                digits,
                k=10,
                s=5,
                n_s=356,
                epsilon=0.5,
                epsilons=[1e-2, 1e-1, 1.0, 10.0],
                n_s_values=[100, 356],
                total_n=1780,
                sites_values=[1, 5, 20],
                r_over_k=[1, 2, 4],
            ),
        ]
    synth = center_and_scale_non_private(synthetic_pool(200, 50, 60000, rng))
    return [
        Setting(
            "synthetic",
            synth,
            k=50,
            s=10,
            n_s=1000,
            epsilon=0.5,
            epsilons=eps_grid,
            n_s_values=[100, 200, 500, 1000, 2000, 4000, 6000],
            total_n=10000,
            sites_values=[1, 2, 5, 10, 20, 50, 100],
            r_over_k=[1, 1.5, 2, 3, 4],
        ),
        Setting(
            "digits",
            digits,
            k=10,
            s=5,
            n_s=356,
            epsilon=0.5,
            epsilons=eps_grid,
            n_s_values=[50, 100, 150, 200, 250, 300, 356],
            total_n=1780,
            sites_values=[1, 2, 4, 5, 10, 20],
            r_over_k=[1, 1.5, 2, 3, 4, 6],
        ),
    ]


def replot(quick: bool, folder: Path = RESULTS) -> dict[str, Any]:
    """Redraw the figures from a saved ``dispca_study[_quick].json``."""
    import json

    suffix = "_quick" if quick else ""
    payload = json.loads((folder / f"dispca_study{suffix}.json").read_text())
    for name, panels in payload["results"].items():
        meta = payload["settings"][name]
        setting = Setting(
            name,
            np.empty((0, meta["features"])),
            k=meta["k"],
            s=meta["default_sites"],
            n_s=meta["default_n_s"],
            epsilon=meta["default_epsilon"],
            epsilons=[],
            n_s_values=[],
            total_n=meta["total_n_for_sites_sweep"],
            sites_values=[],
            r_over_k=[],
            delta=meta["delta"],
        )
        plot(name, panels, setting, suffix, folder)
    return payload


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small grids and data (about a minute)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per point (default 10, quick 3)")
    parser.add_argument("--seed", type=int, default=2018, help="master seed of data draws and DP noise")
    parser.add_argument("--plot-only", action="store_true", help="redraw the PNGs from the saved JSON")
    add_out_argument(parser)
    args = parser.parse_args(argv)
    folder = output_dir(args.out, args.quick)
    if args.plot_only:
        return replot(args.quick, folder)
    reps = args.reps or (3 if args.quick else 10)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    results: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    for setting in settings(args.quick, rng):
        print(f"{setting.name}: N_pool={setting.pool.shape[0]}, D={setting.pool.shape[1]}, K={setting.k}")
        panels = {
            "epsilon": sweep(setting, "epsilon", setting.epsilons, reps, args.seed, print),
            "n_s": sweep(setting, "n_s", setting.n_s_values, reps, args.seed, print),
            "sites": sweep(setting, "sites", setting.sites_values, reps, args.seed, print),
            "r_over_k": sweep(setting, "r_over_k", setting.r_over_k, reps, args.seed, print),
        }
        results[setting.name] = panels
        meta[setting.name] = {
            "pool_rows": int(setting.pool.shape[0]),
            "features": int(setting.pool.shape[1]),
            "k": setting.k,
            "default_sites": setting.s,
            "default_n_s": setting.n_s,
            "default_epsilon": setting.epsilon,
            "default_r": 2 * setting.k,
            "total_n_for_sites_sweep": setting.total_n,
            "delta": setting.delta,
        }
        plot(setting.name, panels, setting, "_quick" if args.quick else "", folder)
    summary = conclusions(results, reps)
    note = closing_note(summary)
    payload = {
        "study": "Imtiaz & Sarwate ICASSP 2018 Fig. 1 (captured energy vs epsilon, N_s, S, R)",
        "quick": args.quick,
        "reps": reps,
        "seed": args.seed,
        "neighbour": NEIGHBOUR,
        "preprocessing": "centre, divide by the largest row norm of the whole data set (not DP, as in the papers)",
        "metric": "q(V) / q_o with q(V) = tr(V^T A V), A the pooled second-moment matrix of the rows used",
        "settings": meta,
        "machine": machine(),
        "seconds": time.perf_counter() - started,
        "results": results,
        "conclusions": summary,
        "closing_note": note,
    }
    path = write_json("dispca_study_quick.json" if args.quick else "dispca_study.json", payload, folder)
    print(note)
    print(f"wrote {path} and {folder}/dispca_study_*.png in {payload['seconds']:.0f} s")
    return payload


if __name__ == "__main__":
    main()
