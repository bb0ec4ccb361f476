"""Study ``aaai2020-table3``: PPPCA running time, SS vs HE, 2-4 parties, as processes (AAAI 2020, Table 3).

Liu et al. (AAAI 2020) time PPPCA on Wine Quality (4898 x 11) split over 2, 3
and 4 parties, with secret sharing (Alg. 2) and with Paillier (Alg. 1).
Here every party (providers, server, consumer) is its own process on this
host over TLS links (``launch_local``), on a synthetic table of Wine
Quality's size (the UCI file needs a download; correlated Gaussian columns
with a fixed seed, so every run sees the same rows). Start-up (process
spawn, rendezvous, TLS handshakes) is reported apart from protocol time (the
slowest party's own seconds), so growth with parties is visible.

Measurements come in *rounds*: one point is one round, which runs every
(backend, number of parties) pair once, in an order rotated from round to
round, so that load from other processes on shared cores hits every pair
alike and each round is a paired sweep over the parties.

Verdicts rest on quantities that shared-core load moves far less than
absolute seconds, each against a practical margin so that two runs of the
same size agree (:mod:`mpc_pca.studies.verdicts`):

* HE slower than SS by more than :data:`MARGIN` (10 %): judged first on the
  paper's own Table 3 (HE/SS 3.16 / 2.91 = 1.09 at 2 parties, 3.23 / 3.22 =
  1.00 at 3), where it does not hold, so the paper's numbers do not support
  it (:func:`paper_ratios`); then, labelled as this project's measurement,
  on this implementation: the 90 % bootstrap CI of the ratio of mean
  protocol seconds HE/SS lies above 1 + :data:`MARGIN` at every number of
  parties;
* SS grows with the parties: the median over rounds of the per-party growth
  (slope of log seconds on parties) has its 90 % CI above
  :data:`GROWTH_MARGIN` (the paper's SS column grows 8.4 % per party);
  "NOT reproduced" when the CI lies below it (no growth of that size);
* HE nearly flat (the paper's HE column grows 2.2 % from 2 to 3 parties): the
  same CI inside ``±FLAT_BAND``.

Both margins sit well away from the effects measured here (SS +6 to +10 %
per party, HE +7 to +8 % on 2 cores, where more encrypting processes share
the cores), so that an interval narrower than :data:`RESOLUTION` decides the
same way in every run; a 5 % margin, tried first, lay inside both intervals
and flipped between runs.

The quick size (one round, two party counts) cannot decide these and says
so ("quick size: not decided").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mpc_pca.studies.framework import Claim, Point, Record, Study, Table
from mpc_pca.studies.plotting import errorbar_series, legend_outside, pyplot, save
from mpc_pca.studies.verdicts import ALPHA, flat_within, grows_at_least, ratio_above

#: AAAI 2020 Table 3, seconds on Wine Quality, by number of parties (the HE 4-party cell is missing
#: from the text we have).
PAPER_TABLE3 = {"ss": {2: 2.91, 3: 3.22, 4: 3.42}, "he": {2: 3.16, 3: 3.23}}
#: HE must be slower than SS by more than this fraction for the "HE slower" verdict.
MARGIN = 0.1
#: The minimum effect of "grows with the parties": 2 % more protocol time per added party, well below
#: the paper's SS growth ((3.42 / 2.91) ** (1 / 2) - 1 = 8.4 % per party) and the 6-10 % measured here.
GROWTH_MARGIN = 0.02
#: The band of "nearly flat": within 3 % per added party (holds the paper's HE growth, 2.2 %).
FLAT_BAND = 0.03
#: A growth CI with a half-width above 5 % is too noisy to decide either claim.
RESOLUTION = 0.05
#: Rounds at full size: each runs 3 party counts x 2 backends (6 launches of about 1 s each on idle
#: cores). 36 rounds bring the CI half-width of the per-party growth to about 2-3 % at the
#: round-to-round noise of idle cores, under the 5 % :data:`RESOLUTION`; at 24 rounds the HE interval
#: (+7 %, half-width 3-4 %) still reached into the ±3 % band in one run of two. Shared cores are
#: noisier and then the growth claims say "too noisy to decide"
#: (:func:`mpc_pca.studies.verdicts.grows_at_least`).
ROUNDS = 36
BACKENDS = {"ss": ("pppca-ss", "additive"), "he": ("pppca-he", "paillier")}
LABELS = {"ss": "PPPCA-SS (additive shares, Alg. 2)", "he": "PPPCA-HE (Paillier 2048-bit, Alg. 1)"}
STYLES: dict[str, dict[str, Any]] = {"ss": {"color": "tab:blue"}, "he": {"color": "tab:red"}}
N_COMPONENTS = 5
WHAT = ("wall", "protocol", "startup", "bytes_sent")


def wine_quality_sized(n: int = 4898, d: int = 11, seed: int = 2020) -> np.ndarray:
    """A synthetic table of Wine Quality's shape: correlated Gaussian columns with unequal scales."""
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(d, d)) / np.sqrt(d)
    scales = np.geomspace(100.0, 0.1, d)
    return (rng.normal(size=(n, d)) @ mixing) * scales + rng.normal(size=d) * scales


