"""Study ``dpdpca-runtime``: DPDPCA time vs number of data owners (Wang & Chang, DSC 2018, Fig. 3).

DPDPCA (Paillier shares of ``R``, ``v``, ``N`` aggregated by a proxy that adds
Gaussian noise) against the paper's "PrivateLocalPCA" baseline (the earlier
work it compares with: owners in a chain, each computing a DP local PCA of its
own rows stacked on the previous owner's private rank-K summary and handing it
on; the hand-over simulated through file I/O as the paper does). Both at
epsilon = 0.3 (the paper's Fig. 3), with the captured energy of each output.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from mpc_pca.studies.framework import Claim, Point, Record, Study, Table
from mpc_pca.studies.plotting import errorbar_series, legend_outside, pyplot, save

EPSILON = 0.3
DELTA = 1e-5
N_FEATURES = 20
N_COMPONENTS = 5
ROWS_PER_OWNER = 500


def points(quick: bool, options: dict[str, str]) -> list[Point]:
    """One point per number of owners."""
    owners = (2, 4) if quick else (2, 4, 8, 16)
    return [{"key": f"owners={m}", "owners": m, "repeats": 1} for m in owners]


def _data(owners: int) -> list[np.ndarray]:
    from mpc_pca.dp.preprocessing import center_and_scale_non_private
    from mpc_pca.studies.dp_utility import synthetic_pool

    X = center_and_scale_non_private(
        synthetic_pool(N_FEATURES, N_COMPONENTS, owners * ROWS_PER_OWNER, seed=3)
    )
    return [np.ascontiguousarray(p) for p in np.array_split(X, owners)]


def private_local_chain(
    parts: list[np.ndarray], k: int, epsilon: float, delta: float, rng: np.random.Generator, workdir: Path
) -> tuple[np.ndarray, list[float]]:
    """The sequential baseline: each owner's DP PCA of [previous summary; own rows], passed on by file.

    Owner ``l`` perturbs ``A_l = M_l^T M_l / N_l`` (``M_l`` its rows under the
    previous owner's ``K x D`` summary ``diag(sqrt(lambda)) V^T``) with a
    symmetric Gaussian matrix of scale ``sqrt(2 ln(1.25/delta)) / (N_l epsilon)``
    (Analyze Gauss), keeps the top ``K`` eigenpairs and writes its summary to a
    file the next owner reads. Returns the last owner's components and every
    owner's step time.
    """
    summary: np.ndarray | None = None
    steps = []
    components = np.empty((k, parts[0].shape[1]))
    for i, X in enumerate(parts):
        start = time.perf_counter()
        M = X if summary is None else np.vstack([summary, X])
        d = X.shape[1]
        sigma = math.sqrt(2 * math.log(1.25 / delta)) / (X.shape[0] * epsilon)
        upper = np.triu(rng.normal(scale=sigma, size=(d, d)))
        A = M.T @ M / X.shape[0] + upper + np.triu(upper, 1).T
        values, vectors = np.linalg.eigh(A)
        top = np.argsort(values)[::-1][:k]
        components = vectors[:, top].T
        path = workdir / f"owner{i}.npy"
        np.save(path, (vectors[:, top] * np.sqrt(np.maximum(values[top], 0.0))).T)
        summary = np.load(path)
        steps.append(time.perf_counter() - start)
    return components, steps


def measure(point: Point) -> dict[str, Any]:
    """Time DPDPCA (2048-bit Paillier, owners as threads) and the chain; record captured energy."""
    from mpc_pca.dp.dpdpca_estimator import DPDPCA
    from mpc_pca.dp.metrics import captured_energy_ratio, second_moment

    parts = _data(point["owners"])
    A = second_moment(parts)
    out: dict[str, Any] = {"dpdpca_seconds": [], "chain_seconds": [], "chain_step_seconds": []}
    for rep in range(point["repeats"]):
        start = time.perf_counter()
        model = DPDPCA(N_COMPONENTS, epsilon=EPSILON, delta=DELTA, key_bits=2048, random_state=rep).fit(parts)
        out["dpdpca_seconds"].append(time.perf_counter() - start)
        out["dpdpca_roles"] = {
            role: {"seconds": rep_["seconds"], "bytes_sent": rep_["bytes_sent"]}
            for role, rep_ in model.report_.items()
        }
        out["dpdpca_energy"] = captured_energy_ratio(A, model.components_)
        with tempfile.TemporaryDirectory(prefix="mpc-pca-chain-") as tmp:
            start = time.perf_counter()
            comps, steps = private_local_chain(
                parts, N_COMPONENTS, EPSILON, DELTA, np.random.default_rng(rep), Path(tmp)
            )
            out["chain_seconds"].append(time.perf_counter() - start)
        out["chain_step_seconds"] = steps
        out["chain_energy"] = captured_energy_ratio(A, comps)
    return out


def plot(records: list[Record], out: Any, suffix: str) -> list[Any]:
    """Wall time vs owners (left), DPDPCA's time (middle) and bytes sent (right) per role."""
    plt = pyplot()
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(16, 5))
    dp_label = "DPDPCA (2048-bit Paillier, owners as threads)"
    chain_label = "PrivateLocalPCA chain (sequential, file hand-over)"
    errorbar_series(
        left,
        {
            dp_label: [(r["owners"], r["dpdpca_seconds"]) for r in records],
            chain_label: [(r["owners"], r["chain_seconds"]) for r in records],
        },
        {dp_label: {"color": "tab:blue"}, chain_label: {"color": "tab:gray", "linestyle": "--"}},
    )
    left.set_yscale("log")
    left.set_ylabel("protocol wall time (s, mean ± sd)")
    left.set_title(
        f"Wang & Chang Fig. 3: time vs owners\n(eps={EPSILON}, D={N_FEATURES}, {ROWS_PER_OWNER} rows/owner)"
    )
    seconds: dict[str, list] = {}
    sent: dict[str, list] = {}
    for r in records:
        groups: dict[str, tuple[float, float]] = {}
        for role, v in r["dpdpca_roles"].items():
            kind = "owner (slowest / largest)" if role.startswith("owner") else role
            old = groups.get(kind, (0.0, 0.0))
            groups[kind] = (max(old[0], v["seconds"]), max(old[1], v["bytes_sent"]))
        for kind, (secs, nbytes) in groups.items():
            seconds.setdefault(f"DPDPCA {kind}", []).append((r["owners"], [secs]))
            sent.setdefault(f"DPDPCA {kind}", []).append((r["owners"], [nbytes / 1024]))
    palette = ("tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")
    styles: dict[str, dict[str, Any]] = {
        label: {"color": palette[i % len(palette)]} for i, label in enumerate(sorted(seconds))
    }
    for label in styles:  # owners and proxy send about the same bytes: keep both lines visible
        if "owner" in label:
            styles[label].update(linestyle="--", marker="s", markersize=7, markerfacecolor="none")
    errorbar_series(middle, seconds, styles)
    middle.set_ylabel("seconds the role was busy (s)")
    middle.set_title("DPDPCA time per role")
    errorbar_series(right, sent, styles)
    right.set_ylabel("bytes sent by the role (KiB)")
    right.set_title("DPDPCA bytes sent per role")
    owners = sorted({r["owners"] for r in records})
    for ax in (left, middle, right):
        ax.set_xlabel("number of data owners")
        ax.set_xticks(owners)
        ax.grid(alpha=0.3, which="both")
    legend_outside(fig, [left, middle, right], ncol=3)
    return [save(fig, Path(out) / f"dpdpca-runtime{suffix}.png")]


