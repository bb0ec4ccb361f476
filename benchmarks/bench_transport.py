"""Secure sum of d x d matrices with every party a process over torch.distributed (gloo).

For every (d, M) one world of ``M + 1`` processes is started on loopback: M
contributors and a receiver that does not contribute (PPPCA's server). In that
same world, one after the other, it runs the secure sum with

* ``additive`` (shares mode: M - 1 shares to peers, one partial sum to the receiver),
* ``additive-masks`` (one pairwise-masked array per contributor), and
* ``crypten`` (CrypTen ArithmeticSharedTensor, shares revealed to the receiver only).

Each backend first does one untimed sum (its one-off setup: X25519 key
agreement, CrypTen's sub-group and seed exchange); then ``repeats`` rounds
time one sum of every backend each, in a rotating order. Before every sum all parties meet at a barrier (outside the metered channel);
a sum's time is the receiver's wall time from the barrier until it holds the
decoded sum, which includes encoding, share generation, serialisation,
transfer and decoding. The JSON gives medians and the traffic of one sum.

Target (issue 4): ``additive <= crypten`` at every point.

Secure links (issue 9, :mod:`benchmarks.bench_links`): the same kind of sum
with the ``additive`` backend over the socket transport, TLS 1.3 links vs
plaintext links, and each party's start-up time (process start to its first
protocol message) with and without TLS; written to ``links.json``.

Usage: ``python -m benchmarks.bench_transport [--quick] [--part gloo|links|all]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.output import add_out_argument, output_dir, write_json
from mpc_pca.studies.machine import describe_machine as machine
from mpc_pca.studies.plotting import plot_seconds_by_contributors

BACKENDS = ("additive", "additive-masks", "crypten")
RECEIVER = "receiver"


def worker(name: str, n_contributors: int, d: int, repeats: int, master: str, out: Path) -> None:
    """One party of a benchmark world (run in its own process)."""
    import torch.distributed as dist

    from protocols.backends import make_backend
    from protocols.backends.crypten_compat import import_crypten
    from protocols.runtime.gloo import run_torch_party

    import_crypten()
    contributors = tuple(f"c{i}" for i in range(n_contributors))
    ranks = {c: i for i, c in enumerate(contributors)} | {RECEIVER: n_contributors}
    value = None
    if name != RECEIVER:
        value = np.random.default_rng(ranks[name]).normal(scale=10.0, size=(d, d))

    def one_sum(party: Any, backend: Any) -> tuple[float, int, int]:
        meter = party.channel.meter
        dist.barrier()
        sent, received = meter.bytes_sent, meter.bytes_received
        start = time.perf_counter()
        total = backend.secure_sum(party, value, contributors=contributors, receiver=RECEIVER)
        elapsed = time.perf_counter() - start
        if total is not None and total.shape != (d, d):
            raise RuntimeError(f"sum has shape {total.shape}, expected {(d, d)}")
        return elapsed, meter.bytes_sent - sent, meter.bytes_received - received

    def role(party: Any) -> dict[str, Any]:
        backends = {name: make_backend(name) for name in BACKENDS}
        for backend in backends.values():
            one_sum(party, backend)  # one-off setup (key agreement, CrypTen group and seeds)
        results: dict[str, Any] = {name: {"seconds": []} for name in BACKENDS}
        for i in range(repeats):
            # Rotate the order so that slow phases of a loaded machine hit every backend alike.
            for name in BACKENDS[i % len(BACKENDS) :] + BACKENDS[: i % len(BACKENDS)]:
                elapsed, sent, received = one_sum(party, backends[name])
                results[name]["seconds"].append(elapsed)
                results[name]["bytes_sent"], results[name]["bytes_received"] = sent, received
        return results

    output, _ = run_torch_party(role, name, ranks, master, timeout=300, connect_timeout=120, host_store=False)
    out.write_text(json.dumps(output))


def _worker_command(name: str, m: int, d: int, repeats: int, port: int, out: Path) -> list[str]:
    command = [sys.executable, "-m", "benchmarks.bench_transport", "--worker", name]
    command += ["--contributors", str(m), "--d", str(d), "--repeats", str(repeats)]
    return [*command, "--master", f"127.0.0.1:{port}", "--worker-out", str(out)]


def run_world(d: int, m: int, repeats: int) -> dict[str, Any]:
    """Start the M + 1 processes of one (d, M) point and collect their timings."""
    from mpc_pca.deploy.local import child_environment
    from protocols.runtime.launcher import host_store, launch, raise_on_failure

    names = [f"c{i}" for i in range(m)] + [RECEIVER]
    store, port = host_store(m + 1, 120)
    with tempfile.TemporaryDirectory(prefix="bench-transport-") as tmp:
        outputs = {name: Path(tmp) / f"{name}.json" for name in names}
        commands = {name: _worker_command(name, m, d, repeats, port, outputs[name]) for name in names}
        outcomes = launch(commands, timeout=300, env=child_environment())
        raise_on_failure(outcomes, store)
        parties = {name: json.loads(path.read_text()) for name, path in outputs.items()}
    row: dict[str, Any] = {"d": d, "M": m, "repeats": repeats}
    for backend in BACKENDS:
        receiver = parties[RECEIVER][backend]
        contributor = parties["c0"][backend]
        row[backend] = {
            "median_seconds": statistics.median(receiver["seconds"]),
            "min_seconds": min(receiver["seconds"]),
            "receiver_bytes_received": receiver["bytes_received"],
            "contributor_bytes_sent": contributor["bytes_sent"],
        }
    row["crypten_over_additive"] = row["crypten"]["median_seconds"] / row["additive"]["median_seconds"]
    row["crypten_over_masks"] = row["crypten"]["median_seconds"] / row["additive-masks"]["median_seconds"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="d in {100, 300}, M in {2, 3}, 3 repeats")
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed sums per backend and point (default 31/15/7 by d)"
    )
    parser.add_argument(
        "--part", choices=("gloo", "links", "all"), default="all",
        help="gloo: additive vs masks vs crypten over gloo; links: TLS vs plaintext socket links",
    )  # fmt: skip
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--links-worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--tls-dir", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--contributors", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--d", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--master", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", type=Path, default=None, help=argparse.SUPPRESS)
    add_out_argument(parser)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.contributors, args.d, args.repeats, args.master, args.worker_out)
        return
    folder = output_dir(args.out, args.quick)
    if args.links_worker is not None:
        from benchmarks.bench_links import worker as links_worker

        args.worker = args.links_worker
        links_worker(args)
        return
    if args.part in ("links", "all"):
        from benchmarks.bench_links import run_all

        links = run_all(args.quick, args.repeats)
        print(f"wrote {write_json('links.json', links, folder)}", flush=True)
    if args.part == "links":
        return
    ds = [100, 300] if args.quick else [100, 300, 1000]
    ms = [2, 3] if args.quick else [2, 3, 5]
    rows = []
    for d in ds:
        # Small sums take milliseconds, so more repeats keep their medians steady.
        repeats = args.repeats or (3 if args.quick else {100: 31, 300: 15}.get(d, 7))
        for m in ms:
            row = run_world(d, m, repeats)
            rows.append(row)
            print(
                f"d={d:5d} M={m}  "
                + "  ".join(f"{b} {row[b]['median_seconds'] * 1e3:9.2f} ms" for b in BACKENDS)
                + f"  crypten/additive {row['crypten_over_additive']:.2f}",
                flush=True,
            )
    payload = {
        "benchmark": "secure sum of d x d float64 arrays, parties as processes over torch.distributed (gloo)",
        "timing": "receiver wall time from a common barrier to the decoded sum; median of repeats",
        "machine": machine(),
        "rows": rows,
        "additive_no_slower_than_crypten_everywhere": all(r["crypten_over_additive"] >= 1.0 for r in rows),
        "masks_no_slower_than_crypten_everywhere": all(r["crypten_over_masks"] >= 1.0 for r in rows),
    }
    path = write_json("transport.json" if not args.quick else "transport_quick.json", payload, folder)
    plot_seconds_by_contributors(
        rows,
        {"additive": "b-o", "additive-masks": "r-s", "crypten": "k--^"},
        lambda row, name: row[name]["median_seconds"],
        folder / ("transport.png" if not args.quick else "transport_quick.png"),
        title="M = {m} contributors, gloo processes",
        ylabel="seconds per secure sum (median)",
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
