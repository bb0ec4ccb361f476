"""The network study's report: modelled times, the decomposition, the SS/HE crossover, the socket check.

The records' readers here are shared with the claims (:mod:`mpc_pca.studies.network_claims`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mpc_pca.studies.framework import Record, Table
from mpc_pca.studies.network_model import Decomposition, crossover, decompose, line_crossover
from mpc_pca.studies.network_runs import (
    COLORS,
    EXTRAPOLATED,
    LABELS,
    MODEL_MARGIN,
    PROTOCOLS,
)
from mpc_pca.studies.plotting import legend_outside, pyplot, save
from mpc_pca.studies.verdicts import equivalent

# -- reading the records --------------------------------------------------------------------------------------


def compute_points(records: list[Record]) -> dict[str, Record]:
    """Each protocol's compute point (its run with no network), by protocol."""
    return {r["protocol"]: r for r in records if r["kind"] == "compute"}


def modelled_seconds(record: Record) -> list[float]:
    """A model point's wall seconds over the link model plus its set-up (the time a run would take)."""
    return [s + record["setup_seconds"] for s in record["seconds"]]


def decomposition(compute: Record, rtt: float, bandwidth: float | None) -> Decomposition:
    """The model's terms at ``(rtt, bandwidth)`` for the protocol whose compute point is ``compute``."""
    return decompose(
        float(np.median(compute["seconds"])),
        compute["message_depth"],
        compute["max_bytes_sent"],
        rtt,
        bandwidth,
        compute["setup_rtt"],
    )


def predicted(compute: Record, rtt: float, bandwidth: float | None) -> float:
    """The decomposition's time at ``(rtt, bandwidth)`` of the protocol whose compute point is ``compute``."""
    return decomposition(compute, rtt, bandwidth).total


def model_grid(records: list[Record]) -> dict[tuple[str, float, float], list[float]]:
    """(protocol, rtt, bandwidth) -> modelled seconds: measured, or for :data:`EXTRAPOLATED`, predicted."""
    out = {
        (r["protocol"], r["rtt"], r["bandwidth"]): modelled_seconds(r)
        for r in records
        if r["kind"] == "model"
    }
    computes = compute_points(records)
    networks = {(r["rtt"], r["bandwidth"]) for r in records if r["kind"] == "model"}
    for p, c in computes.items():
        if p not in EXTRAPOLATED:
            continue
        for rtt, bw in networks:
            out.setdefault((p, rtt, bw), [predicted(c, rtt, bw)])
    return out


def _measured(records: list[Record], protocol: str, rtt: float, bw: float) -> bool:
    return any(
        r["kind"] == "model" and (r["protocol"], r["rtt"], r["bandwidth"]) == (protocol, rtt, bw)
        for r in records
    )


def crossovers(
    records: list[Record], a: str = "ss-shares", b: str = "he"
) -> dict[float, tuple[float | None, float | None]]:
    """Per bandwidth: the RTT (s) where ``a`` and ``b`` cross within the measured RTTs, and where their lines meet."""
    grid = model_grid(records)
    out: dict[float, tuple[float | None, float | None]] = {}
    for bw in sorted({k[2] for k in grid}):
        rtts = sorted(k[1] for k in grid if k[0] == a and k[2] == bw and (b, k[1], bw) in grid)
        if len(rtts) < 2:
            continue
        ta = [float(np.median(grid[(a, r, bw)])) for r in rtts]
        tb = [float(np.median(grid[(b, r, bw)])) for r in rtts]
        out[bw] = (crossover(rtts, ta, tb), line_crossover(rtts, ta, tb))
    return out


# -- report -----------------------------------------------------------------------------------------------------


def plot(records: list[Record], out: Path, suffix: str) -> list[Path]:
    """Modelled time vs RTT per protocol, one panel per bandwidth, the SS/HE crossover marked."""
    plt = pyplot()
    grid = model_grid(records)
    bws = sorted({k[2] for k in grid})
    if not bws:
        return []
    cross = crossovers(records)
    fig, axes = plt.subplots(1, len(bws), figsize=(5.2 * len(bws), 4.6), sharey=True, squeeze=False)
    for ax, bw in zip(axes[0], bws, strict=True):
        for p in PROTOCOLS:
            rtts = sorted(k[1] for k in grid if k[0] == p and k[2] == bw)
            if not rtts:
                continue
            ys = [float(np.median(grid[(p, r, bw)])) for r in rtts]
            measured = all(_measured(records, p, r, bw) for r in rtts)
            ax.plot(
                [r * 1e3 for r in rtts],
                ys,
                marker="o" if measured else "x",
                color=COLORS[p],
                linestyle="-" if measured else "--",
                label=LABELS[p]
                + ("" if measured else f" (d = {compute_points(records)[p]['d']}, extrapolated)"),
            )
        inside, line = cross.get(bw, (None, None))
        if inside is not None:
            ax.axvline(inside * 1e3, color="black", linestyle=":", label="SS shares = HE (crossover)")
        ax.set_yscale("log")
        ax.set_xlabel("round-trip time (ms)")
        ax.set_title(
            f"uplink {bw / 1e6:g} Mbit/s"
            + (
                ""
                if inside is not None
                else f"\nSS/HE: no crossover measured{'' if line is None else f'; lines meet at {line * 1e3:.0f} ms'}"
            )
        )
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("wall seconds incl. set-up (median)")
    n, d = records[0]["n"], records[0]["d"]
    fig.suptitle(
        f"Every protocol over modelled links: {n:,} rows x d = {d}, 3 providers + server "
        f"(+ consumer), set-up {records[0]['setup_rtt']:g} RTT"
    )
    legend_outside(fig, list(axes[0]), ncol=2)
    return [save(fig, Path(out) / f"network{suffix}.png")]