def tables(records: list[Record]) -> list[Table]:
    rows = [
        [
            str(r["owners"]),
            f"{np.median(r['dpdpca_seconds']):.2f}",
            f"{np.median(r['chain_seconds']):.4f}",
            f"{r['dpdpca_energy']:.3f}",
            f"{r['chain_energy']:.3f}",
        ]
        for r in sorted(records, key=lambda r: r["owners"])
    ]
    return [
        Table(
            f"DPDPCA vs PrivateLocalPCA (eps={EPSILON}, delta={DELTA})",
            ["owners", "DPDPCA s", "chain s", "DPDPCA q/q_o", "chain q/q_o"],
            rows,
            note="The paper's Fig. 3 (i7-5820K, python-paillier) is a plot without a table; its shape is what "
            "the claims below test.",
        )
    ]


def claims(records: list[Record]) -> list[Claim]:
    if len(records) < 2:
        return [
            Claim(
                "Wang & Chang 2018, Fig. 3",
                "DPDPCA is faster than PrivateLocalPCA",
                None,
                "need 2 owner counts",
            )
        ]
    rs = sorted(records, key=lambda r: r["owners"])
    lo, hi = rs[0], rs[-1]
    faster = [r["owners"] for r in rs if np.median(r["dpdpca_seconds"]) < np.median(r["chain_seconds"])]
    growth_dp = np.median(hi["dpdpca_seconds"]) / np.median(lo["dpdpca_seconds"])
    growth_ch = np.median(hi["chain_seconds"]) / np.median(lo["chain_seconds"])
    ratio = hi["owners"] / lo["owners"]
    return [
        Claim(
            "Wang & Chang 2018, Fig. 3",
            "DPDPCA takes less time than PrivateLocalPCA for the same number of owners",
            len(faster) == len(rs),
            f"DPDPCA faster at owners {faster} of {[r['owners'] for r in rs]}; the chain here is plain numpy "
            "with a local file hand-over, DPDPCA does 2048-bit Paillier work",
        ),
        Claim(
            "Wang & Chang 2018, Fig. 3",
            "DPDPCA's time grows more slowly than linearly in the number of owners (log-linear)",
            growth_dp < ratio,
            f"owners x{ratio:.0f}: DPDPCA time x{growth_dp:.2f}, chain time x{growth_ch:.2f}",
        ),
        Claim(
            "Wang & Chang 2018, §V",
            "DPDPCA captures more energy than PrivateLocalPCA",
            all(r["dpdpca_energy"] > r["chain_energy"] for r in rs),
            ", ".join(
                f"{r['owners']} owners: {r['dpdpca_energy']:.3f} vs {r['chain_energy']:.3f}" for r in rs
            ),
        ),
    ]


STUDY = Study(
    name="dpdpca-runtime",
    summary="DPDPCA wall time and captured energy vs number of owners, against the sequential PrivateLocalPCA "
    "chain (Wang & Chang 2018, Fig. 3)",
    points=points,
    measure=measure,
    plot=plot,
    tables=tables,
    claims=claims,
    description=(
        f"Synthetic data (D={N_FEATURES}, K={N_COMPONENTS}, {ROWS_PER_OWNER} rows per owner), epsilon={EPSILON}, "
        f"delta={DELTA}, replace-one neighbours. DPDPCA runs in-process (owners, proxy and user as threads; "
        "Python threads share one interpreter, so owners' encryptions do not run in parallel as on the paper's "
        "separate machines). Key generation by the user is included."
    ),
)