def points(quick: bool, options: dict[str, str]) -> list[Point]:
    """One point per round; every round runs every (backend, parties) pair once."""
    parties, rounds, rows = ((2, 3), 1, 1000) if quick else ((2, 3, 4), ROUNDS, 4898)
    return [{"key": f"round={i}", "round": i, "parties": list(parties), "rows": rows, "quick": quick}
            for i in range(rounds)]  # fmt: skip


def measure(point: Point) -> dict[str, Any]:
    """Every (backend, parties) pair as processes once, in an order rotated by the round number.

    Returns ``{"runs": {backend: {str(parties): {"wall", "protocol", "startup", "bytes_sent"}}}}``.
    """
    import time

    from mpc_pca.deploy import launch_local

    X = wine_quality_sized(point["rows"])
    pairs = [(b, m) for m in point["parties"] for b in BACKENDS]
    shift = point["round"] % len(pairs)
    runs: dict[str, dict[str, dict[str, float]]] = {b: {} for b in BACKENDS}
    for name, m in pairs[shift:] + pairs[:shift]:
        parts = [np.ascontiguousarray(p) for p in np.array_split(X, m)]
        protocol, backend = BACKENDS[name]
        start = time.perf_counter()
        result = launch_local(
            protocol, parts, {"n_components": N_COMPONENTS, "backend": backend},
            timeout=900, connect_timeout=300,
        )  # fmt: skip
        wall = time.perf_counter() - start
        own = max(r["seconds"] for r in result["report"].values())
        runs[name][str(m)] = {"wall": wall, "protocol": own, "startup": wall - own,
                              "bytes_sent": sum(r["bytes_sent"] for r in result["report"].values())}  # fmt: skip
    return {"runs": runs}


def by_parties(records: list[Record]) -> dict[str, dict[int, dict[str, list[float]]]]:
    """``{backend: {parties: {what: [one value per round, in round order]}}}`` from the round records."""
    out: dict[str, dict[int, dict[str, list[float]]]] = {b: {} for b in BACKENDS}
    for r in sorted(records, key=lambda r: r["round"]):
        for b in BACKENDS:
            for m, run in r["runs"][b].items():
                cell = out[b].setdefault(int(m), {w: [] for w in WHAT})
                for w in WHAT:
                    cell[w].append(float(run[w]))
    return out


def _rounds(records: list[Record], backend: str) -> tuple[list[int], list[list[float]]]:
    """The party counts and, per round that measured all of them, the protocol seconds at each."""
    parties = sorted({int(m) for r in records for m in r["runs"][backend]})
    rounds = [[float(r["runs"][backend][str(m)]["protocol"]) for m in parties]
              for r in sorted(records, key=lambda r: r["round"])
              if all(str(m) in r["runs"][backend] for m in parties)]  # fmt: skip
    return parties, rounds


