"""What :mod:`benchmarks.bench_flower` reads from one run of the Flower benchmark app, and its figure.

The ServerApp (``benchmarks/flower_app/flowerbench_app/server_app.py``) writes
``server.json`` (per round: seconds, bytes per node, each stage's replies and
errors) and ``agg-r<round>.npy`` (the global parameters after the round);
every node's ``fit`` writes its plain update to ``plain/r<round>-n<node>.npz``.
:func:`summarize` turns them into the benchmark's numbers.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class Config:
    """One configuration: aggregator, job, vector size (0 for digits), nodes, rounds, nodes killed, engine.

    ``engine``: ``deployment`` (a SuperLink and one SuperNode process per node)
    or ``simulation`` (Flower's simulation runtime: the nodes are Ray actors).
    """

    aggregator: str
    task: str
    size: int
    nodes: int
    rounds: int
    killed: int
    engine: str = "deployment"

    @property
    def name(self) -> str:
        """A short label, e.g. ``ours/vector-1e+05/n10``, ``secagg/digits/n10/kill3`` or ``ours/digits/n100/sim``."""
        job = self.task if self.task == "digits" else f"vector-{self.size:.0e}"
        kill = f"/kill{self.killed}" if self.killed else ""
        sim = "/sim" if self.engine == "simulation" else ""
        return f"{self.aggregator}/{job}/n{self.nodes}{kill}{sim}"


def plain_mean(
    out: Path, server_round: int, counted: set[str]
) -> tuple[NDArray[np.float64] | None, list[str]]:
    """The weighted mean of the round's updates of the ``counted`` nodes, and the nodes found."""
    total, weight, nodes = None, 0.0, []
    for path in sorted((out / "plain").glob(f"r{server_round}-n*.npz")):
        if path.stem.split("-n", 1)[1] not in counted:
            continue
        with np.load(path) as data:
            w = float(data["weight"])
            total = data["flat"] * w if total is None else total + data["flat"] * w
        weight += w
        nodes.append(path.stem.split("-n", 1)[1])
    return (None if total is None else total / weight), sorted(nodes)


def _failures(entry: dict[str, Any], outcome: dict[str, Any] | None) -> dict[str, str]:
    """Who did not count in the round, and why (ours: the workflow's outcome; SecAgg+: the stages' replies)."""
    if outcome is not None:
        named = {n: r[:300] for n, r in outcome["dropped"].items()}
        if outcome["error"]:
            named["round"] = outcome["error"][:300]
        return named
    named = {}
    for index, stage in enumerate(entry["stages"]):
        for node, reason in stage["errors"].items():
            named.setdefault(node, f"stage {index + 1}: {reason[:300]}")
        for node in sorted(set(stage["to"]) - set(stage["ok"]) - set(stage["errors"])):
            named.setdefault(node, f"stage {index + 1}: no answer")
    if entry["raised"]:
        named["round"] = entry["raised"][:300]
    return named


def _counted(entry: dict[str, Any], outcome: dict[str, Any] | None) -> set[str]:
    """The nodes whose updates are in the round's aggregate.

    Ours: the outcome's survivors. SecAgg+: the nodes that answered its third
    stage (``collect_masked_vectors``, the masked updates) without error.
    """
    if outcome is not None:
        return set(outcome["survivors"])
    return set(entry["stages"][2]["ok"]) if len(entry["stages"]) >= 3 else set()


def summarize(config: Config, out: Path) -> dict[str, Any]:
    """The configuration's rounds (time, bytes, error, failures) and a one-line summary."""
    server = json.loads((out / "server.json").read_text())
    outcomes = server["outcomes"]
    rounds = []
    for index, entry in enumerate(server["rounds"]):
        number = entry["round"]
        outcome = outcomes[index] if index < len(outcomes) else None
        completed = entry["updated"] and entry["raised"] is None and not (outcome and outcome["error"])
        mean, nodes = plain_mean(out, number, _counted(entry, outcome))
        error = None
        if completed and mean is not None:
            error = float(np.max(np.abs(np.load(out / f"agg-r{number}.npy") - mean)))
        down, up = entry["bytes_sent"], entry["bytes_received"]
        per_client = [down.get(n, 0) + up.get(n, 0) for n in sorted(set(down) | set(up))]
        rounds.append(
            {
                "round": number,
                "seconds": entry["seconds"],
                "completed": completed,
                "max_error_vs_plain_mean": error,
                "plain_mean_over": nodes,
                "bytes_per_client_mean": float(np.mean(per_client)) if per_client else 0.0,
                "bytes_per_client_max": max(per_client, default=0),
                "bytes_at_server": sum(down.values()) + sum(up.values()),
                "did_not_count": _failures(entry, outcome),
                **({"accuracy": entry["accuracy"]} if "accuracy" in entry else {}),
                **({"error_bound": outcome["mean_error_bound"]} if outcome else {}),
            }
        )
    summary = {
        "name": config.name,
        "seconds_per_round": [round(r["seconds"], 2) for r in rounds],
        "completed": [r["completed"] for r in rounds],
        "max_error": [r["max_error_vs_plain_mean"] for r in rounds],
    }
    return {"config": asdict(config), "summary": summary, "rounds": rounds}


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """Seconds per round and the aggregate's largest error, per configuration's first round."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = [r for r in results if "failed" not in r]
    names = [r["summary"]["name"] for r in results]
    seconds = [r["rounds"][0]["seconds"] for r in results]
    errors = [r["rounds"][0]["max_error_vs_plain_mean"] or np.nan for r in results]
    colours = ["tab:blue" if n.startswith("ours") else "tab:orange" for n in names]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    top.bar(names, seconds, color=colours)
    top.set_ylabel("seconds, round 1")
    bottom.bar(names, errors, color=colours)
    bottom.set_yscale("log")
    bottom.set_ylabel("max |aggregate - plain mean|")
    bottom.tick_params(axis="x", rotation=60)
    fig.suptitle("Flower: SecureSumWorkflow (blue) vs SecAggPlusWorkflow (orange)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


#: Marker line that precedes the benchmark's table in docs/howto/flower.md (tests/docs/test_benchmark_quotes.py).
FLOWER_MARKER = "<!-- flower-table: benchmarks/flower_measure.py table(flower.json); tests/docs/test_benchmark_quotes.py -->"

#: The header of the markdown table a run prints (one row per configuration, :func:`table`).
TABLE_HEADER = (
    "| configuration | seconds per round | kB per client, round 1 | kB at the server, round 1 "
    "| max error vs plain mean | rounds: survivors summed |\n|---|---|---|---|---|---|"
)


def _rounds_cell(result: dict[str, Any]) -> str:
    nodes = result["config"]["nodes"]
    cells = []
    for r in result["rounds"]:
        named = len([n for n in r["did_not_count"] if n != "round"])
        if r["completed"]:
            cells.append(f"{r['round']}: {len(r['plain_mean_over'])} of {nodes}")
        else:
            cells.append(f"{r['round']}: failed, {named} named")
    return "; ".join(cells)


def table_row(result: dict[str, Any]) -> str:
    """One configuration as the docs' table row (seconds, kB = 1000 bytes, error, rounds).

    A configuration that produced no result (``failed``) is one row saying so.
    """
    if "failed" in result:
        return f"| {result['summary']['name']} | failed: {result['failed'].splitlines()[0][:120]} | | | | |"
    rounds = result["rounds"]
    seconds = "; ".join(f"{r['seconds']:.1f}" for r in rounds)
    errors = "; ".join(
        "-" if r["max_error_vs_plain_mean"] is None else f"{r['max_error_vs_plain_mean']:.1e}" for r in rounds
    )
    first = rounds[0]
    return (
        f"| {result['summary']['name']} | {seconds} | {first['bytes_per_client_mean'] / 1000:,.1f} "
        f"| {first['bytes_at_server'] / 1000:,.1f} | {errors} | {_rounds_cell(result)} |"
    )


def table(payload: dict[str, Any]) -> str:
    """The markdown table of a run's ``flower.json``."""
    return "\n".join([TABLE_HEADER, *(table_row(r) for r in payload["configs"])])
