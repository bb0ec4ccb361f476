"""Study ``backends``: PPPCA wall time and bytes per role, secret sharing vs Paillier vs CrypTen.

Reproduces AAAI 2020 (Liu et al.) Table 3 (PPPCA running time vs number of
parties on Wine, SS vs HE) and extends it to d = 100 and 300 and up to 10
parties. Every point times, in the same run and interleaved, PPPCA with each
secure-sum backend and scikit-learn's PCA on the pooled rows (the floor: what
PCA costs with no privacy at all).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mpc_pca.studies.framework import Claim, Point, Record, Study, Table
from mpc_pca.studies.plotting import errorbar_series, legend_outside, mean_and_error, pyplot, save
from mpc_pca.studies.timing import interleaved_seconds, traffic_by_role
from mpc_pca.studies.verdicts import ratio_above

KEY_BITS = 2048
N_COMPONENTS = 5
#: AAAI 2020 Table 3, seconds on Wine, by number of parties (the HE row's third cell is missing
#: from the text we have).
PAPER_TABLE3 = {"ss": {2: 2.91, 3: 3.22, 4: 3.42}, "he": {2: 3.16, 3: 3.23}}

LABELS = {
    "sklearn": "scikit-learn PCA on pooled rows (floor, no privacy)",
    "ss_shares": "PPPCA-SS: additive shares (Alg. 2)",
    "ss_masks": "PPPCA-SS: pairwise masks",
    "he_default": f"PPPCA-HE: Paillier {KEY_BITS}-bit, defaults (Alg. 1)",
    "he_precompute": "PPPCA-HE: Paillier, precomputed randomness",
    "he_workers2": "PPPCA-HE: Paillier, 2 worker processes",
    "crypten": "PPPCA with CrypTen shares (processes only)",
}
COLORS = {
    "sklearn": "black",
    "ss_shares": "tab:blue",
    "ss_masks": "tab:cyan",
    "he_default": "tab:red",
    "he_precompute": "tab:orange",
    "he_workers2": "tab:purple",
    "crypten": "tab:green",
}
#: process-transport backend names
PROCESS_BACKENDS = {
    "ss_shares": "additive",
    "ss_masks": "additive-masks",
    "he_default": "paillier",
    "crypten": "crypten",
}


def _grid(quick: bool, options: dict[str, str]) -> list[Point]:
    points: list[Point] = []
    all_inproc = ["ss_shares", "ss_masks", "he_default", "he_precompute", "he_workers2"]
    if quick:  # a smoke test: the Paillier variants and M = 4 only at full size
        for m in (2, 3):
            points.append(
                {"transport": "inprocess", "d": 13, "M": m, "methods": all_inproc[:3], "repeats": 2}
            )
        points.append({"transport": "processes", "d": 13, "M": 2, "methods": ["ss_shares"], "repeats": 1})
    else:
        for m in (2, 3, 4, 6, 8, 10):
            points.append({"transport": "inprocess", "d": 13, "M": m, "methods": all_inproc, "repeats": 5})
        for m in (2, 4, 10):
            he = ["he_default", "he_precompute", "he_workers2"] if m <= 4 else ["he_precompute"]
            points.append(
                {
                    "transport": "inprocess",
                    "d": 100,
                    "M": m,
                    "methods": ["ss_shares", "ss_masks", *he],
                    "repeats": 2,
                }
            )
        for m in (2, 4):
            he = ["he_default", "he_precompute"] if m == 2 else ["he_precompute"]
            points.append(
                {
                    "transport": "inprocess",
                    "d": 300,
                    "M": m,
                    "methods": ["ss_shares", "ss_masks", *he],
                    "repeats": 1,
                }
            )
        for m in (2, 3, 4):
            points.append(
                {"transport": "processes", "d": 13, "M": m, "methods": list(PROCESS_BACKENDS), "repeats": 1}
            )
        points.append(
            {"transport": "processes", "d": 13, "M": 10, "methods": ["ss_shares", "crypten"], "repeats": 1}
        )
    for p in points:
        p["key"] = f"{p['transport']}/d={p['d']}/M={p['M']}"
    return points


def _data(d: int) -> tuple[np.ndarray, str]:
    if d == 13:
        from sklearn.datasets import load_wine

        return np.asarray(
            load_wine().data, dtype=np.float64
        ), "scikit-learn Wine 178x13 (paper: Wine Quality)"
    rng = np.random.default_rng(d)
    X = rng.normal(size=(3000, d)) @ rng.normal(size=(d, d)) / np.sqrt(d)
    return X, f"synthetic 3000x{d} (correlated Gaussian, seed {d})"


def _inprocess_backend(method: str) -> Any:
    from protocols.backends import make_backend

    return {
        "ss_shares": lambda: make_backend("additive"),
        "ss_masks": lambda: make_backend("additive-masks"),
        "he_default": lambda: make_backend("paillier", key_bits=KEY_BITS),
        "he_precompute": lambda: make_backend("paillier", key_bits=KEY_BITS, precompute=True),
        "he_workers2": lambda: make_backend("paillier", key_bits=KEY_BITS, workers=2),
    }[method]()


def measure(point: Point) -> dict[str, Any]:
    """Time PPPCA with each method of ``point`` and scikit-learn's PCA, interleaved."""
    from sklearn.decomposition import PCA

    from mpc_pca.pppca import PPPCA

    X, data_name = _data(point["d"])
    parts = [np.ascontiguousarray(p) for p in np.array_split(X, point["M"])]
    k = min(N_COMPONENTS, point["d"])
    reports: dict[str, Any] = {}
    components: dict[str, np.ndarray] = {}

    def inproc(method: str):
        def run() -> None:
            model = PPPCA(k, backend=_inprocess_backend(method), timeout=900).fit(parts)
            reports[method] = model.report_
            components[method] = model.components_

        return run

    def proc(method: str):
        from mpc_pca.deploy import launch_local
        from protocols.backends import backend_class

        def run() -> None:
            # TLS links between the processes (throw-away credentials); CrypTen's gloo cannot be wrapped
            backend = PROCESS_BACKENDS[method]
            result = launch_local(
                "pppca-he" if backend == "paillier" else "pppca-ss",
                parts,
                {"n_components": k, "backend": backend},
                timeout=900,
                connect_timeout=300,
                insecure=backend_class(backend).runs_over_gloo,  # gloo cannot be wrapped in TLS
            )
            reports[method] = result["report"]
            components[method] = np.asarray(result["components"])

        return run

    def floor() -> None:
        components["sklearn"] = PCA(k, svd_solver="covariance_eigh").fit(X).components_

    runs = {"sklearn": floor}
    for method in point["methods"]:
        runs[method] = inproc(method) if point["transport"] == "inprocess" else proc(method)
    floor()  # warm-up (BLAS threads)
    start = time.perf_counter()
    seconds = interleaved_seconds(
        runs, {name: (max(point["repeats"], 5) if name == "sklearn" else point["repeats"]) for name in runs}
    )
    ref = components["sklearn"]
    agreement = {
        m: float(np.max(np.abs(np.abs(np.sum(c * ref, axis=1)) - 1.0)))
        for m, c in components.items()
        if m != "sklearn"
    }
    return {
        "data": data_name,
        "n_samples": int(X.shape[0]),
        "n_components": k,
        "seconds": seconds,
        "traffic": {m: traffic_by_role(r) for m, r in reports.items()},
        "max_component_cosine_gap_vs_sklearn": agreement,
        "measure_seconds": time.perf_counter() - start,
    }