#: The secret-sharing protocols set against PPPCA-HE in the crossover table.
SS_VARIANTS = ("ss-shares", "ss-masks", "ss-components", "ss-spectrum")


def _terms(parts: Decomposition) -> list[str]:
    return [f"{x:.3f}" for x in (parts.compute, parts.latency, parts.transmission, parts.setup, parts.total)]


def _traffic_cells(record: Record) -> list[str]:
    return [
        str(record["provider_rounds"]),
        str(record["message_depth"]),
        f"{record['provider_bytes_sent']:,}",
    ]


def tables(records: list[Record]) -> list[Table]:
    """Every point: measured time, rounds, bytes and the decomposition; the socket check; the crossovers."""
    out = [_model_table(_model_rows(records))]
    cross = _crossover_table(records)
    if cross is not None:
        out.append(cross)
    checks = socket_checks(records)
    if checks:
        out.append(_socket_table(checks))
    return out


def _model_rows(records: list[Record]) -> list[list[str]]:
    """The model points beside their decomposition, then the extrapolated protocols' rows at every network."""
    computes = compute_points(records)
    rows = []
    for r in sorted(
        (r for r in records if r["kind"] == "model"), key=lambda r: (r["protocol"], r["bandwidth"], r["rtt"])
    ):
        c = computes.get(r["protocol"])
        measured = float(np.median(modelled_seconds(r)))
        parts = None if c is None else decomposition(c, r["rtt"], r["bandwidth"])
        cells = ["-"] * 6 if parts is None else [*_terms(parts), f"{measured / parts.total:.2f}"]
        rows.append(
            [
                LABELS[r["protocol"]],
                f"{r['rtt'] * 1e3:g}",
                f"{r['bandwidth'] / 1e6:g}",
                f"{measured:.3f}",
                str(len(r["seconds"])),
                *_traffic_cells(r),
                *cells,
            ]
        )
    networks = sorted({(r["bandwidth"], r["rtt"]) for r in records if r["kind"] == "model"})
    for p, c in computes.items():
        if p not in EXTRAPOLATED:
            continue
        for bw, rtt in networks:
            if not _measured(records, p, rtt, bw):
                rows.append(
                    [
                        f"{LABELS[p]} (d = {c['d']}, extrapolated)",
                        f"{rtt * 1e3:g}",
                        f"{bw / 1e6:g}",
                        "-",
                        "0",
                        *_traffic_cells(c),
                        *_terms(decomposition(c, rtt, bw)),
                        "-",
                    ]
                )
    return rows


def _model_table(rows: list[list[str]]) -> Table:
    """The table of :func:`_model_rows`."""
    return Table(
        "Every protocol over modelled links (median wall s incl. set-up) beside the decomposition compute + "
        "depth x RTT/2 + bytes x 8 / bandwidth + set-up",
        [
            "protocol",
            "RTT ms",
            "Mbit/s",
            "measured s",
            "repeats",
            "rounds / provider",
            "message depth",
            "bytes / provider",
            "compute s",
            "depth x RTT/2",
            "bytes / bw",
            "set-up",
            "model s",
            "measured / model",
        ],
        rows,
        note="compute: the protocol's wall time with no network (RTT 0, unlimited bandwidth); rounds and bytes: "
        "the busiest party's; message depth: the longest chain of messages, each sent after the previous one arrived (one-way delays on the critical path); set-up: stated round trips x RTT (threads open no connections). Extrapolated rows "
        "were not run over the model: their time is the decomposition's.",
    )


