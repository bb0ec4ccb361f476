"""Studies ``icassp2018`` and ``icassp2016-fig1``: captured energy of the differentially private family.

Two parts, every estimate from the real protocols (threads over the metered
channel), metric ``q(V) / q_o`` with ``q(V) = tr(V^T A V)``, ``A`` the pooled
second-moment matrix of the rows used and ``q_o`` its top-``K`` optimum:

* ``icassp2018``: Imtiaz & Sarwate, ICASSP 2018, Fig. 1 (vs epsilon, samples
  per site N_s, sites S, intermediate dimension R/K) and Fig. 2 (vs delta) for
  pooled Analyze Gauss, DPdisPCA (Alg. 1), DPdisPCA sending the full matrix,
  local PCA, capePCA (JSTSP 2018) in the paper's and the joint calibration;
  every panel in three settings, paired by repetition
  (:mod:`mpc_pca.studies.settings`): the paper's formula (add/remove
  neighbours, delta = 0.01, the classical Gaussian ``sigma = sqrt(2
  ln(1.25/delta)) / (N_s epsilon)`` of Alg. 1 step 3; measured at epsilon < 1
  only, where that formula's proof holds), the paper's neighbours and delta
  with this project's analytic Gaussian noise (Balle & Wang 2018; less noise
  than the paper's formula), and this project's sound settings (replace-one,
  delta = 1e-5, analytic noise, capePCA's joint calibration).
* ``icassp2016``: Imtiaz & Sarwate, ICASSP 2016, Fig. 1 baselines: AG, PPM
  (private power method), PPCA (exponential mechanism, Gibbs sampler) and SN
  (retracted by its authors as not DP; shown only to compare with the paper),
  with the paper's neighbours and delta (add/remove, delta = 0.1) and this
  project's analytic Gaussian noise for AG, and with the sound settings.

The verdicts are in :mod:`mpc_pca.studies.dp_utility_claims`; DSC 2018
(DPDPCA) lives in :mod:`mpc_pca.studies.dsc2018`.

Data: the papers' synthetic set (zero mean, covariance ``diag(linspace(10, 1,
K), 0.5 U(0, 1))``) and scikit-learn's bundled ``digits`` (for MNIST /
COVTYPE, which would need a download), centred and divided by the largest row
norm (not DP, as the papers do).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mpc_pca.studies.dp_utility_claims import (
    BASELINES,
    RATIOS,
    icassp2016_claims,
    icassp2018_claims,
    ratio_series,
)
from mpc_pca.studies.framework import Point, Record, Study, Table
from mpc_pca.studies.plotting import errorbar_series, legend_outside, pyplot, save
from mpc_pca.studies.settings import formula_style, settings, sound_style
from protocols.errors import InputValidationError

ICASSP18_METHODS = ("pooled", "dispca", "full", "local_svd", "local", "capepca", "capepca_joint")
#: The methods re-run with the sound settings (capePCA's sound calibration is the joint one).
SOUND_METHODS = {"icassp2018": ("pooled", "dispca", "full", "local_svd", "capepca_joint"),
                 "icassp2016": ("AG", "PPM", "PPCA", "SN")}  # fmt: skip
#: The methods re-run with the paper's formula (classical Gaussian noise, ICASSP 2018 Alg. 1 step 3), at
#: epsilon < 1 only (the formula's proof needs it; the estimators refuse it above).
FORMULA_METHODS = ("pooled", "dispca", "full", "local_svd", "capepca")
LABELS = {
    "pooled": "Analyze Gauss on pooled data (q_pooled)",
    "dispca": "DPdisPCA, Alg. 1 (q_DPdisPCA)",
    "full": "DPdisPCA sending full A_s (q_full)",
    "local_svd": "local PCA, one site (authors' SVD ordering)",
    "local": "local PCA, one site (top eigenvalues)",
    "capepca": "capePCA, paper calibration",
    "capepca_joint": "capePCA, joint calibration",
    "AG": "AG (Analyze Gauss)",
    "PPM": "PPM (private power method)",
    "PPCA": "PPCA (exponential mechanism)",
    "SN": "SN (retracted: not DP)",
}
AXES = {
    "epsilon": "privacy parameter epsilon",
    "n_s": "samples per site N_s",
    "sites": "number of sites S (total N fixed)",
    "r_over_k": "intermediate dimension R / K",
    "delta": "privacy parameter delta",
}


def synthetic_pool(d: int, k: int, n: int, seed: int) -> np.ndarray:
    """The ICASSP papers' synthetic data: covariance ``diag(linspace(10, 1, K), 0.5 U(0, 1))``."""
    rng = np.random.default_rng(seed)
    variances = np.r_[np.linspace(10.0, 1.0, k), 0.5 * rng.random(d - k)]
    return rng.normal(size=(n, d)) * np.sqrt(variances)