def plot(records: list[Record], out: Path, suffix: str) -> list[Path]:
    """Protocol seconds (left, with the paper's numbers) and start-up seconds (right) vs parties."""
    plt = pyplot()
    cells = by_parties(records)
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    for ax, what, title in ((axes[0], "protocol", "protocol time (slowest party's own seconds)"),
                            (axes[1], "startup", "start-up (spawn, rendezvous, TLS): wall - protocol")):  # fmt: skip
        series: dict[str, list[tuple[float, Sequence[float]]]] = {
            LABELS[b]: [(float(m), cells[b][m][what]) for m in sorted(cells[b])] for b in BACKENDS
        }
        errorbar_series(ax, series, {LABELS[b]: STYLES[b] for b in BACKENDS})
        if what == "protocol":
            for b in BACKENDS:
                xs = sorted(PAPER_TABLE3[b])
                ax.plot(xs, [PAPER_TABLE3[b][x] for x in xs], linestyle=":", marker="x",
                        color=STYLES[b]["color"], label=f"paper Table 3, {b.upper()} (i7, wall)")  # fmt: skip
        ax.set_xlabel("number of parties (data providers)")
        ax.set_ylabel("seconds (mean ± sd over rounds)")
        ax.set_xticks(sorted({m for b in BACKENDS for m in cells[b]}))
        ax.set_title(title)
        ax.grid(alpha=0.3)
    fig.suptitle(f"AAAI 2020 Table 3 as processes: synthetic {records[0]['rows']} x 11 (Wine Quality's size), "
                 f"k={N_COMPONENTS}, {len(records)} round(s)")  # fmt: skip
    legend_outside(fig, list(axes), ncol=2)
    return [save(fig, Path(out) / f"aaai2020-table3{suffix}.png")]


def tables(records: list[Record]) -> list[Table]:
    """Table 3 beside this run."""
    cells = by_parties(records)
    rows = []
    for m in sorted(set(cells["ss"]) | set(cells["he"])):
        med = {b: {w: float(np.median(cells[b][m][w])) for w in ("protocol", "startup")} for b in BACKENDS}
        paper = [PAPER_TABLE3[b].get(m) for b in BACKENDS]
        paper_ratio = paper_ratios().get(m)
        rows.append([str(m), *["-" if p is None else f"{p:.2f}" for p in paper],
                     "-" if paper_ratio is None else f"{paper_ratio:.2f}",
                     *[f"{med[b][w]:.3f}" for b in BACKENDS for w in ("protocol", "startup")],
                     f"{med['he']['protocol'] / med['ss']['protocol']:.2f}", str(len(cells["ss"][m]["protocol"]))])  # fmt: skip
    return [Table("AAAI 2020 Table 3 (seconds) beside this run (medians over rounds)",
                  ["parties", "paper SS", "paper HE", "paper HE/SS", "SS protocol s", "SS start-up s",
                   "HE protocol s", "HE start-up s", "HE/SS protocol (this run)", "rounds"], rows,
                  note="The paper's seconds are wall times on its machine with its own implementation; compare "
                  "shapes and ratios, not absolute values.")]  # fmt: skip


def _paper_growth(backend: str) -> float:
    paper = PAPER_TABLE3[backend]
    lo, hi = min(paper), max(paper)
    return float((paper[hi] / paper[lo]) ** (1 / (hi - lo)) - 1)


def paper_ratios() -> dict[int, float]:
    """HE/SS seconds of the paper's own Table 3, per number of parties with both cells (2: 1.09, 3: 1.00)."""
    return {m: PAPER_TABLE3["he"][m] / PAPER_TABLE3["ss"][m] for m in sorted(PAPER_TABLE3["he"])}


def paper_numbers_claim(measured: dict[int, float]) -> Claim:
    """ "HE slower than SS by more than :data:`MARGIN`" judged on the paper's own ratios; ours beside, labelled."""
    ratios = paper_ratios()
    holds = all(r > 1 + MARGIN for r in ratios.values())
    ours = ", ".join(f"{r:.2f} at {m} parties" for m, r in sorted(measured.items())) or "not measured"
    return Claim(
        "AAAI 2020, Table 3",
        f"HE takes more time than SS at every number of parties, by more than {MARGIN:.0%}, judged on the "
        "paper's own numbers",
        holds,
        "paper's HE/SS (its Table 3): "
        + ", ".join(f"{r:.2f} at {m} parties" for m, r in ratios.items())
        + f" (the 4-party HE cell is missing); {sum(r > 1 + MARGIN for r in ratios.values())} of "
        f"{len(ratios)} above {1 + MARGIN:g}, so the paper's own numbers {'show' if holds else 'do not show'} it. This project's "
        f"measured HE/SS (ratio of mean protocol seconds, its own implementation): {ours}",
    )


