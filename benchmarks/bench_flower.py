"""Issue 40: this project's secure sum against Flower's SecAgg+ on the same Flower app, in one run.

Usage (needs the ``flower`` extra; run with the interpreter that has ``flwr``)::

    python -m benchmarks.bench_flower [--quick] [--out DIR] [--nodes 10] [--timeout 120]

Every configuration starts a fresh Flower deployment on localhost (a
SuperLink and one SuperNode per client, Flower's deployment engine, as
:mod:`tests.multiprocess.flower_deployment` does) and ``flwr run`` s the app
in ``benchmarks/flower_app`` with one aggregator:

- ``ours``: :class:`~mpc_pca.integrations.flower.SecureSumWorkflow` + ``secure_sum_mod`` (defaults);
- ``secagg``: ``SecAggPlusWorkflow`` + ``secaggplus_mod``, Flower's defaults;
- ``secagg-tuned``: SecAgg+ at its finest setting for the job (``flowerbench_app.server_app``).

Jobs, one round each: FedAvg of a logistic regression on scikit-learn's
digits, and raw vectors of 10^5 and 10^6 values; then dropout on digits: 10 % and 30 %
of the nodes killed after sending their keys in round 1, and round 2 after it;
and digits FedAvg over ``--large-nodes`` (100) nodes on Flower's simulation
runtime (labelled ``/sim``: Ray actors, not SuperNode processes; 100 SuperNode
processes exhaust a 2-core, 24 GiB machine), ours with the complete and the
sparse mask graph, and SecAgg+. A configuration that fails is recorded with
its reason and the run goes on.
Measured per round (:mod:`benchmarks.flower_measure`): wall time of the fit
workflow in the ServerApp; bytes as the protobuf size of every message's
content (``RecordDict``) the ServerApp sends to or receives from a node;
the largest error of the aggregate against the plain weighted mean of the
counted nodes' updates (saved by each node to local disk, never sent).
Writes ``flower.json`` and ``flower.png``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.flower_measure import Config, plot, summarize, table
from benchmarks.output import add_out_argument, output_dir, write_json
from mpc_pca.studies.machine import describe_machine
from tests.multiprocess.flower_deployment import deployment, flwr_run, run_report, simulation

APP = Path(__file__).resolve().parent / "flower_app"
AGGREGATORS = ("ours", "secagg", "secagg-tuned")
#: The large run's aggregators: ours with both mask graphs, and SecAgg+'s defaults.
LARGE_AGGREGATORS = ("ours", "ours-sparse", "secagg")
#: Every aggregator's reconstruction threshold, a fraction of the sampled nodes.
THRESHOLD = 0.6


def configurations(quick: bool, nodes: int, only: str = "all", large: int = 0) -> list[Config]:
    """The run's configurations: 3 nodes and a 10^3 vector with ``--quick``, else ``only`` of the full set.

    ``only``: ``clean`` (the three jobs, every aggregator), ``dropout`` (10 % and
    30 % of the nodes killed, ours and SecAgg+'s defaults), ``large`` (below) or ``all``;
    ``large`` > 0 adds digits FedAvg over ``large`` nodes on Flower's simulation
    runtime (``large`` SuperNode processes do not fit on a 2-core machine), one
    round, of :data:`LARGE_AGGREGATORS`.
    """
    if quick:
        return [Config(a, "vector", 1000, 3, 1, 0) for a in ("ours", "secagg")]
    jobs = [("digits", 0, 1), ("vector", 100_000, 1), ("vector", 1_000_000, 1)]
    clean = [Config(a, t, s, nodes, r, 0) for t, s, r in jobs for a in AGGREGATORS]
    dropout = [
        Config(a, "digits", 0, nodes, 2, killed)
        for killed in (max(1, nodes // 10), max(1, (3 * nodes) // 10))
        for a in ("ours", "secagg")
    ]
    big = [Config(a, "digits", 0, large, 1, 0, "simulation") for a in LARGE_AGGREGATORS] if large > 0 else []
    return {"clean": clean, "dropout": dropout, "large": big, "all": clean + dropout + big}[only]


def stage_timeout(timeout: float, nodes: int) -> float:
    """Seconds each stage waits: ``timeout``, at least 2 s per node; 0 stays 0 (wait for every reply)."""
    return max(timeout, 2.0 * nodes) if timeout > 0 else 0.0


def flower_version() -> str:
    """The installed ``flwr`` version; exits naming the ``pip install`` line when Flower is missing."""
    try:
        return metadata.version("flwr")
    except metadata.PackageNotFoundError:
        raise SystemExit('bench_flower needs the flower extra: pip install "mpc-pca[flower]"') from None


def check_simulation_runtime(configs: list[Config]) -> None:
    """Exit naming the ``pip install`` line when a simulated configuration is asked for without Ray."""
    if any(c.engine == "simulation" for c in configs) and importlib.util.find_spec("ray") is None:
        raise SystemExit(
            "the --large-nodes run uses Flower's simulation runtime, which needs Ray: "
            'pip install "mpc-pca[bench-flower]" (or pass --large-nodes 0)'
        )


def run_one(config: Config, work: Path, timeout: float) -> dict[str, Any]:
    """Start the engine, run ``config``, and return its measurements (:func:`benchmarks.flower_measure.summarize`)."""
    out = work / "out"
    out.mkdir()
    run_config = {
        "aggregator": config.aggregator,
        "task": config.task,
        "size": config.size,
        "nodes": config.nodes,
        "num-server-rounds": config.rounds,
        "threshold": THRESHOLD,
        "timeout": timeout,
        "out": str(out),
    }
    extra: list[str] = []
    if config.engine == "simulation":
        extra = ["--federation-config", f"num-supernodes={config.nodes} client-resources-num-cpus=1"]
        engine = simulation(work)
    else:
        engine = deployment(
            work, ["die-after-keys"] * config.killed + ["ok"] * (config.nodes - config.killed)
        )
    with engine as started:
        run = flwr_run(APP, started, run_config, 600 + 8 * timeout * config.rounds, extra)
    if not (out / "server.json").exists():
        raise RuntimeError(f"{config.name} wrote no result\n{run_report(work, run)}")
    return summarize(config, out)


def run_or_record(config: Config, timeout: float) -> dict[str, Any]:
    """:func:`run_one` in a fresh directory; a configuration that fails is recorded as failed, and the run goes on."""
    with tempfile.TemporaryDirectory(prefix="bench-flower-") as tmp:
        try:
            return run_one(config, Path(tmp), timeout)
        except (RuntimeError, OSError, subprocess.SubprocessError, ValueError, KeyError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            print(reason[-4000:], file=sys.stderr, flush=True)
            return {
                "config": asdict(config),
                "summary": {"name": config.name},
                "failed": reason[:4000],
            }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; write ``flower.json`` and ``flower.png``; return the JSON payload."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="3 nodes, one round of ours and SecAgg+, 10^3 values"
    )
    parser.add_argument("--nodes", type=int, default=10, help="SuperNodes of the full run (default 10)")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds each stage waits (default 60; 0: every reply)"
    )
    parser.add_argument(
        "--only",
        choices=("all", "clean", "dropout", "large"),
        default="all",
        help="part of the full run (default all)",
    )
    parser.add_argument(
        "--large-nodes",
        type=int,
        default=100,
        help="SuperNodes of the large digits run (default 100; 0 skips)",
    )
    parser.add_argument("--list", action="store_true", help="print the configurations and exit")
    parser.add_argument(
        "--table", type=Path, default=None, help="print the table of this flower.json and exit"
    )
    add_out_argument(parser)
    args = parser.parse_args(argv)
    if args.table is not None:
        saved: dict[str, Any] = json.loads(args.table.read_text())
        print(table(saved))
        return saved
    configs = configurations(args.quick, args.nodes, args.only, args.large_nodes)
    if args.list:
        for config in configs:
            print(f"{config.name}: {config.nodes} nodes, {config.rounds} round(s)")
        print(f"{len(configs)} configurations, {sum(c.nodes for c in configs)} SuperNode starts")
        return {}
    args.flwr = flower_version()
    check_simulation_runtime(configs)
    folder = output_dir(args.out, args.quick)
    results: list[dict[str, Any]] = []
    args.load_start = os.getloadavg()
    payload = _payload(args, results, finished=False)
    for config in configs:
        print(f"running {config.name} ...", flush=True)
        results.append(run_or_record(config, stage_timeout(args.timeout, config.nodes)))
        print(json.dumps(results[-1]["summary"]), flush=True)
        payload = _payload(args, results, finished=len(results) == len(configs))
        write_json("flower.json", payload, folder)  # after every configuration: a stopped run keeps its part
    plot(results, folder / "flower.png")
    print(table(payload))
    return payload


def _payload(args: argparse.Namespace, results: list[dict[str, Any]], finished: bool) -> dict[str, Any]:
    return {
        "benchmark": "bench_flower",
        "command": "python -m benchmarks.bench_flower"
        + (" --quick" if args.quick else "")
        + (f" --only {args.only}" if args.only != "all" and not args.quick else "")
        + (f" --large-nodes {args.large_nodes}" if not args.quick else ""),
        "machine": describe_machine(),
        "flwr": args.flwr,
        "timeout_per_stage_s": args.timeout,
        "threshold": THRESHOLD,
        "bytes": "protobuf size of each message's content (RecordDict) the ServerApp sends to or receives "
        "from a node; per client = its own messages; at the server = all of them",
        "error": "max |aggregate - plain weighted mean of the counted nodes' updates| over all values",
        "load_start": list(args.load_start),
        "load_end": list(os.getloadavg()),
        "finished": finished,
        "configs": results,
    }


if __name__ == "__main__":
    main()