def _pool(name: str, quick: bool) -> tuple[np.ndarray, int]:
    from mpc_pca.dp.preprocessing import center_and_scale_non_private

    if name == "digits":
        from sklearn.datasets import load_digits

        return center_and_scale_non_private(np.asarray(load_digits().data, dtype=np.float64)), 10
    if name == "synthetic":
        d, k, n = (20, 5, 3000) if quick else (100, 20, 30000)
        return center_and_scale_non_private(synthetic_pool(d, k, n, seed=2018)), k
    if name == "synthetic2016":
        d, k, n = (10, 2, 4000) if quick else (50, 5, 20000)
        return center_and_scale_non_private(synthetic_pool(d, k, n, seed=2016)), k
    if name == "small":
        return center_and_scale_non_private(synthetic_pool(20, 5, 4000, seed=7)), 5
    raise KeyError(name)


def _defaults(dataset: str, quick: bool) -> dict[str, Any]:
    if dataset == "digits":
        return {"s": 5, "n_s": 356, "total_n": 1780, "epsilon": 0.5, "delta": 0.01}
    return {"s": 5 if quick else 10, "n_s": 400 if quick else 1000, "total_n": 2000 if quick else 10000,
            "epsilon": 0.5, "delta": 0.01}  # fmt: skip


#: ICASSP 2016 Fig. 1 and DSC 2018 Fig. 5 epsilon grids (full size; quick uses two values).
ICASSP16_EPSILONS = [0.05, 0.1, 0.5, 1.0, 2.0, 5.0]


def points(quick: bool, options: dict[str, str], part: str = "icassp2018") -> list[Point]:
    """The points of one part: ICASSP 2018 sweeps per data set, or the ICASSP 2016 baselines.

    Repeats are 10 at full size (the papers' 10 runs) and 5 at the quick size,
    the fewest with which a paired sign test can reach alpha = 0.05 (ICASSP 2018's
    claims pool the repeats of a whole sweep, so 3 per point suffice there).
    """
    out: list[Point] = []
    reps = 10
    if part == "icassp2018":
        reps = 3 if quick else reps  # the claims pool repeats over a sweep: 2 values x 3 >= 6 pairs
        grids: dict[str, list[float]]
        if quick:
            grids = {"epsilon": [0.1, 10.0], "n_s": [100, 400], "sites": [1, 10], "r_over_k": [1, 2],
                     "delta": [1e-4, 0.1]}  # fmt: skip
            datasets = ["synthetic"]
        else:
            grids = {
                "epsilon": [1e-3, 1e-2, 0.1, 0.5, 1.0, 5.0, 10.0],
                "n_s": [100, 200, 500, 1000, 2000],
                "sites": [1, 2, 5, 10, 20],
                "r_over_k": [1, 1.5, 2, 4],
                "delta": [1e-5, 1e-4, 1e-3, 1e-2, 0.1],
            }
            datasets = ["synthetic", "digits"]
        for ds in datasets:
            g = dict(grids)
            if ds == "digits":
                g["n_s"] = [50, 100, 200, 356]
            for axis, values in g.items():
                for value in values:
                    out.append({"key": f"icassp2018/{ds}/{axis}={value:g}", "part": "icassp2018", "dataset": ds,
                                "axis": axis, "value": value, "reps": reps})  # fmt: skip
    elif part == "icassp2016":
        reps = 5 if quick else reps  # per-epsilon sign tests: 5 pairs is the fewest reaching p < 0.05
        for eps in [0.1, 5.0] if quick else ICASSP16_EPSILONS:
            out.append({"key": f"icassp2016/synthetic2016/epsilon={eps:g}", "part": "icassp2016",
                        "dataset": "synthetic2016", "axis": "epsilon", "value": eps, "reps": reps})  # fmt: skip
        for n in [400, 4000] if quick else [500, 1000, 2000, 5000, 10000, 20000]:  # Fig. 2: vs samples n
            out.append({"key": f"icassp2016/synthetic2016/n={n}", "part": "icassp2016",
                        "dataset": "synthetic2016", "axis": "n", "value": n, "reps": reps})  # fmt: skip
    else:
        raise InputValidationError(f"unknown part {part!r}")
    for p in out:
        p["quick"] = quick
    return out