def _select(records: list[Record], transport: str, d: int) -> list[Record]:
    return sorted((r for r in records if r["transport"] == transport and r["d"] == d), key=lambda r: r["M"])


def _median(values: list[float]) -> float:
    return float(np.median(values))


def plot(records: list[Record], out: Any, suffix: str) -> list[Any]:
    """Time and bytes vs parties: one figure for in-process runs, one for process runs."""
    from pathlib import Path

    plt = pyplot()
    paths = []
    for transport, title in (
        ("inprocess", "parties as threads in one process (crypto and encoding cost only)"),
        ("processes", "every party its own process over TLS links (start-up included)"),
    ):
        ds = sorted({r["d"] for r in records if r["transport"] == transport})
        if not ds:
            continue
        fig, axes = plt.subplots(2, len(ds), figsize=(max(5.5 * len(ds), 11), 8.5), squeeze=False)
        for col, d in enumerate(ds):
            rows = _select(records, transport, d)
            series: dict[str, list] = {}
            traffic: dict[str, list] = {}
            for r in rows:
                for method, secs in r["seconds"].items():
                    series.setdefault(LABELS[method], []).append((r["M"], secs))
                for method, roles in r["traffic"].items():
                    traffic.setdefault(LABELS[method], []).append(
                        (r["M"], [roles["provider"]["bytes_sent"] / 1e3])
                    )
            styles = {
                LABELS[m]: {"color": c, "linestyle": "--" if m == "sklearn" else "-"}
                for m, c in COLORS.items()
            }
            ax = axes[0][col]
            errorbar_series(ax, series, styles)
            ax.set_yscale("log")
            ms = sorted({r["M"] for r in rows})
            ax.set_xticks(ms)
            ax2 = axes[1][col]
            ax2.set_xticks(ms)
            ax.set_xlabel("number of data providers M")
            ax.set_ylabel("PPPCA fit wall time (s, mean ± sd)")
            ax.set_title(f"Wall time, d = {d} features\n{rows[0]['data'] if rows else ''}")
            ax.grid(alpha=0.3, which="both")
            errorbar_series(ax2, traffic, styles)
            ax2.set_yscale("log")
            ax2.set_xlabel("number of data providers M")
            ax2.set_ylabel("kB sent by each provider")
            ax2.set_title(
                f"Bytes each provider sends, d = {d} (the Paillier variants send identical bytes: one line)"
            )
            ax2.grid(alpha=0.3, which="both")
        fig.suptitle(f"PPPCA fit time and traffic by secure-sum backend\n{title}")
        legend_outside(fig, [a for row in axes for a in row], ncol=2)
        paths.append(save(fig, Path(out) / f"backends{suffix}_{transport}.png"))
    return paths