def claims(records: list[Record]) -> list[Claim]:
    """HE slower than SS by > 10 % on the paper's numbers and on ours; SS grows and HE stays flat (margin tests)."""
    src = "AAAI 2020, Table 3"
    if not records:
        return [paper_numbers_claim({}), Claim(f"{src}, this project's measurement", "HE is slower than SS", None,
                                               "not measured")]  # fmt: skip
    cells = by_parties(records)
    both = [m for m in sorted(cells["ss"]) if m in cells["he"]]
    per = {m: ratio_above(cells["he"][m]["protocol"], cells["ss"][m]["protocol"], threshold=1 + MARGIN,
                          alpha=ALPHA, seed=m) for m in both}  # fmt: skip
    measured = {
        m: float(np.mean(cells["he"][m]["protocol"]) / np.mean(cells["ss"][m]["protocol"])) for m in both
    }
    slower: bool | None = (False if any(v.holds is False for v in per.values())
                           else (True if all(v.holds for v in per.values()) else None))  # fmt: skip
    out = [Claim(f"{src}, this project's measurement", f"this project's HE takes more protocol time than its SS "
                 f"at every number of parties, by more than {MARGIN:.0%} (measured here; the paper's own HE/SS "
                 f"are {', '.join(f'{r:.2f}' for r in paper_ratios().values())})",
                 slower, "; ".join(f"{m} parties: {v.evidence}" for m, v in per.items()))]  # fmt: skip
    paper = {b: ", ".join(f"{PAPER_TABLE3[b][m]:.2f}" for m in sorted(PAPER_TABLE3[b])) for b in BACKENDS}
    xs, rounds = _rounds(records, "ss")
    grows = grows_at_least(xs, rounds, margin=GROWTH_MARGIN, alpha=ALPHA, seed=3, resolution=RESOLUTION)
    out.append(Claim(src, f"SS protocol time grows with the number of parties, by at least {GROWTH_MARGIN:.0%} "
                          f"per added party (paper: {paper['ss']} s, {_paper_growth('ss'):+.1%} per party)",
                     grows.holds, f"parties {xs}; {grows.evidence}"))  # fmt: skip
    xs, rounds = _rounds(records, "he")
    flat = flat_within(xs, rounds, margin=FLAT_BAND, alpha=ALPHA, seed=4, resolution=RESOLUTION)
    out.append(Claim(src, f"HE protocol time stays nearly flat in the number of parties, within "
                          f"±{FLAT_BAND:.0%} per added party (paper: {paper['he']} s, "
                          f"{_paper_growth('he'):+.1%} per party)", flat.holds, f"parties {xs}; {flat.evidence}"))  # fmt: skip
    if any(r.get("quick") for r in records):
        why = f"{len(records)} round(s) of {xs} parties; the full size runs {ROUNDS} rounds of 2-4 parties"
        out = [c.at_quick_size(why) for c in out]
    return [paper_numbers_claim(measured), *out]


STUDY = Study(
    name="aaai2020-table3",
    summary="AAAI 2020 Table 3: PPPCA seconds SS vs HE on a Wine Quality-sized table (4898 x 11), 2-4 parties "
    "as processes over TLS, interleaved rounds, start-up apart from protocol time",
    points=points,
    measure=measure,
    plot=plot,
    tables=tables,
    claims=claims,
    description=(
        f"Synthetic 4898 x 11 table (Wine Quality's size; quick 1000 rows, 2-3 parties, 1 round), k={N_COMPONENTS}, "
        f"every party its own process via `launch_local` over TLS 1.3 loopback links, 2048-bit Paillier for HE; "
        f"{ROUNDS} rounds, each running the 6 (backend, parties) pairs once in an order rotated from round to "
        f"round. 'HE slower than SS by more than {MARGIN:.0%}' is judged on the paper's own Table 3 (HE/SS 1.09 "
        f"and 1.00: not shown by the paper's numbers) and, labelled as this project's measurement, on this run. "
        f"Verdicts: 90 % bootstrap CI of HE/SS mean protocol seconds above {1 + MARGIN:g} at every point "
        f"(alpha {ALPHA} one-sided); growth with parties as the median over rounds of the per-party growth of "
        f"protocol seconds (log-linear slope within a round), its 90 % bootstrap CI against a practical margin "
        f"of {GROWTH_MARGIN:.0%} per party for SS (above: grows; below: no growth of that size; across: "
        f"undecided) and an equivalence band of ±{FLAT_BAND:.0%} for HE, each undecided when the CI's half-width "
        f"exceeds {RESOLUTION:.0%}. "
        "Start-up is wall time minus protocol time. `mpc-pca study backends` covers the in-process and "
        "larger-d variants."
    ),
    reproduces=("AAAI 2020: Table 3 (seconds, SS vs HE, 2-4 parties, as processes)",),
)