def _factories(
    part: str, k: int, r: int, eps: float, delta: float, neighbour: str, noise: str = "analytic"
) -> dict[str, Callable]:
    from mpc_pca.dp.baselines import AnalyzeGaussPCA, LocalPCA
    from mpc_pca.dp.cape_estimator import CapePCA
    from mpc_pca.dp.dispca import DPdisPCA
    from mpc_pca.dp.mechanism_baselines import ExponentialMechanismPCA, PrivatePowerMethodPCA, RetractedSNPCA

    common: dict[str, Any] = {"epsilon": eps, "delta": delta, "neighbour": neighbour, "row_norm": "error"}
    if part == "icassp2018":
        common["noise_calibration"] = noise
        return {
            "pooled": lambda ss: AnalyzeGaussPCA(k, random_state=ss, **common),
            "dispca": lambda ss: DPdisPCA(k, intermediate_dim=r, random_state=ss, **common),
            "full": lambda ss: DPdisPCA(k, full=True, random_state=ss, **common),
            "local_svd": lambda ss: LocalPCA(k, site=0, ordering="magnitude", random_state=ss, **common),
            "local": lambda ss: LocalPCA(k, site=0, random_state=ss, **common),
            "capepca": lambda ss: CapePCA(k, calibration="paper", random_state=ss, **common),
            "capepca_joint": lambda ss: CapePCA(k, calibration="joint", random_state=ss, **common),
        }
    if part == "icassp2016":
        return {
            "AG": lambda ss: AnalyzeGaussPCA(k, random_state=ss, **common),
            "PPM": lambda ss: PrivatePowerMethodPCA(k, random_state=ss, **common),
            "PPCA": lambda ss: ExponentialMechanismPCA(k, epsilon=eps, row_norm="error", random_state=ss),
            "SN": lambda ss: RetractedSNPCA(
                k, epsilon=eps, neighbour=neighbour, row_norm="error", random_state=ss
            ),
        }
    raise InputValidationError(f"unknown part {part!r}")


def _parameters(point: Point, n_rows: int, k: int) -> tuple[int, int, float, float, int]:
    """The point's sites S, samples per site N_s, epsilon, delta and R: the figure's defaults, its axis swept."""
    part, axis, value = point["part"], point["axis"], point["value"]
    d = _defaults(point["dataset"], bool(point.get("quick")))
    s, n_s, eps, delta, r = d["s"], d["n_s"], d["epsilon"], d["delta"], 2 * k
    if part == "icassp2016":
        s, n_s, delta = 4, n_rows // 4, 0.1  # ICASSP 2016 Fig. 1(a): synthetic, delta 0.1
        eps = 1.0  # Fig. 2's fixed epsilon (the Fig. 1 sweep overrides it)
        if axis == "n":
            n_s = int(value) // s
    if axis == "epsilon":
        eps = float(value)
    elif axis == "n_s":
        n_s = int(value)
    elif axis == "sites":
        s, n_s = int(value), d["total_n"] // int(value)
    elif axis == "r_over_k":
        r = round(float(value) * k)
    elif axis == "delta":
        delta = float(value)
    return s, n_s, eps, delta, r


