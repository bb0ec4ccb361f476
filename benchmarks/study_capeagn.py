"""capeAGN study (Imtiaz & Sarwate, JSTSP 2018, §5-6): recovery error vs epsilon and vs N.

For a synthetic single topic model (STM: 3 topics over 30 words,
``Dirichlet(0.1)`` topics, 10 words per document) and a synthetic mixture of 3
spherical Gaussians (MOG: ``D = 10``, ``|mu_k| = 0.5``, ``sigma = 0.08``),
split evenly over ``S = 10`` sites, the relative recovery error
``||M - M_hat[pi]||_F / ||M||_F`` (Hungarian matching,
:mod:`mpc_pca.dp.recovery`) is measured for:

* ``capeagn``       capeAGN over the runtime, the paper's calibration
  (pooled-data noise at the aggregator; joint view
  ``(epsilon sqrt(2S/(S+1)), delta)``-DP per site);
* ``capeagn_joint`` capeAGN with every noise term times ``sqrt(2S/(S+1))``,
  joint view ``(epsilon, delta)``-DP per site (the package default);
* ``pooled``        AGN by a trusted curator on all ``N`` rows (the paper's
  "pooled data scenario");
* ``conventional``  every site adds independent noise for its ``N_s`` rows,
  the aggregator averages;
* ``local``         one site alone (``N / S`` rows);
* ``non_private``   the same pipeline without noise.

Budget: ``(epsilon, delta)`` split in halves between ``M2`` and ``M3``
(the paper), ``delta = 1e-5``, replace-one sensitivities
(:mod:`mpc_pca.dp.moments`), ``M3(W, W, W)`` noise calibrated to
``||W||_2^3 Delta3``. Every repetition draws new model parameters, new data
and new noise from its own seed. Points are mean ± standard error over the
repetitions; failed fits (non-positive top eigenvalue of the noisy ``M2``) are
counted, not averaged. Every point has its own seeds (points are independent).

The paper's claim is tested per point at alpha = 0.05: capeAGN (paper
calibration) below conventional by a paired one-sided Wilcoxon signed-rank
test (same data, different noise), and capeAGN vs pooled AGN by a two-sided
Mann-Whitney test, with the ratio of mean errors (the claim: close to 1).
The conclusions count the points where each test rejects.

Writes ``capeagn_study.json`` (rewritten after every point) and
``capeagn_study.png`` into ``--out`` (default ``benchmarks/results``);
``--quick`` writes ``capeagn_study_quick.*`` with a small grid (CI smoke test).

Usage: ``python -m benchmarks.study_capeagn [--quick] [--out DIR] [--reps N] [--seed S]``
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from benchmarks.timing import add_out_argument, machine, output_dir, pyplot
from mpc_pca.data.latent import LatentSample, make_gaussian_mixture, make_topic_model
from mpc_pca.dp.agn_baselines import fit_agn_baseline
from mpc_pca.dp.capeagn import run_capeagn
from mpc_pca.dp.recovery import recovery_error
from protocols.errors import ProtocolError

METHODS = ("capeagn", "capeagn_joint", "pooled", "conventional", "local", "non_private")
LABELS = {
    "capeagn": "capeAGN (paper calibration)",
    "capeagn_joint": "capeAGN (joint calibration, default)",
    "pooled": "pooled AGN (trusted curator)",
    "conventional": "conventional (independent noise, averaged)",
    "local": "local (one site)",
    "non_private": "non-private (pooled, no noise)",
}
STYLES = {
    "capeagn": "gs-",
    "capeagn_joint": "yD-",
    "pooled": "ko:",
    "conventional": "ro--",
    "local": "m*:",
    "non_private": "b^-.",
}
DELTA = 1e-5
SITES = 10
SIGMA = 0.08


@dataclass(frozen=True)
class Grid:
    """Sweep values and defaults of one run of the study."""

    epsilons: tuple[float, ...]
    sizes: tuple[int, ...]
    default_n: int
    default_epsilon: float
    reps: int


def grid(quick: bool, reps: int | None) -> Grid:
    if quick:
        return Grid((0.5, 2.0, 8.0), (2_000, 10_000), 5_000, 2.0, reps or 2)
    return Grid(
        (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0),
        (2_000, 5_000, 10_000, 20_000, 50_000, 100_000),
        20_000,
        1.0,
        reps or 20,
    )


def sample(model: str, n: int, seed: int) -> LatentSample:
    rng = np.random.default_rng(seed)
    if model == "stm":
        return make_topic_model(n, n_words=30, n_topics=3, n_sites=SITES, rng=rng)
    return make_gaussian_mixture(n, n_features=10, n_components=3, sigma=SIGMA, n_sites=SITES, rng=rng)


def fit_error(method: str, model: str, data: LatentSample, epsilon: float, seed: int) -> float:
    """Recovery error of one method on one sample; NaN if the fit failed (noise swamped M2)."""
    sigma = SIGMA if model == "mog" else None
    try:
        if method.startswith("capeagn"):
            calibration = "paper" if method == "capeagn" else "joint"
            fitted = run_capeagn(
                data.parts,
                3,
                model=model,
                epsilon=epsilon,
                delta=DELTA,
                sigma=sigma,
                calibration=calibration,
                random_state=seed,
            ).model
        else:
            scheme = method.replace("_", "-")
            fitted = fit_agn_baseline(
                data.parts,
                3,
                scheme,
                model=model,
                epsilon=epsilon,
                delta=DELTA,
                sigma=sigma,
                random_state=seed,
            )
    except ProtocolError:
        return math.nan
    return recovery_error(data.components, data.weights, fitted.components, fitted.weights).component_error


def measure(model: str, n: int, epsilon: float, reps: int, seed: int) -> dict[str, Any]:
    """One point; ``seed`` is unique to the point, so points are independent of each other."""
    errors: dict[str, list[float]] = {m: [] for m in METHODS}
    for rep in range(reps):
        data = sample(model, n, 1000 * seed + rep)
        for method in METHODS:
            errors[method].append(fit_error(method, model, data, epsilon, 1000 * seed + 500 + rep))
    point: dict[str, Any] = {"n": n, "epsilon": epsilon, "errors": errors, "summary": {}}
    for method, values in errors.items():
        arr = np.asarray(values)
        ok = arr[np.isfinite(arr)]
        point["summary"][method] = {
            "mean": float(ok.mean()) if ok.size else None,
            "sem": float(ok.std(ddof=1) / math.sqrt(ok.size)) if ok.size > 1 else None,
            "median": float(np.median(ok)) if ok.size else None,
            "failed": int(arr.size - ok.size),
        }
    point["claim"] = claim(errors)
    return point


def claim(errors: dict[str, list[float]]) -> dict[str, Any]:
    """capeAGN (paper) vs conventional: paired one-sided Wilcoxon; capeAGN / pooled mean ratio."""
    cape = np.asarray(errors["capeagn"])
    conv = np.asarray(errors["conventional"])
    pooled = np.asarray(errors["pooled"])
    joint = np.asarray(errors["capeagn_joint"])
    both = np.isfinite(cape) & np.isfinite(conv)
    p_value = None
    if both.sum() >= 2 and np.any(cape[both] != conv[both]):
        p_value = float(stats.wilcoxon(cape[both], conv[both], alternative="less").pvalue)

    ok = np.isfinite(cape) & np.isfinite(pooled)
    pooled_p = None
    if ok.sum() >= 2:
        pooled_p = float(stats.mannwhitneyu(cape[ok], pooled[ok], alternative="two-sided").pvalue)

    def ratio(a: np.ndarray, b: np.ndarray) -> float | None:
        ok = np.isfinite(a) & np.isfinite(b)
        return float(a[ok].mean() / b[ok].mean()) if ok.any() and b[ok].mean() > 0 else None

    return {
        "cape_below_conventional_p": p_value,
        "cape_below_conventional": bool(p_value is not None and p_value < 0.05),
        "cape_over_conventional": ratio(cape, conv),
        "cape_over_pooled": ratio(cape, pooled),
        "cape_vs_pooled_p": pooled_p,
        "cape_differs_from_pooled": bool(pooled_p is not None and pooled_p < 0.05),
        "joint_over_pooled": ratio(joint, pooled),
    }


def plot(results: dict[str, Any], g: Grid, path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(15, 10))
    names = {"stm": "single topic model (D=30 words, K=3)", "mog": "Gaussian mixture (D=10, K=3, sigma=0.08)"}
    for row, model in enumerate(("stm", "mog")):
        for col, sweep in enumerate(("epsilon", "n")):
            ax = axes[row][col]
            points = results.get(model, {}).get(sweep, [])
            if not points:
                ax.set_visible(False)
                continue
            x = np.array([p[sweep] for p in points], dtype=float)
            for method in METHODS:
                mean = np.array(
                    [
                        np.nan if p["summary"][method]["mean"] is None else p["summary"][method]["mean"]
                        for p in points
                    ]
                )
                sem = np.array(
                    [
                        np.nan if p["summary"][method]["sem"] is None else p["summary"][method]["sem"]
                        for p in points
                    ]
                )
                ax.errorbar(
                    x, mean, yerr=sem, fmt=STYLES[method], label=LABELS[method], capsize=3, markersize=5
                )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.grid(alpha=0.3, which="both")
            ax.set_ylabel("relative recovery error ||M - M_hat||_F / ||M||_F")
            if sweep == "epsilon":
                ax.set_xlabel("privacy parameter epsilon (total, split 1/2 : 1/2)")
                ax.set_title(f"{names[model]}: vs epsilon (N={g.default_n}, S={SITES})")
            else:
                ax.set_xlabel("total number of samples N (documents / points)")
                ax.set_title(f"{names[model]}: vs N (epsilon={g.default_epsilon:g}, S={SITES})")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=10, frameon=False)
    fig.suptitle(
        f"capeAGN (JSTSP 2018 §5): recovery error, mean ± s.e. over {g.reps} seeds, delta={DELTA:g}",
        fontsize=13,
    )
    fig.tight_layout(rect=(0, 0.07, 1, 0.97))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def conclusions(results: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for model, sweeps in results.items():
        points = [p for sweep in sweeps.values() for p in sweep]
        claims = [p["claim"] for p in points]
        below = sum(c["cape_below_conventional"] for c in claims)
        ratios = [c["cape_over_pooled"] for c in claims if c["cape_over_pooled"] is not None]
        joint = [c["joint_over_pooled"] for c in claims if c["joint_over_pooled"] is not None]
        conv = [c["cape_over_conventional"] for c in claims if c["cape_over_conventional"] is not None]
        out[model] = {
            "points": len(points),
            "cape_significantly_below_conventional": below,
            "cape_over_conventional_range": [min(conv), max(conv)] if conv else None,
            "cape_over_pooled_range": [min(ratios), max(ratios)] if ratios else None,
            "cape_over_pooled_geometric_mean": float(np.exp(np.mean(np.log(ratios)))) if ratios else None,
            "cape_significantly_different_from_pooled": sum(c["cape_differs_from_pooled"] for c in claims),
            "joint_over_pooled_range": [min(joint), max(joint)] if joint else None,
            "joint_over_pooled_geometric_mean": float(np.exp(np.mean(np.log(joint)))) if joint else None,
        }
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small grid for a CI smoke test (< 1 min)")
    add_out_argument(parser)
    parser.add_argument("--reps", type=int, default=None, help="repetitions per point (default 20; quick 2)")
    parser.add_argument("--seed", type=int, default=0, help="base seed")
    args = parser.parse_args(argv)
    args.out = output_dir(args.out, args.quick)
    g = grid(args.quick, args.reps)
    stem = "capeagn_study_quick" if args.quick else "capeagn_study"
    json_path = args.out / f"{stem}.json"
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results: dict[str, Any] = {}
    payload: dict[str, Any] = {
        "study": "capeAGN (Imtiaz & Sarwate JSTSP 2018 §5): recovery error vs epsilon and vs N",
        "quick": args.quick,
        "reps": g.reps,
        "seed": args.seed,
        "sites": SITES,
        "delta": DELTA,
        "budget_split": 0.5,
        "noise_calibration": "analytic (Balle & Wang 2018), the package default",
        "neighbour": "replace-one",
        "models": {
            "stm": "3 topics ~ Dirichlet(0.1) over 30 words, equal weights, 10 words per document",
            "mog": "3 spherical Gaussians in 10-D, |mu_k| = 0.5, sigma = 0.08, equal weights, rows clipped to norm 1",
        },
        "metric": "||M - M_hat[pi]||_F / ||M||_F after Hungarian matching; mean, s.e., median over reps",
        "grid": {
            "epsilon": list(g.epsilons),
            "n": list(g.sizes),
            "default_n": g.default_n,
            "default_epsilon": g.default_epsilon,
        },
        "machine": machine(),
        "results": results,
    }
    point_seed = 1000 * args.seed
    for model in ("stm", "mog"):
        results[model] = {"epsilon": [], "n": []}
        for sweep, values in (("epsilon", g.epsilons), ("n", g.sizes)):
            for value in values:
                point_seed += 1
                n = g.default_n if sweep == "epsilon" else int(value)
                eps = float(value) if sweep == "epsilon" else g.default_epsilon
                point = measure(model, n, eps, g.reps, point_seed)
                results[model][sweep].append(point)
                payload["seconds"] = time.perf_counter() - started
                payload["conclusions"] = conclusions(results)
                json_path.write_text(json.dumps(payload, indent=2))
                s = point["summary"]
                print(
                    f"{model} N={n:>6} eps={eps:<5g} cape={s['capeagn']['mean']:.4f} "
                    f"joint={s['capeagn_joint']['mean']:.4f} pooled={s['pooled']['mean']:.4f} "
                    f"conv={s['conventional']['mean']:.4f} local={s['local']['mean']:.4f} "
                    f"nonpriv={s['non_private']['mean']:.4f}  p(cape<conv)={point['claim']['cape_below_conventional_p']}",
                    flush=True,
                )
    plot(results, g, args.out / f"{stem}.png")
    payload["seconds"] = time.perf_counter() - started
    json_path.write_text(json.dumps(payload, indent=2))
    print(json.dumps(payload["conclusions"], indent=2))
    print(f"wrote {json_path} and {args.out / f'{stem}.png'} in {payload['seconds']:.0f} s")
    return payload


if __name__ == "__main__":
    main()
