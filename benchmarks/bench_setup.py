"""Set-up of a process run in round trips, over a WAN emulated in user space (issue 28).

For every M, worlds of ``M + 2`` party processes (M providers, the server,
the consumer; ``mpc_pca.deploy.launch_local``, TLS 1.3) run PPPCA-SS
(additive backend, k = 2, d = 10, ``N_ROWS`` rows per provider) with every
link through a :class:`protocols.testing.wan_emulator.DelayForwarder`, alternately
at RTT 0, at the RTT under study and at three times it (no bandwidth
limit). From each run's reports:

``setup``
    The fewest ``setup.agreed_seconds`` over the parties: from the first
    dial of the party that started last (it waited for nobody at the
    rendezvous) to every link up and the announcements agreed. ``links``
    is the same up to the links (``setup.links_seconds``).
``protocol``
    The longest role wall time over the parties (their reports' ``seconds``).
``run``
    The launcher's wall time, process start-up included.

Each figure is reported in round trips, (median at RTT - median at RTT 0) /
RTT, and as the slope between RTT and 3 RTT (CPU work that the RTT 0 run
waits for, e.g. 18 processes' TLS handshakes on two cores, hides in the
waits of both non-zero RTTs and biases the slope less), against the
set-up's accounting (3 for the rendezvous: TCP, TLS 1.3, registration and
table; 2.5 for the links: TCP, TLS 1.3, HELLO; 0.5 for the announcements;
6 in all, whatever M). The RTTs rotate world by world, so load drifts hit
them alike. Each M is measured in two modes: ``rendezvous`` (the parties
register and receive the address table) and ``static`` (a static address
table, ``launch_local(static_peers=True)`` as ``mpc-pca party --peers``: no
rendezvous, 3 round trips by the accounting). ``--quick``: M = 3, RTT 0 and
50 ms only.
``python -m benchmarks.bench_setup [--quick]`` writes
``benchmarks/results/setup.json`` and ``setup.png``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.output import add_out_argument, output_dir, write_json
from mpc_pca.studies.machine import describe_machine as machine
from mpc_pca.studies.plotting import pyplot

N_ROWS = 200
D = 10
#: The set-up's round trips by the accounting of docs/explanation/links.md.
ACCOUNTING = {"rendezvous": 3.0, "links": 2.5, "announcements": 0.5}
#: The set-up modes measured: with a rendezvous, and with a static address table (no rendezvous).
MODES = ("rendezvous", "static")


def run_world(m: int, rtt: float, seed: int, mode: str = "rendezvous") -> dict[str, float]:
    """One PPPCA-SS run as processes with every link at ``rtt``; set-up, links, protocol and run seconds.

    ``mode``: ``"rendezvous"`` or ``"static"`` (a static address table).
    """
    from mpc_pca.deploy.local import launch_local
    from protocols.testing.wan_emulator import LinkProfile

    rng = np.random.default_rng(seed)
    parts = [rng.standard_normal((N_ROWS, D)) for _ in range(m)]
    start = time.perf_counter()
    result = launch_local(
        "pppca-ss",
        parts,
        {"n_components": 2},
        timeout=600,
        connect_timeout=240,
        link_profile=LinkProfile(rtt),
        static_peers=mode == "static",
    )
    run = time.perf_counter() - start
    reports = result["report"].values()
    return {
        "setup": min(r["setup"]["agreed_seconds"] for r in reports),
        "links": min(r["setup"]["links_seconds"] for r in reports),
        "protocol": max(r["seconds"] for r in reports),
        "run": run,
    }


def run_point(m: int, rtts: tuple[float, ...], worlds: int, mode: str = "rendezvous") -> dict[str, Any]:
    """``worlds`` runs at each of ``rtts`` (0 first), in rotating order; medians and round trips."""
    samples: dict[float, dict[str, list[float]]] = {r: {} for r in rtts}
    for i in range(worlds):
        for r in rtts[i % len(rtts) :] + rtts[: i % len(rtts)]:
            for key, value in run_world(m, r, seed=m, mode=mode).items():
                samples[r].setdefault(key, []).append(value)
    rtt = rtts[1]
    row: dict[str, Any] = {"M": m, "mode": mode, "parties": m + 2, "rtt_seconds": rtt, "worlds": worlds}
    row["runs"] = [
        {
            "rtt_seconds": r,
            **{f"median_{key}_seconds": statistics.median(v) for key, v in samples[r].items()},
            "samples": samples[r],
        }
        for r in rtts
    ]
    median = {run["rtt_seconds"]: run for run in row["runs"]}
    for key in ("setup", "links", "protocol", "run"):
        row[f"{key}_round_trips"] = (
            median[rtt][f"median_{key}_seconds"] - median[0.0][f"median_{key}_seconds"]
        ) / rtt
        if len(rtts) > 2:  # the slope between two non-zero RTTs: CPU work hides in the waits of both
            high = rtts[2]
            row[f"{key}_round_trips_slope"] = (
                median[high][f"median_{key}_seconds"] - median[rtt][f"median_{key}_seconds"]
            ) / (high - rtt)
    return row


def run_all(quick: bool, worlds: int | None = None) -> dict[str, Any]:
    """Every M; the JSON payload."""
    ms = [3] if quick else [3, 8, 16]
    rtts = (0.0, 0.05) if quick else (0.0, 0.1, 0.3)
    run_world(ms[0], 0.0, seed=0)  # untimed: starts the fork server
    rows = []
    for m in ms:
        for mode in MODES:
            row = run_point(m, rtts, worlds or (1 if quick else 3), mode)
            rows.append(row)
            slope = row.get("setup_round_trips_slope")
            print(
                f"{mode:10s} M={m:3d} RTT {1000 * rtts[1]:.0f} ms  set-up {row['setup_round_trips']:5.2f} RTT "
                f"(links {row['links_round_trips']:5.2f})  protocol {row['protocol_round_trips']:5.2f} RTT  "
                f"run {row['run_round_trips']:6.2f} RTT"
                + (
                    ""
                    if slope is None
                    else f"  | slope {1000 * rtts[1]:.0f}-{1000 * rtts[2]:.0f} ms: set-up "
                    f"{slope:5.2f} protocol {row['protocol_round_trips_slope']:5.2f} RTT"
                ),
                flush=True,
            )
    return {
        "benchmark": "set-up of PPPCA-SS (additive, k = 2, d = 10) as M + 2 processes over TLS 1.3, every link "
        "through a user-space WAN emulator (protocols.testing.wan_emulator), in round trips",
        "timing": "setup: fewest setup.agreed_seconds over the parties (the last to start); links: fewest "
        "setup.links_seconds; protocol: longest role seconds; run: the launcher's wall time; "
        "X_round_trips = (median at RTT - median at RTT 0) / RTT; X_round_trips_slope = (median at 3 RTT - "
        "median at RTT) / (2 RTT), which CPU work hidden in the waits does not bias; worlds rotating the RTTs",
        "accounting_round_trips": {**ACCOUNTING, "total": sum(ACCOUNTING.values())},
        "static_accounting_round_trips": ACCOUNTING["links"] + ACCOUNTING["announcements"],
        "rows_per_provider": N_ROWS,
        "d": D,
        "quick": quick,
        "machine": machine(),
        "rows": rows,
    }


def plot(result: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    every = sorted(result["rows"], key=lambda r: r["M"])
    rows = [r for r in every if r.get("mode", "rendezvous") == "rendezvous"]
    static = [r for r in every if r.get("mode") == "static"]
    ms = [r["M"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    top = result["accounting_round_trips"]["total"]
    if static:
        values = [r["setup_round_trips"] for r in static]
        ax.plot([r["M"] for r in static], values, "D-", color="C3", label="set-up, static table (vs RTT 0)")
        top = max(top, *values)
    for key, style, color in (("setup", "o-", "C0"), ("links", "s--", "C1"), ("protocol", "^:", "C2")):
        values = [r[f"{key}_round_trips"] for r in rows]
        ax.plot(ms, values, style, color=color, label=f"{key} (vs RTT 0)")
        top = max(top, *values)
        if all(f"{key}_round_trips_slope" in r for r in rows):
            slopes = [r[f"{key}_round_trips_slope"] for r in rows]
            ax.plot(ms, slopes, style, color=color, alpha=0.4, label=f"{key} (slope RTT to 3 RTT)")
            top = max(top, *slopes)
    ax.axhline(
        result["accounting_round_trips"]["total"], color="grey", lw=0.8, label="set-up by the accounting"
    )
    ax.set_xlabel("M (providers)")
    ax.set_ylabel(f"round trips (RTT {1000 * rows[0]['rtt_seconds']:.0f} ms)")
    ax.set_ylim(0, 1.15 * top)
    ax.set_title("PPPCA-SS over an emulated WAN: set-up vs protocol")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI size: M = 3 at RTT 0 and 50 ms, one world")
    parser.add_argument("--worlds", type=int, default=None, help="worlds per RTT and M (default 3)")
    add_out_argument(parser)
    args = parser.parse_args()
    if args.worlds is not None and args.worlds < 1:
        parser.error(f"--worlds must be at least 1, got {args.worlds}")
    folder = output_dir(args.out, args.quick)
    result = run_all(args.quick, args.worlds)
    path = write_json("setup.json", result, folder)
    plot(result, folder / "setup.png")
    print(f"wrote {path} and setup.png")


if __name__ == "__main__":
    main()