def _row_median(records: list[Record], transport: str, d: int, m: int, method: str) -> float | None:
    for r in records:
        if r["transport"] == transport and r["d"] == d and r["M"] == m and method in r["seconds"]:
            return _median(r["seconds"][method])
    return None


def _protocol_seconds(records: list[Record], d: int, m: int, method: str) -> float | None:
    for r in records:
        if r["transport"] == "processes" and r["d"] == d and r["M"] == m and method in r["traffic"]:
            return max(v["seconds"] for v in r["traffic"][method].values())
    return None


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def tables(records: list[Record]) -> list[Table]:
    """Table 3 beside ours, and every point's medians with ratios to the floor."""
    out = []
    t3 = []
    for m in (2, 3, 4):
        ss_in = _row_median(records, "inprocess", 13, m, "ss_shares")
        he_in = _row_median(records, "inprocess", 13, m, "he_default")
        ss_pr = _row_median(records, "processes", 13, m, "ss_shares")
        he_pr = _row_median(records, "processes", 13, m, "he_default")
        t3.append(
            [
                str(m),
                _fmt(PAPER_TABLE3["ss"].get(m), ".2f"),
                _fmt(PAPER_TABLE3["he"].get(m), ".2f"),
                _fmt(ss_in, ".4f"),
                _fmt(he_in, ".4f"),
                _fmt(he_in / ss_in if ss_in and he_in else None, ".1f"),
                _fmt(ss_pr, ".2f"),
                _fmt(he_pr, ".2f"),
                _fmt(he_pr / ss_pr if ss_pr and he_pr else None, ".2f"),
                _fmt(_protocol_seconds(records, 13, m, "ss_shares"), ".3f"),
                _fmt(_protocol_seconds(records, 13, m, "he_default"), ".3f"),
            ]
        )
    out.append(
        Table(
            "AAAI 2020 Table 3 (seconds, Wine) beside this run (medians; d = 13)",
            [
                "parties",
                "paper SS",
                "paper HE",
                "ours SS in-process",
                "ours HE in-process",
                "HE/SS in-process",
                "ours SS processes (wall)",
                "ours HE processes (wall)",
                "HE/SS processes",
                "SS protocol s (processes)",
                "HE protocol s (processes)",
            ],
            t3,
            note=(
                "Why the ratios differ: the paper's SS and HE times are within 10 % of each other and around 3 s "
                "for a 13-feature covariance, so they are dominated by fixed costs (process and framework start-up, "
                "network set-up), not by the cryptography. In-process, those fixed costs vanish and what is left is "
                "the cryptography itself: encrypting d(d+3)/2 fixed-point values under 2048-bit Paillier costs "
                "milliseconds per ciphertext while secret sharing costs microseconds, so HE/SS is large. As "
                "processes, each run again pays seconds of interpreter and torch start-up per party, and HE/SS "
                "returns towards 1 as in the paper. The paper's HE row has only two cells in the text available "
                "to us (M = 4 missing)."
            ),
        )
    )
    rows = []
    for r in sorted(records, key=lambda r: (r["transport"], r["d"], r["M"])):
        floor = _median(r["seconds"]["sklearn"])
        for method, secs in r["seconds"].items():
            if method == "sklearn":
                continue
            _, sd = mean_and_error(secs)
            tr = r["traffic"].get(method, {})
            rows.append(
                [
                    r["transport"],
                    str(r["d"]),
                    str(r["M"]),
                    LABELS[method],
                    f"{_median(secs):.4f}",
                    f"{sd:.4f}",
                    str(len(secs)),
                    f"{_median(secs) / floor:.1f}",
                    f"{tr.get('provider', {}).get('bytes_sent', float('nan')):,.0f}",
                    f"{tr.get('server', {}).get('bytes_sent', float('nan')):,.0f}",
                    f"{tr.get('server', {}).get('bytes_received', float('nan')):,.0f}",
                    f"{r['max_component_cosine_gap_vs_sklearn'].get(method, float('nan')):.1e}",
                ]
            )
    out.append(
        Table(
            "Every point: median wall seconds, ratio to the scikit-learn floor timed in the same point, bytes per role",
            [
                "transport",
                "d",
                "M",
                "method",
                "median s",
                "sd s",
                "repeats",
                "x floor",
                "B sent / provider",
                "B sent by server",
                "B received by server",
                "max |1-|cos|| vs sklearn",
            ],
            rows,
        )
    )
    return out