def measure(point: Point) -> dict[str, Any]:
    """``q / q_o`` of every method over ``reps`` random draws of the rows and of the noise.

    Every setting on the same rows: the paper's neighbours and delta with
    analytic noise (``ratios``), the sound settings (``ratios_sound``) and, for
    ICASSP 2018 at epsilon < 1, the paper's formula (``ratios_formula``).
    """
    from mpc_pca.dp.metrics import captured_energy_ratio, second_moment

    pool, k = _pool(point["dataset"], bool(point.get("quick")))
    part, axis, neighbour = point["part"], point["axis"], "add-remove"
    s, n_s, eps, delta, r = _parameters(point, pool.shape[0], k)
    r = min(r, pool.shape[1])
    factories = _factories(part, k, r, eps, delta, neighbour)
    sound = settings()["sound"]
    sound_delta = delta if axis == "delta" else sound.delta_or(delta)  # a delta sweep keeps its deltas
    sound_factories = {m: f for m, f in _factories(part, k, r, eps, sound_delta, sound.neighbour).items()
                       if m in SOUND_METHODS[part]}  # fmt: skip
    # the paper's formula (classical Gaussian) where its proof holds: epsilon < 1
    formula_factories = ({m: f for m, f in _factories(part, k, r, eps, delta, neighbour, "classical").items()
                          if m in FORMULA_METHODS} if part == "icassp2018" and eps < 1 else {})  # fmt: skip
    ratios: dict[str, list[float]] = {m: [] for m in factories}
    ratios_sound: dict[str, list[float]] = {m: [] for m in sound_factories}
    ratios_formula: dict[str, list[float]] = {m: [] for m in formula_factories}
    seed = [_stable_seed(point["key"])]
    for rep in range(point["reps"]):
        ss = np.random.SeedSequence([*seed, rep])
        data_rng = np.random.default_rng(ss.spawn(1)[0])
        rows = data_rng.permutation(pool.shape[0])[: s * n_s]
        parts = np.array_split(pool[rows], s)
        A = second_moment(parts)
        children = ss.spawn(len(factories) + 1)[1:]
        sound_children = ss.spawn(len(sound_factories))  # after the paper's: those seeds are unchanged
        formula_children = ss.spawn(len(formula_factories))  # after the sound ones: theirs are unchanged
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SN's retraction warning, once per fit
            for (method, make), child in zip(factories.items(), children, strict=True):
                ratios[method].append(captured_energy_ratio(A, make(child).fit(parts).components_))
            for (method, make), child in zip(sound_factories.items(), sound_children, strict=True):
                ratios_sound[method].append(captured_energy_ratio(A, make(child).fit(parts).components_))
            for (method, make), child in zip(formula_factories.items(), formula_children, strict=True):
                ratios_formula[method].append(captured_energy_ratio(A, make(child).fit(parts).components_))
    extra = {"ratios_formula": ratios_formula} if formula_factories else {}
    return {"ratios": ratios, "ratios_sound": ratios_sound, **extra, "S": s, "N_s": n_s, "epsilon": eps, "delta": delta,
            "sound_delta": sound_delta, "R": r, "K": k, "D": int(pool.shape[1]), "neighbour": neighbour}  # fmt: skip


def _stable_seed(key: str) -> int:
    import hashlib

    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big")


