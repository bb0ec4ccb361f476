"""ServerApp of the benchmark: FedAvg whose fit runs through SecureSumWorkflow or SecAggPlusWorkflow.

Run config ``aggregator``: ``ours`` (``SecureSumWorkflow(3, threshold)``,
defaults: clipping range 8, max weight 1000, the complete mask graph),
``ours-sparse`` (the same with ``graph="sparse"``, ``max_colluders=5``), ``secagg``
(``SecAggPlusWorkflow(1.0, threshold)`` with Flower's defaults: clipping range
8, 2^22 quantization levels, modulus 2^32, max weight 1000) or
``secagg-tuned`` (its finest setting for this job: the 2^32 modulus kept, as
Flower requires, 2^32 / 2^ceil(log2 n) quantization levels so that the sum of
``n`` cannot wrap, and ``max_weight`` equal to the largest ``num_examples``).
Both are given ``timeout`` seconds per stage. Each round is timed around the
fit workflow, and every message the ServerApp sends or receives is counted
(:class:`CountingGrid`); ``<out>/server.json`` gets the rounds, and
``<out>/agg-r<round>.npy`` the global parameters after each round.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays
from flwr.common.serde import recorddict_to_proto
from flwr.compat.common.recorddict_compat import arrayrecord_to_parameters
from flwr.server import LegacyContext, ServerApp, ServerConfig
from flwr.server.strategy import FedAvg
from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
from flwr.server.workflow.constant import MAIN_PARAMS_RECORD

from mpc_pca.integrations.flower import SecureSumWorkflow

from . import task

app = ServerApp()

#: ``ours-sparse``: the sparse mask graph, sized for this many colluding nodes (plus the dropouts the threshold allows).
SPARSE_COLLUDERS = 5


def _size(content: Any) -> int:
    """Bytes of a message's content as Flower serializes it (its RecordDict's protobuf)."""
    return int(recorddict_to_proto(content).ByteSize())


class CountingGrid:
    """The grid, counting each message's serialized content per node and each stage's replies and errors."""

    def __init__(self, grid: Any) -> None:
        self._grid = grid
        self.sent: dict[str, int] = {}
        self.received: dict[str, int] = {}
        self.stages: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._grid, name)

    def send_and_receive(self, messages: Any, *, timeout: float | None = None) -> list[Any]:
        messages = list(messages)
        stage: dict[str, Any] = {
            "to": sorted(str(m.metadata.dst_node_id) for m in messages),
            "ok": [],
            "errors": {},
        }
        for msg in messages:
            node = str(msg.metadata.dst_node_id)
            self.sent[node] = self.sent.get(node, 0) + _size(msg.content)
        replies = list(self._grid.send_and_receive(messages, timeout=timeout))
        for reply in replies:
            node = str(reply.metadata.src_node_id)
            if reply.has_error():
                stage["errors"][node] = reply.error.reason
            else:
                stage["ok"].append(node)
                self.received[node] = self.received.get(node, 0) + _size(reply.content)
        self.stages.append(stage)
        return replies


def _global(legacy: LegacyContext) -> list[np.ndarray]:
    return parameters_to_ndarrays(
        arrayrecord_to_parameters(legacy.state.array_records[MAIN_PARAMS_RECORD], keep_input=True)
    )


class TimedRounds:
    """The fit workflow, timed and counted per round."""

    def __init__(self, inner: Any, out: Path, task_name: str) -> None:
        self.inner, self.out, self.task_name = inner, out, task_name
        self.rounds: list[dict[str, Any]] = []

    def __call__(self, grid: Any, context: Any) -> None:
        counting = CountingGrid(grid)
        before = np.concatenate([a.ravel() for a in _global(context)])
        start, raised = time.perf_counter(), None
        try:
            self.inner(counting, context)
        except Exception as exc:
            raised = f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - start
        params = _global(context)
        server_round = len(self.rounds) + 1
        np.save(self.out / f"agg-r{server_round}.npy", np.concatenate([a.ravel() for a in params]))
        after = np.concatenate([a.ravel() for a in params])
        entry = {
            "round": server_round,
            "seconds": seconds,
            "updated": bool(not np.array_equal(before, after)),
            "raised": raised,
            "bytes_sent": counting.sent,
            "bytes_received": counting.received,
            "stages": counting.stages,
        }
        if self.task_name == "digits":
            entry["accuracy"] = task.accuracy(params)
        self.rounds.append(entry)


def _workflow(cfg: Any, nodes: int) -> Any:
    aggregator, threshold = str(cfg["aggregator"]), float(cfg["threshold"])
    timeout = float(cfg["timeout"]) or None
    if aggregator == "ours":
        return SecureSumWorkflow(3, threshold, timeout=timeout)
    if aggregator == "ours-sparse":
        return SecureSumWorkflow(
            3, threshold, timeout=timeout, graph="sparse", max_colluders=SPARSE_COLLUDERS
        )
    if aggregator == "secagg":
        return SecAggPlusWorkflow(1.0, threshold, timeout=timeout)
    max_weight = len(range(0, task.TRAIN, nodes)) if str(cfg["task"]) == "digits" else 1
    levels = 2**32 // 2 ** math.ceil(math.log2(nodes))
    return SecAggPlusWorkflow(
        1.0, threshold, max_weight=max_weight, quantization_range=levels, timeout=timeout
    )


def _wait_for_nodes(grid: Any, nodes: int, seconds: float = 300.0) -> None:
    """Wait until ``nodes`` SuperNodes are registered.

    The strategy then samples every node the SuperLink lists each round
    (``fraction_fit=1.0``, at least 2): a dead node stays sampled while it is
    listed, and a round never waits for a node the SuperLink has dropped.
    """
    deadline = time.monotonic() + seconds
    while len(list(grid.get_node_ids())) < nodes:
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {nodes} SuperNodes registered after {seconds} s")
        time.sleep(1.0)


@app.main()
def main(grid, context) -> None:
    cfg = context.run_config
    nodes, out = int(cfg["nodes"]), Path(str(cfg["out"]))
    _wait_for_nodes(grid, nodes)
    initial = task.initial(str(cfg["task"]), int(cfg["size"]))
    strategy = FedAvg(
        fraction_fit=1.0,
        fraction_evaluate=0.0,
        min_fit_clients=2,
        min_available_clients=2,
        initial_parameters=ndarrays_to_parameters(initial),
        on_fit_config_fn=lambda server_round: {"round": server_round},
    )
    rounds = int(cfg["num-server-rounds"])
    legacy = LegacyContext(context=context, config=ServerConfig(num_rounds=rounds), strategy=strategy)
    inner = _workflow(cfg, nodes)
    timed = TimedRounds(inner, out, str(cfg["task"]))
    DefaultWorkflow(fit_workflow=timed)(grid, legacy)
    outcomes = [{k: v for k, v in vars(o).items()} for o in getattr(inner, "outcomes", [])]
    (out / "server.json").write_text(json.dumps({"rounds": timed.rounds, "outcomes": outcomes}))
