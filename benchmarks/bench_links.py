"""Secure sums over the socket transport: TLS 1.3 links vs plaintext links, and party start-up.

For every (d, M), worlds of ``M + 1`` processes (M contributors and a
receiver that does not contribute, as PPPCA's server) are started on
loopback, alternately with TLS links (throw-away credentials) and with
``--insecure`` plaintext links, two worlds of each. In every world the
receiver times ``repeats`` secure sums of d x d float64 arrays with the
``additive`` backend after one untimed sum; before every sum all parties meet
at a barrier of unmetered control frames, and a sum's time is the receiver's
wall time from the barrier to the decoded sum. The ratio is the median TLS
time over the median plaintext time of the same (d, M), timed in the same run.

Start-up: each party records the wall-clock time at which it is ready to send
its first protocol message (after the interpreter start, imports,
rendezvous, link set-up with handshakes and the settings agreement); the
launcher records when it started the process. Medians over all parties.

Target (issue 9): TLS <= 1.25 x plaintext at d = 1000.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

RECEIVER = "receiver"


def worker(args: Any) -> None:
    """One party of a benchmark world (run in its own process)."""
    from protocols.backends import make_backend
    from protocols.runtime.network import agree, open_links, run_role
    from protocols.transport.tls import Credentials

    m, d = args.contributors, args.d
    contributors = tuple(f"c{i}" for i in range(m))
    ranks = {c: i for i, c in enumerate(contributors)} | {RECEIVER: m}
    creds = None if args.tls_dir is None else Credentials.from_dir(args.tls_dir, args.worker)
    channel = open_links(
        args.worker,
        ranks,
        args.master,
        credentials=creds,
        timeout=300,
        connect_timeout=120,
        host_rendezvous=False,
    )
    agree(channel, {"d": d}, 120)
    channel.set_message_cap(8 * d * d + (1 << 20))
    value = None
    if args.worker != RECEIVER:
        value = np.random.default_rng(ranks[args.worker]).normal(scale=10.0, size=(d, d))
    backend = make_backend("additive")

    def barrier() -> None:
        if args.worker == RECEIVER:
            for c in contributors:
                channel.recv_control(c)
            for c in contributors:
                channel.send_control(c, "go")
        else:
            channel.send_control(RECEIVER, "ready")
            channel.recv_control(RECEIVER)

    def role(party: Any) -> dict[str, Any]:
        ready = time.time()
        seconds = []
        for i in range(args.repeats + 1):
            barrier()
            start = time.perf_counter()
            total = backend.secure_sum(party, value, contributors=contributors, receiver=RECEIVER)
            if total is not None:
                if total.shape != (d, d):
                    raise RuntimeError(f"sum has shape {total.shape}, expected {(d, d)}")
                if i > 0:
                    seconds.append(time.perf_counter() - start)
        return {"seconds": seconds, "first_message": ready}

    output, _ = run_role(channel, role)
    args.out.write_text(json.dumps(output))


def run_world(d: int, m: int, repeats: int, secure: bool) -> dict[str, Any]:
    """Start the M + 1 processes of one world; return the receiver's sum times and start-up times."""
    from mpc_pca.deploy.local import child_environment
    from protocols.runtime.launcher import launch, raise_on_failure
    from protocols.transport.rendezvous import INTRODUCER_NAME, Introducer
    from protocols.transport.tls import Credentials, server_context

    names = [f"c{i}" for i in range(m)] + [RECEIVER]
    ranks = {n: i for i, n in enumerate(names)}
    with tempfile.TemporaryDirectory(prefix="bench-links-") as tmp:
        root = Path(tmp)
        ctx = None
        if secure:
            from protocols.transport.certs import write_credentials

            write_credentials([*names, INTRODUCER_NAME], root / "tls", days=1)
            ctx = server_context(Credentials.from_dir(root / "tls", INTRODUCER_NAME))
        introducer = Introducer("127.0.0.1:0", ranks, ctx, 120)
        outputs = {n: root / f"{n}.json" for n in names}
        commands = {}
        for n in names:
            command = [sys.executable, "-m", "benchmarks.bench_transport", "--links-worker", n]
            command += ["--contributors", str(m), "--d", str(d), "--repeats", str(repeats)]
            command += ["--master", f"127.0.0.1:{introducer.port}", "--out", str(outputs[n])]
            if secure:
                command += ["--tls-dir", str(root / "tls")]
            commands[n] = command
        launched = time.time()
        outcomes = launch(commands, timeout=300, env=child_environment())
        raise_on_failure(outcomes)
        parties = {n: json.loads(p.read_text()) for n, p in outputs.items()}
    return {
        "seconds": parties[RECEIVER]["seconds"],
        "startup": [parties[n]["first_message"] - launched for n in names],
    }


def run_point(d: int, m: int, repeats: int, worlds: int = 2) -> dict[str, Any]:
    """TLS and plaintext worlds, alternately; pooled medians and their ratio."""
    pooled: dict[str, dict[str, list[float]]] = {
        mode: {"seconds": [], "startup": []} for mode in ("tls", "plain")
    }
    for _ in range(worlds):
        for mode in ("plain", "tls"):
            world = run_world(d, m, repeats, secure=mode == "tls")
            pooled[mode]["seconds"] += world["seconds"]
            pooled[mode]["startup"] += world["startup"]
    row: dict[str, Any] = {"d": d, "M": m, "repeats_per_world": repeats, "worlds_per_mode": worlds}
    for mode, data in pooled.items():
        row[mode] = {
            "median_seconds": statistics.median(data["seconds"]),
            "min_seconds": min(data["seconds"]),
            "median_startup_seconds": statistics.median(data["startup"]),
        }
    row["tls_over_plain"] = row["tls"]["median_seconds"] / row["plain"]["median_seconds"]
    row["startup_tls_over_plain"] = (
        row["tls"]["median_startup_seconds"] / row["plain"]["median_startup_seconds"]
    )
    return row


def run_all(quick: bool, repeats: int | None) -> dict[str, Any]:
    """Every (d, M) point; the JSON payload."""
    from mpc_pca.studies.machine import describe_machine as machine

    ds = [100, 300] if quick else [100, 300, 1000]
    ms = [2, 3] if quick else [2, 3, 5]
    rows = []
    for d in ds:
        reps = repeats or (3 if quick else {100: 15, 300: 9}.get(d, 5))
        for m in ms:
            row = run_point(d, m, reps, worlds=1 if quick else 2)
            rows.append(row)
            print(
                f"d={d:5d} M={m}  plain {row['plain']['median_seconds'] * 1e3:8.2f} ms  "
                f"TLS {row['tls']['median_seconds'] * 1e3:8.2f} ms  TLS/plain {row['tls_over_plain']:.2f}  "
                f"start-up plain {row['plain']['median_startup_seconds']:.2f} s  "
                f"TLS {row['tls']['median_startup_seconds']:.2f} s",
                flush=True,
            )
    at_1000 = [r["tls_over_plain"] for r in rows if r["d"] == 1000]
    return {
        "benchmark": "secure sum (additive) of d x d float64 arrays, parties as processes over socket links",
        "timing": "receiver wall time from a control-frame barrier to the decoded sum; median over worlds",
        "startup": "wall time from the launcher starting a party's process to the party being ready to "
        "send its first protocol message",
        "machine": machine(),
        "rows": rows,
        "tls_within_1_25x_at_d1000": all(r <= 1.25 for r in at_1000) if at_1000 else None,
    }


__all__ = ["run_all", "run_point", "worker"]