def _both_settings(
    records: list[Record], part: str, dataset: str, axis: str
) -> tuple[dict[str, list[tuple[float, Sequence[float]]]], dict[str, dict[str, Any]]]:
    """Every setting's series for one panel, with their styles (same colour; sound dashed, paper's formula dotted)."""
    series: dict[str, list[tuple[float, Sequence[float]]]] = {}
    styles: dict[str, dict[str, Any]] = {}
    suffix = {"paper": "", "formula": ", paper's formula", "sound": ", sound settings"}
    restyle: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
        "paper": dict,
        "formula": formula_style,
        "sound": sound_style,
    }
    for name, key in RATIOS.items():
        for m, pts in ratio_series(records, part, dataset, axis, key).items():
            label = f"{LABELS[m]}{suffix[name]}"
            series[label] = pts
            styles[label] = restyle[name](STYLES[m])
    return series, styles


def _mean_at(series: dict[str, list[tuple[float, Sequence[float]]]], method: str) -> dict[float, float]:
    return {x: float(np.mean(v)) for x, v in series.get(method, [])}


STYLES = {
    "pooled": {"color": "black", "linestyle": ":"},
    "dispca": {"color": "tab:blue"},
    "full": {"color": "tab:red", "linestyle": "--"},
    "local_svd": {"color": "tab:purple", "linestyle": "--"},
    "local": {"color": "tab:pink", "linestyle": ":"},
    "capepca": {"color": "tab:green"},
    "capepca_joint": {"color": "tab:olive", "linestyle": "-."},
    "AG": {"color": "black"},
    "PPM": {"color": "tab:orange"},
    "PPCA": {"color": "tab:purple"},
    "SN": {"color": "tab:gray", "linestyle": "--"},
}


def plot(records: list[Record], out: Any, suffix: str) -> list[Any]:
    """ICASSP 2018 Figs. 1-2 per data set; ICASSP 2016 Fig. 1; DPDPCA vs private local."""
    from pathlib import Path

    plt = pyplot()
    paths = []
    for ds in sorted({r["dataset"] for r in records if r["part"] == "icassp2018"}):
        fig = _icassp2018_figure(plt, records, ds)
        paths.append(save(fig, Path(out) / f"icassp2018{suffix}_{ds}.png"))
    panels = [(axis, title) for axis, title in (("epsilon", "ICASSP 2016 Fig. 1(a): vs epsilon (delta 0.1)"),
                                                 ("n", "ICASSP 2016 Fig. 2(a): vs samples n (eps 1, delta 0.1)"))
              if any(r["part"] == "icassp2016" and r["axis"] == axis for r in records)]  # fmt: skip
    if panels:
        fig = _icassp2016_figure(plt, records, panels)
        paths.append(save(fig, Path(out) / f"icassp2016-fig1{suffix}.png"))
    return paths


def _icassp2018_figure(plt: Any, records: list[Record], ds: str) -> Any:
    """ICASSP 2018 Figs. 1-2 of one data set: one panel per axis measured, both settings in each."""
    axes_present = [a for a in AXES if any(r["dataset"] == ds and r["axis"] == a for r in records)]
    first = next(r for r in records if r["dataset"] == ds and r["part"] == "icassp2018")
    fig, axes = plt.subplots(2, 3, figsize=(15, 9.5), squeeze=False)
    flat = [a for row in axes for a in row]
    for ax, axis in zip(flat, axes_present, strict=False):
        errorbar_series(ax, *_both_settings(records, "icassp2018", ds, axis))
        if axis in ("epsilon", "n_s", "sites", "delta"):
            ax.set_xscale("log")
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel(AXES[axis])
        ax.set_ylabel("captured energy q / q_o (mean ± sd)")
        ax.set_title(f"vs {AXES[axis]} ({'Fig. 2' if axis == 'delta' else 'Fig. 1'})")
        ax.grid(alpha=0.3)
    for ax in flat[len(axes_present) :]:
        ax.axis("off")
    fig.suptitle(
        f"ICASSP 2018 distributed DP PCA, {ds} (D={first['D']}, K={first['K']}): captured energy of the "
        f"private subspace; defaults S={_defaults(ds, bool(first.get('quick')))['s']}, "
        f"eps=0.5, R=2K\nfilled markers: paper's neighbours and delta (add/remove, delta 0.01) with analytic "
        f"Gaussian noise (this project's choice)\ncrosses, dotted: paper's formula (classical Gaussian, eps < 1); "
        f"hollow markers, dashed: sound settings (replace-one, delta 1e-5)"
    )
    legend_outside(fig, flat, ncol=3)
    return fig