def claims(records: list[Record]) -> list[Claim]:
    """HE slower than SS (ratio CI of interleaved repeats), and that every backend is exact."""
    out = []
    rows = _select(records, "inprocess", 13)
    per = {
        r["M"]: ratio_above(r["seconds"]["he_default"], r["seconds"]["ss_shares"], threshold=1.1, seed=r["M"])
        for r in rows
        if "he_default" in r["seconds"] and "ss_shares" in r["seconds"]
    }
    slower: bool | None = None
    if per:
        slower = (
            False
            if any(v.holds is False for v in per.values())
            else (True if all(v.holds for v in per.values()) else None)
        )
    out.append(
        Claim(
            "AAAI 2020, Table 3",
            "HE (Paillier) takes longer than SS at every number of parties, by more than 10 % (in-process, "
            "d = 13; the process-based Table 3 is the aaai2020-table3 study)",
            slower,
            "; ".join(f"M={m}: {v.evidence}" for m, v in per.items()) or "needs in-process d = 13 points",
        )
    )
    gaps = [g for r in records for g in r["max_component_cosine_gap_vs_sklearn"].values()]
    if gaps:
        worst = max(gaps)
        out.append(
            Claim(
                "AAAI 2020, §Q1 (lossless)",
                "every backend returns the components of plaintext PCA (|cos| to scikit-learn's within 1e-6)",
                worst < 1e-6,
                f"largest 1 - |cos| over all points and backends {worst:.1e}",
            )
        )
    return out


STUDY = Study(
    name="backends",
    summary="PPPCA time and bytes per role: additive shares/masks vs Paillier (default, precompute, "
    "2 workers) vs CrypTen, in-process and as processes, vs parties and d; scikit-learn floor; AAAI 2020 Table 3",
    points=_grid,
    measure=measure,
    plot=plot,
    tables=tables,
    claims=claims,
    description=(
        "d = 13: scikit-learn's Wine (178 x 13), the bundled stand-in for the paper's Wine Quality; d = 100, 300: "
        f"synthetic 3000 x d. k = {N_COMPONENTS}. In-process: providers, server and consumer as threads, "
        "Paillier key generation included in every HE fit. Processes: `launch_local`, every party a Python "
        "process on loopback over TLS 1.3 socket links (CrypTen: plain gloo, insecure=True); wall time includes "
        "interpreter start-up and the throw-away certificates, protocol "
        "seconds are the slowest party's own clock. CrypTen needs processes, so it appears only there; Paillier "
        "precompute/workers options are in-process only (the process launcher takes backend names). Each point "
        "interleaves its variants so machine load hits them alike."
    ),
    reproduces=("AAAI 2020: Table 3 (in-process and larger d; extension)",),
)
