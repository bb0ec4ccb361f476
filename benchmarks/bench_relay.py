"""PPPCA-SS through a relay vs direct links: wall time on loopback (issue 26).

For every (d, M), worlds of ``M + 2`` party processes (M providers, the
server, the consumer; children of the preloaded fork server, as
``mpc_pca.deploy.launch_local`` starts them) run PPPCA-SS (additive backend,
k = 2) on ``N_ROWS`` rows of d standard normal columns per provider,
alternately with direct TLS 1.3 links (the launcher hosts the rendezvous)
and through a relay (:class:`protocols.transport.relay.RelayServer`, in the
launcher's process: every party dials out to it and each pair runs its own
TLS 1.3 session inside). Two figures per world:

``protocol_seconds``
    The server's role wall time (its report's ``seconds``: links up to its
    result), the cost of relaying the protocol's traffic.
``run_seconds``
    The launcher's wall time from starting the processes to the last one
    ending: adds the rendezvous and the links' set-up (through the relay:
    one connection per party, then a TLS handshake per pair inside it).

One untimed world per mode starts the fork server first. Modes alternate
world by world (direct, relay, relay, direct, ...), so load
drifts hit both alike; each figure is the median over the worlds, and the
ratio is relay over direct. ``python -m benchmarks.bench_relay [--quick]``
writes ``benchmarks/results/relay.json`` and ``relay.png``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.output import add_out_argument, output_dir, write_json
from mpc_pca.studies.machine import describe_machine as machine
from mpc_pca.studies.plotting import pyplot

N_ROWS = 500
MODES = ("direct", "relay")


def run_world(d: int, m: int, mode: str, seed: int) -> dict[str, float]:
    """One PPPCA-SS run as processes; the server's protocol seconds and the launcher's wall time."""
    from mpc_pca.deploy.local import PARTY_PRELOAD, child_environment, party_process
    from mpc_pca.deploy.spec import ArraySource, PartySpec
    from mpc_pca.registry import deployment as registered
    from mpc_pca.threads import announce
    from protocols.runtime.launcher import PythonCall, launch, raise_on_failure
    from protocols.runtime.parties import LinkOptions, host_introducer, local_links
    from protocols.transport.certs import write_credentials
    from protocols.transport.relay import RELAY_NAME, RelayServer
    from protocols.transport.tls import Credentials, server_context

    rng = np.random.default_rng(seed)
    parts = [rng.standard_normal((N_ROWS, d)) for _ in range(m)]
    deployment = registered("pppca-ss")
    settings = deployment.settings({"n_components": 2})
    layout, data, _ = announce(deployment, parts, settings)
    with tempfile.TemporaryDirectory(prefix="bench-relay-") as tmp:
        workdir = Path(tmp)
        outputs = {name: workdir / f"{name}.json" for name in layout}
        relay: RelayServer | None = None
        if mode == "relay":
            write_credentials([*layout, RELAY_NAME], workdir / "tls", days=1)
            ctx = server_context(Credentials.from_dir(workdir / "tls", RELAY_NAME))
            relay = RelayServer("127.0.0.1:0", ctx, 300, layout=layout)
            address = f"127.0.0.1:{relay.port}"
        else:
            keep_alive = host_introducer(layout, workdir, insecure=False, timeout=300)
        commands = {}
        for name in layout:
            if relay is not None:
                creds = Credentials.from_dir(workdir / "tls", name)
                links = LinkOptions(address, creds, timeout=600, connect_timeout=240, relay=address)
            else:
                links = local_links(
                    name, keep_alive.port, workdir, insecure=False, timeout=600, connect_timeout=240
                )
            rows = ArraySource(data[name], None) if name in data else None
            spec = PartySpec("pppca-ss", name, m, links, rows, settings, outputs[name], None)
            commands[name] = PythonCall(party_process, (spec, 0, deployment))
        start = time.perf_counter()
        outcomes = launch(commands, timeout=600, env=child_environment(), preload=PARTY_PRELOAD)
        run_seconds = time.perf_counter() - start
        raise_on_failure(outcomes)
        if relay is not None:
            relay.close()
        server = json.loads(outputs["server"].read_text())
    return {"protocol_seconds": server["report"]["server"]["seconds"], "run_seconds": run_seconds}


def run_point(d: int, m: int, worlds: int) -> dict[str, Any]:
    """``worlds`` runs per mode, interleaved; medians and relay / direct ratios."""
    samples: dict[str, dict[str, list[float]]] = {
        mode: {"protocol_seconds": [], "run_seconds": []} for mode in MODES
    }
    for i in range(worlds):
        for mode in MODES if i % 2 == 0 else MODES[::-1]:
            world = run_world(d, m, mode, seed=1000 * d + m)
            for key, value in world.items():
                samples[mode][key].append(value)
    row: dict[str, Any] = {"d": d, "M": m, "rows_per_provider": N_ROWS, "worlds_per_mode": worlds}
    for mode in MODES:
        row[mode] = {
            **{f"median_{key}": statistics.median(values) for key, values in samples[mode].items()},
            **{key: values for key, values in samples[mode].items()},
        }
    for key in ("protocol_seconds", "run_seconds"):
        row[f"relay_over_direct_{key}"] = row["relay"][f"median_{key}"] / row["direct"][f"median_{key}"]
    return row


def run_all(quick: bool, worlds: int | None = None) -> dict[str, Any]:
    """Every (d, M) point; the JSON payload."""
    ds = [20, 60] if quick else [100, 1000]
    ms = [2] if quick else [3, 8]
    for mode in MODES:  # untimed: starts the fork server, warms the caches
        run_world(ds[0], ms[0], mode, seed=0)
    rows = []
    for d in ds:
        for m in ms:
            row = run_point(d, m, worlds or (1 if quick else 3))
            rows.append(row)
            print(
                f"d={d:5d} M={m}  protocol: direct {row['direct']['median_protocol_seconds']:7.3f} s  "
                f"relay {row['relay']['median_protocol_seconds']:7.3f} s  "
                f"ratio {row['relay_over_direct_protocol_seconds']:.2f}   run: direct "
                f"{row['direct']['median_run_seconds']:6.2f} s  relay {row['relay']['median_run_seconds']:6.2f} s  "
                f"ratio {row['relay_over_direct_run_seconds']:.2f}",
                flush=True,
            )
    return {
        "benchmark": "PPPCA-SS (additive, k = 2) as M + 2 processes on loopback: relay vs direct TLS links",
        "timing": "protocol_seconds: the server's role wall time (links up to result); run_seconds: the "
        "launcher's wall time from starting the processes to the last one ending; medians over worlds "
        "alternating direct and relay",
        "rows_per_provider": N_ROWS,
        "machine": machine(),
        "rows": rows,
    }


def plot(result: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    ms = sorted({row["M"] for row in result["rows"]})
    fig, axes = plt.subplots(1, len(ms), figsize=(5 * len(ms), 4), squeeze=False)
    for ax, m in zip(axes[0], ms, strict=True):
        rows = sorted((r for r in result["rows"] if r["M"] == m), key=lambda r: r["d"])
        ds = [r["d"] for r in rows]
        for mode, style in (("direct", "o-"), ("relay", "s--")):
            for key, alpha in (("protocol_seconds", 1.0), ("run_seconds", 0.5)):
                ax.plot(
                    ds, [r[mode][f"median_{key}"] for r in rows], style, alpha=alpha,
                    label=f"{mode}: {key.replace('_', ' ')}",
                )  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("d")
        ax.set_ylabel("seconds (median)")
        ax.set_title(f"PPPCA-SS, M = {m} providers")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="CI sizes: d = 20, 60, M = 2, one world per mode"
    )
    parser.add_argument("--worlds", type=int, default=None, help="worlds per mode and point (default 3)")
    add_out_argument(parser)
    args = parser.parse_args()
    if args.worlds is not None and args.worlds < 1:
        parser.error(f"--worlds must be at least 1, got {args.worlds}")
    folder = output_dir(args.out, args.quick)
    result = run_all(args.quick, args.worlds)
    path = write_json("relay.json", result, folder)
    plot(result, folder / "relay.png")
    print(f"wrote {path} and relay.png")


if __name__ == "__main__":
    main()