def _icassp2016_figure(plt: Any, records: list[Record], panels: list[tuple[str, str]]) -> Any:
    """ICASSP 2016 Figs. 1(a) and 2(a): the baselines vs epsilon and vs samples, both settings."""
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 5), squeeze=False)
    for ax, (axis, title) in zip(axes[0], panels, strict=True):
        errorbar_series(ax, *_both_settings(records, "icassp2016", "synthetic2016", axis))
        ax.set_xscale("log")
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("privacy parameter epsilon" if axis == "epsilon" else "samples n (4 sites)")
        ax.set_ylabel("captured energy q / q_o (mean ± sd)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    fig.suptitle("ICASSP 2016: captured energy of AG, PPM, PPCA and SN (retracted), synthetic data\nfilled "
                 "markers: paper's neighbours and delta (add/remove, delta 0.1), analytic Gaussian noise (this "
                 "project's choice); hollow, dashed: sound (replace-one, delta 1e-5)")  # fmt: skip
    legend_outside(fig, list(axes[0]), ncol=3)
    return fig


#: How the tables tag each setting's rows.
TABLE_TAGS = {
    "paper": "paper's neighbours and delta, analytic noise (this project's choice)",
    "formula": "paper's formula (classical Gaussian)",
    "sound": "sound settings",
}


def tables(records: list[Record]) -> list[Table]:
    """The ICASSP 2016 baselines table and the ICASSP 2018 Fig. 1(a) tables, every setting's rows labelled."""
    out = []
    for part, ds, caption, methods in (
        ("icassp2016", "synthetic2016", "ICASSP 2016 baselines: captured energy q/q_o vs epsilon (synthetic, "
         "D=50, K=5, delta=0.1; the paper plots these as Fig. 1(a))", BASELINES),
        ("icassp2018", "synthetic", "ICASSP 2018 Fig. 1(a): q/q_o vs epsilon, synthetic", ICASSP18_METHODS),
        ("icassp2018", "digits", "ICASSP 2018 Fig. 1(a): q/q_o vs epsilon, digits", ICASSP18_METHODS),
    ):  # fmt: skip
        if not ratio_series(records, part, ds, "epsilon"):
            continue
        every = [ratio_series(records, part, ds, "epsilon", key) for key in RATIOS.values()]
        xs = sorted({x for series in every for v in series.values() for x, _ in v})
        rows = []
        for name, series in zip(RATIOS, every, strict=True):
            for m in methods:
                if m not in series:
                    continue
                at = _mean_at(series, m)
                rows.append(
                    [f"{LABELS[m]} [{TABLE_TAGS[name]}]", *[f"{at[x]:.3f}" if x in at else "-" for x in xs]]
                )
        note = "Means over repetitions." + (" '-': not measured in that setting (the paper's formula, classical "
                "Gaussian noise, is measured at epsilon < 1 only: its proof needs it)." if part == "icassp2018" else "")  # fmt: skip
        out.append(Table(caption, ["method [setting]", *[f"eps={x:g}" for x in xs]], rows, note=note))
    return out


def _part(part: str) -> Any:
    def pts(quick: bool, options: dict[str, str]) -> list[Point]:
        return points(quick, options, part)

    return pts