def _crossover_table(records: list[Record]) -> Table | None:
    """Where each secret-sharing variant and PPPCA-HE cross (``None`` when nothing crosses)."""
    cross_rows = [
        [
            LABELS[variant],
            f"{bw / 1e6:g}",
            "none" if a is None else f"{a * 1e3:.1f} ms",
            "never (x >= 0)" if b is None else f"{b * 1e3:.0f} ms",
        ]
        for variant in SS_VARIANTS
        for bw, (a, b) in sorted(crossovers(records, variant, "he").items())
    ]
    if not cross_rows:
        return None
    return Table(
        "Where each secret-sharing variant and PPPCA-HE cross as the RTT grows",
        [
            "secret sharing",
            "Mbit/s",
            "crossover within the measured RTTs",
            "least-squares lines meet at",
        ],
        cross_rows,
        note="Computed from the medians above by linear interpolation between measured RTTs, and by the "
        "intersection of each protocol's least-squares line of time against RTT (beyond the measured range "
        "an extrapolation). The claim and the plot use PPPCA-SS with additive shares.",
    )


def _socket_table(checks: list[dict[str, Any]]) -> Table:
    """The link model against real sockets (one row per :func:`socket_checks` entry)."""
    return Table(
        "The link model against real sockets: processes over the user-space WAN emulator beside threads "
        "over the model at the same link (100 Mbit/s)",
        [
            "protocol",
            "RTT ms",
            "emulator s",
            "threads s",
            "start-up s (RTT 0)",
            "model s",
            "emulator - model s",
            "relative",
            "set-up measured (RTT)",
            "set-up by the parties' clocks (RTT)",
        ],
        [
            [
                LABELS[c["protocol"]],
                f"{c['rtt'] * 1e3:g}",
                f"{c['emulator']:.3f}",
                f"{c['threads']:.3f}",
                "-" if c["startup"] is None else f"{c['startup']:.3f}",
                f"{c['model']:.3f}",
                f"{c['emulator'] - c['model']:+.3f}",
                f"{(c['emulator'] - c['model']) / c['emulator']:+.1%}",
                "-" if c["setup_rtt_measured"] is None else f"{c['setup_rtt_measured']:.1f}",
                "-" if c["setup_rtt_reported"] is None else f"{c['setup_rtt_reported']:.1f}",
            ]
            for c in checks
        ],
        note="model = threads over the model + stated set-up round trips x RTT + the start-up measured at "
        "RTT 0 (emulator - threads there: process start, certificates, TLS arithmetic; '-' when RTT 0 was "
        "not run, then model = threads + set-up). Set-up measured: ((emulator - threads) at this RTT - "
        "start-up) / RTT, the round trips the real run spends beyond the protocol's messages; by the parties' "
        "clocks: the fewest setup.agreed_seconds over the parties (first dial to settings agreed), median at "
        "this RTT minus median at RTT 0, over RTT.",
    )


def socket_checks(records: list[Record]) -> list[dict[str, Any]]:
    """Every sockets point: emulator and thread medians, the model's time, and the set-up it implies.

    The model of a process run is the threads' time over the link model plus
    the stated set-up round trips x RTT plus the start-up measured at RTT 0
    for the same protocol (emulator - threads there); the verdict compares
    the emulator's repeats with it (margin :data:`MODEL_MARGIN`), at RTT > 0
    when RTT 0 was measured.
    """
    points = [r for r in records if r["kind"] == "sockets"]
    base = {r["protocol"]: r for r in points if r["rtt"] == 0}
    out = []
    for r in sorted(points, key=lambda r: (r["protocol"], r["rtt"])):
        emulator, threads = float(np.median(r["emulator_seconds"])), float(np.median(r["seconds"]))
        zero = base.get(r["protocol"])
        startup = (
            None if zero is None else float(np.median(zero["emulator_seconds"]) - np.median(zero["seconds"]))
        )
        extra = r["setup_seconds"] + (startup or 0.0)
        model = threads + extra
        verdict = None
        if startup is not None and r["rtt"] > 0:
            verdict = equivalent(
                r["emulator_seconds"],
                [s + extra for s in r["seconds"]],
                margin=MODEL_MARGIN / (1 + MODEL_MARGIN),
                seed=28,
            )
        out.append(
            {
                "protocol": r["protocol"],
                "rtt": r["rtt"],
                "emulator": emulator,
                "threads": threads,
                "startup": startup,
                "model": model,
                "verdict": verdict,
                "setup_rtt_measured": None
                if startup is None or r["rtt"] == 0
                else (emulator - threads - startup) / r["rtt"],
                "setup_rtt_reported": _reported_setup_rtt(r, zero),
            }
        )
    return out


def _reported_setup_rtt(record: Record, zero: Record | None) -> float | None:
    """Round trips of set-up by the parties' own clocks: (median at this RTT - median at RTT 0) / RTT."""
    if zero is None or record["rtt"] == 0 or not record.get("emulator_setup_seconds"):
        return None
    if not zero.get("emulator_setup_seconds"):
        return None
    here, base = np.median(record["emulator_setup_seconds"]), np.median(zero["emulator_setup_seconds"])
    return float((here - base) / record["rtt"])
