"""Study ``dsc2018-fig5`` of Wang & Chang (IEEE DSC 2018): DPDPCA's captured variance vs epsilon.

Captured variance vs epsilon, ``delta = 1/N`` (§V-B.3, Fig. 5), with the
paper's sensitivity 1 (with this project's analytic Gaussian noise, not the
paper's classical formula) and this project's sound calibration (the centred
scatter's true sensitivity) in one plot. Figs. 3 and 4, and what the three
share, are in :mod:`mpc_pca.studies.dsc2018`.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from mpc_pca.studies.dsc2018 import _scaled, _seed
from mpc_pca.studies.framework import Claim, Point, Record, Study, Table
from mpc_pca.studies.plotting import errorbar_series, legend_outside, pyplot, save
from mpc_pca.studies.settings import Setting, per_setting
from mpc_pca.studies.verdicts import equivalent

FIG5_CALIBRATIONS = {
    "paper": "paper's sensitivity 1, analytic noise (this project's choice, not the paper's formula)",
    "sensitivity": "sound calibration (true sensitivity)",
}


def fig5_points(quick: bool, options: dict[str, str]) -> list[Point]:
    """One point per epsilon; both calibrations in each."""
    eps = (0.1, 2.0) if quick else (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
    n, d, k = (8_000, 5, 2) if quick else (100_000, 20, 5)
    return [
        {"key": f"epsilon={e:g}", "epsilon": e, "n": n, "d": d, "k": k, "reps": 3 if quick else 10}
        for e in eps
    ]


def fig5_measure(point: Point) -> dict[str, Any]:
    """DPDPCA's captured variance with both calibrations, delta = 1/N, same rows, paired by repetition."""
    from mpc_pca.dp.dpdpca_estimator import DPDPCA
    from mpc_pca.dp.metrics import captured_energy_ratio
    from mpc_pca.studies.dp_utility import synthetic_pool

    X = _scaled(synthetic_pool(point["d"], point["k"], point["n"], seed=5))
    parts = [np.ascontiguousarray(p) for p in np.array_split(X, 4)]
    C = X.T @ X  # the centred scatter (X is centred): captured variance
    delta = 1.0 / point["n"]
    ratios: dict[str, list[float]] = {c: [] for c in FIG5_CALIBRATIONS}
    sigma: dict[str, float] = {}
    for rep in range(point["reps"]):
        seed = _seed(f"{point['key']}/{rep}")
        for cal in FIG5_CALIBRATIONS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # fixed noise seeds; the paper calibration's weaker guarantee
                model = DPDPCA(point["k"], epsilon=point["epsilon"], delta=delta, calibration=cal, key_bits=1024,
                               allow_insecure_key_size=True, random_state=seed).fit(parts)  # fmt: skip
            ratios[cal].append(captured_energy_ratio(C, model.components_))
            sigma[cal] = float(model.noise_sigma_)
    return {"ratios": ratios, "noise_sigma": sigma, "delta": delta}


def fig5_plot(records: list[Record], out: Path, suffix: str) -> list[Path]:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 5))
    series = {
        FIG5_CALIBRATIONS[c]: [(r["epsilon"], r["ratios"][c]) for r in records] for c in FIG5_CALIBRATIONS
    }
    errorbar_series(ax, series, {FIG5_CALIBRATIONS["paper"]: {"color": "tab:orange"},
                                 FIG5_CALIBRATIONS["sensitivity"]: {"color": "tab:blue", "linestyle": "--"}})  # fmt: skip
    ax.set_xscale("log")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("epsilon (delta = 1/N)")
    ax.set_ylabel("captured variance ratio (mean ± sd)")
    ax.set_title(
        f"DSC 2018 Fig. 5: DPDPCA, synthetic N={records[0]['n']}, D={records[0]['d']}, K={records[0]['k']}, 4 owners"
    )
    ax.grid(alpha=0.3, which="both")
    legend_outside(fig, [ax], ncol=2)
    return [save(fig, Path(out) / f"dsc2018-fig5{suffix}.png")]


def fig5_tables(records: list[Record]) -> list[Table]:
    rows = [[f"{r['epsilon']:g}", *[f"{np.mean(r['ratios'][c]):.3f}" for c in FIG5_CALIBRATIONS],
             *[f"{r['noise_sigma'][c]:.3g}" for c in FIG5_CALIBRATIONS]]
            for r in sorted(records, key=lambda r: r["epsilon"])]  # fmt: skip
    return [Table("DSC 2018 Fig. 5: captured variance and noise sigma by calibration",
                  ["epsilon", "q paper", "q sound", "sigma paper", "sigma sound"], rows)]  # fmt: skip


#: DSC 2018 Fig. 5's two calibrations (records' keys "paper" and "sensitivity"), both delta = 1/N.
FIG5_SETTINGS = {
    "paper": Setting("paper", FIG5_CALIBRATIONS["paper"], "replace-one", None, "paper"),
    "sound": Setting("sound", FIG5_CALIBRATIONS["sensitivity"], "replace-one", None, "sensitivity"),
}
FIG5_WHY = (
    "the paper sizes the noise for sensitivity 1, while the centred scatter of unit-norm rows can change by more "
    "under one replaced row, so the sound calibration adds several times more noise and needs a larger epsilon "
    "(or N) to reach the same plateau"
)


def fig5_claims(records: list[Record]) -> list[Claim]:
    """'Almost the same level over the epsilon range', per calibration: smallest vs largest epsilon within 10 %."""
    rs = sorted(records, key=lambda r: r["epsilon"])

    def level(st: Setting) -> Claim:
        if len(rs) < 2:
            return Claim(
                "DSC 2018, Fig. 5", "captured variance almost level over epsilon", None, "need 2 epsilons"
            )
        cal = st.calibration
        v = equivalent(rs[0]["ratios"][cal], rs[-1]["ratios"][cal], margin=0.1, seed=9)
        return Claim("DSC 2018, Fig. 5", f"captured variance stays at almost the same level from eps "
                     f"{rs[0]['epsilon']:g} to {rs[-1]['epsilon']:g}", v.holds,
                     f"{v.evidence}; noise sigma {rs[0]['noise_sigma'][cal]:.3g} at the smallest epsilon")  # fmt: skip

    return per_setting(level, FIG5_SETTINGS, FIG5_WHY)


FIG5_STUDY = Study(
    name="dsc2018-fig5",
    summary="DSC 2018 Fig. 5: DPDPCA captured variance vs epsilon (delta = 1/N), paper calibration and this "
    "project's sound calibration side by side",
    points=fig5_points,
    measure=fig5_measure,
    plot=fig5_plot,
    tables=fig5_tables,
    claims=fig5_claims,
    description=(
        "Synthetic ICASSP 2018-style data with an Aloi/Facebook-like number of rows (100,000 x 20, K=5; quick "
        "8,000 x 5, K=2) in place of Aloi, Facebook and Million Song (downloads), 4 owners, delta = 1/N as in the "
        "paper, the real DPDPCA protocol (1024-bit keys; output independent of the key size), 10 repetitions "
        "(quick 3) paired across calibrations. Verdict: the 90 % bootstrap CI of the ratio of mean captured "
        "variance at the smallest and largest epsilon within a 10 % margin (alpha 0.05 each side)."
    ),
    reproduces=("DSC 2018: Fig. 5 (captured variance vs epsilon, paper and sound calibration)",),
)