STUDY = Study(
    name="icassp2018",
    summary="ICASSP 2018 Figs. 1 (a-l) and 2: DPdisPCA, q_full, local, pooled AG and capePCA (JSTSP 2018) "
    "vs epsilon, N_s, S, R/K, delta; 'distributed beats local' with the paper's formula, the paper's neighbours and "
    "delta with analytic noise, and the sound settings",
    points=_part("icassp2018"),
    measure=measure,
    plot=plot,
    tables=tables,
    claims=icassp2018_claims,
    description=(
        "Full size: synthetic D=100, K=20 (pool 30,000 rows; the paper's D=200, K=50 is cut to fit minutes on "
        "2 shared cores) and scikit-learn's bundled digits (1797 x 64, K=10) in place of MNIST/COVTYPE (not "
        "installable offline); 10 repetitions per point as in the paper (quick: synthetic D=20, K=5, 5 "
        "repetitions). Three settings, on the same rows, one verdict each: the paper's formula (add/remove "
        "neighbours, sensitivity 1/N_s, delta 0.01, R = 2K, classical Gaussian sigma = sqrt(2 ln(1.25/delta)) / "
        "(N_s epsilon) as in Alg. 1 step 3; only at epsilon < 1, where that formula's proof holds: dotted "
        "curves); the paper's neighbours and delta with this project's analytic Gaussian noise (less noise than "
        "the paper's formula; solid curves); this project's sound settings (replace-one neighbours, delta 1e-5 "
        "except on the delta axis, analytic noise, capePCA's joint calibration: dashed curves). "
        "Verdicts: Kendall trend tests and paired sign tests at alpha 0.05; comparisons pooled over the epsilons "
        "carry the verdict at each epsilon beside them."
    ),
    reproduces=(
        "ICASSP 2018: Fig. 1 (a-f) (vs epsilon and N_s; paper's formula, analytic noise and sound settings)",
        "ICASSP 2018: Fig. 1 (g-l) (vs S and R/K; paper's formula, analytic noise and sound settings)",
        "ICASSP 2018: Fig. 2 (vs delta; paper's formula, analytic noise and sound settings)",
        "ICASSP 2018: 'distributed beats local' (per epsilon and pooled; every setting)",
        "JSTSP 2018: capePCA = pooled Analyze Gauss",
    ),
)

ICASSP2016_STUDY = Study(
    name="icassp2016-fig1",
    summary="ICASSP 2016 Figs. 1-2: captured energy vs epsilon and vs samples n of AG, PPM, PPCA and SN "
    "(retracted: not DP), orderings per epsilon beside the pooled ones, the paper's neighbours and delta (analytic "
    "noise, this project's choice) and the sound settings",
    points=_part("icassp2016"),
    measure=measure,
    plot=plot,
    tables=tables,
    claims=icassp2016_claims,
    description=(
        "Synthetic D=50, K=5 (quick D=10, K=2), 4 sites, delta 0.1 as in Fig. 1(a); COVTYPE (Fig. 1(b)) needs "
        "a download and is not run. Settings: the paper's neighbours and delta (add/remove, delta 0.1) with "
        "this project's analytic Gaussian noise for AG (not the paper's classical formula, which Fig. 1's "
        "epsilons >= 1 would not allow), and the sound settings (replace-one, delta 1e-5; dashed curves), one "
        "verdict per setting. 10 repetitions per epsilon (quick 5), paired sign test per epsilon at alpha "
        "0.05; 'SN outperforms PPM and PPCA' as the paper states it, pooled over the epsilons, with the "
        "verdict at each epsilon beside the pooled one."
    ),
    reproduces=(
        "ICASSP 2016: Fig. 1 (orderings per epsilon beside pooled; paper's neighbours and delta, and sound)",
        "ICASSP 2016: Fig. 2 (vs samples n; paper's neighbours and delta, and sound)",
    ),
)
