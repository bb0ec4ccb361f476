"""Start-up of a multi-process run against one ``import torch.distributed``, in the same run (issue 15).

Issue 15's target: ``mpc-pca run --transport processes`` on Wine (one process
per party, TLS links, throw-away certificates) takes at most twice the wall
time of a fresh interpreter that only runs ``import torch.distributed``. Both
are timed here as subprocesses, interleaved (import, run, import, run, ...) so
that machine load hits them alike, and the ratio of the medians is reported.
The run's own report gives, per party, the seconds of protocol work, which
shows how much of the wall time is start-up.

Usage: ``python -m benchmarks.bench_startup [--quick] [--out DIR] [--parties M]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.output import add_out_argument, output_dir, write_json
from mpc_pca.studies.machine import describe_machine as machine

IMPORT_TORCH = [sys.executable, "-c", "import torch.distributed"]


def run_command(parties: int, output: Path) -> list[str]:
    """The timed PPPCA run: Wine, ``parties`` providers, every party its own process."""
    return [
        sys.executable,
        "-m",
        "mpc_pca",
        "run",
        "--protocol",
        "pppca-ss",
        "--data",
        "builtin:wine",
        "--parties",
        str(parties),
        "--transport",
        "processes",
        "--output",
        str(output),
        "-q",
    ]


def timed(command: list[str], tree: Path | None = None) -> float:
    """Wall seconds of one subprocess (it must succeed); ``tree``: run that source tree's package."""
    env = None
    if tree is not None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH")) if p),
        }
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, text=True, env=env, cwd=tree)
    return time.perf_counter() - start


#: ``mpc-pca party`` for a PPPCA-SS server, up to the moment it would open its links: argument
#: parsing, option checks, the registry and deployment, and every module its role runs.
PARTY_LOAD = """
import sys
import mpc_pca.deploy.party as floor
from mpc_pca.cli.app import build_parser
from mpc_pca.cli.party import party_command


class Reached(Exception):
    pass


def stop(spec, deployment):
    raise Reached()


floor.prepare = stop
args = build_parser().parse_args(sys.argv[1:])
try:
    party_command(args, env={})
except Reached:
    pass
import mpc_pca.pppca.protocol, protocols.backends.additive, protocols.runtime.network, protocols.transport.tls
print(sorted({name.split(".")[0] for name in sys.modules} & {"sklearn", "pandas", "scipy"}))
"""
PARTY_ARGV = [
    "party",
    "--protocol",
    "pppca-ss",
    "--rank",
    "2",
    "--world-size",
    "4",
    "--master",
    "127.0.0.1:9",
    "--insecure",
]


def compare_trees(baseline: Path, parties: int, repeats: int) -> dict[str, Any]:
    """``mpc-pca run`` on Wine from ``baseline`` and from this tree, interleaved, in-process and as processes.

    For a before/after of a change to start-up: ``baseline`` is a checkout
    (e.g. ``git archive``) of the commit before it.
    """
    here = Path(__file__).resolve().parent.parent
    out: dict[str, Any] = {"baseline_tree": str(baseline), "this_tree": str(here), "repeats": repeats}
    party: dict[str, list[float]] = {"before": [], "after": []}
    for _ in range(repeats):
        for label, tree in (("before", baseline), ("after", here)):
            party[label].append(timed([sys.executable, "-c", PARTY_LOAD, *PARTY_ARGV], tree))
    medians = {label: statistics.median(ts) for label, ts in party.items()}
    out["party_load"] = {
        "seconds": party,
        "median_seconds": medians,
        "after_over_before": medians["after"] / medians["before"],
    }
    print(
        f"party start-up (pppca-ss server, up to its links): before {medians['before']:.2f} s, after {medians['after']:.2f} s"
    )
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        for transport in ("inprocess", "processes"):
            times: dict[str, list[float]] = {"before": [], "after": []}
            for i in range(repeats):
                for label, tree in (("before", baseline), ("after", here)):
                    command = run_command(parties, Path(tmp) / f"{transport}-{label}-{i}.json")
                    command[command.index("processes")] = transport
                    times[label].append(timed(command, tree))
            medians = {label: statistics.median(ts) for label, ts in times.items()}
            out[transport] = {
                "seconds": times,
                "median_seconds": medians,
                "after_over_before": medians["after"] / medians["before"],
            }
            print(
                f"run --transport {transport}: before {medians['before']:.2f} s, after {medians['after']:.2f} s "
                f"({medians['after'] / medians['before']:.2f} x)"
            )
    return out


def measure(parties: int, repeats: int) -> dict[str, Any]:
    """Interleaved medians of ``import torch.distributed`` and of the run, and their ratio."""
    imports: list[float] = []
    runs: list[float] = []
    protocol: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        for i in range(repeats):
            output = Path(tmp) / f"run{i}.json"
            imports.append(timed(IMPORT_TORCH))
            runs.append(timed(run_command(parties, output)))
            report = json.loads(output.read_text())["report"]
            protocol.append(max(float(role["seconds"]) for role in report.values()))
            print(
                f"repeat {i + 1}/{repeats}: import torch.distributed {imports[-1]:.2f} s, run {runs[-1]:.2f} s"
            )
    median_import, median_run = statistics.median(imports), statistics.median(runs)
    return {
        "parties": parties,
        "repeats": repeats,
        "import_torch_distributed_seconds": imports,
        "run_seconds": runs,
        "protocol_seconds_slowest_role": protocol,
        "median_import_seconds": median_import,
        "median_run_seconds": median_run,
        "run_over_import": median_run / median_import,
        "target_run_over_import": 2.0,
        "command": " ".join(run_command(parties, Path("OUT.json"))[1:]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI size: 2 repeats instead of 7")
    parser.add_argument(
        "--parties", type=int, default=3, help="number of providers (default 3, as in issue 15)"
    )
    parser.add_argument(
        "--baseline-tree",
        type=Path,
        default=None,
        help="compare run start-up (in-process and processes) with the package in this source tree, "
        "e.g. a git archive of the commit before a change (writes startup_compare.json)",
    )
    add_out_argument(parser)
    args = parser.parse_args()
    if args.parties < 1:
        parser.error(f"--parties must be at least 1, got {args.parties}")
    folder = output_dir(args.out, args.quick)
    if args.baseline_tree is not None:
        if not (args.baseline_tree / "mpc_pca" / "__init__.py").is_file():
            parser.error(f"--baseline-tree {args.baseline_tree} holds no mpc_pca package")
        compared = {
            "machine": machine(),
            **compare_trees(args.baseline_tree.resolve(), args.parties, 2 if args.quick else 7),
        }
        compared["load_average_1_5_15_min"] = os.getloadavg()
        print(f"wrote {write_json('startup_compare.json', compared, folder)}")
        return
    result = {"machine": machine(), **measure(args.parties, 2 if args.quick else 7)}
    path = write_json("startup.json", result, folder)
    print(
        f"median run {result['median_run_seconds']:.2f} s / import torch.distributed "
        f"{result['median_import_seconds']:.2f} s = {result['run_over_import']:.2f} (target <= 2); wrote {path}"
    )


if __name__ == "__main__":
    main()
