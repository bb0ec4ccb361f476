"""ClientApp of the benchmark: one app, whose mod is ``secure_sum_mod`` or ``secaggplus_mod`` by run config.

Run config ``aggregator``: ``ours`` or ``ours-sparse`` (:func:`~mpc_pca.integrations.flower.secure_sum_mod`)
or ``secagg`` / ``secagg-tuned`` (Flower's ``secaggplus_mod``). Node config
``behaviour``: ``ok``, or ``die-after-keys``: the node kills its own SuperNode
when the stage after the key exchange reaches it (ours ``masked``, SecAgg+
``collect_masked_vectors``). Every ``fit`` also saves the node's plain update
to ``<out>/plain/`` on the local disk (never through Flower), so that the
driver can compute the plain mean the aggregate is compared with.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
from flwr.client import ClientApp, NumPyClient
from flwr.client.mod import secaggplus_mod
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Stage

from mpc_pca.integrations.flower import secure_sum_mod
from mpc_pca.integrations.flower.mod import RECORD

from . import task

#: The stage after the key exchange, per aggregator's record: a node killed there has sent its keys.
AFTER_KEYS = {RECORD: "masked", RECORD_KEY_CONFIGS: Stage.COLLECT_MASKED_VECTORS}


class Client(NumPyClient):
    def __init__(self, node: int, partition: int, behaviour: str, run: dict) -> None:
        self.node, self.partition, self.behaviour = node, partition, behaviour
        self.task, self.size, self.nodes = str(run["task"]), int(run["size"]), int(run["nodes"])
        self.out = Path(str(run["out"])) / "plain"

    def get_parameters(self, config):
        return task.initial(self.task, self.size)

    def fit(self, parameters, config):
        server_round = int(config["round"])
        if self.task == "digits":
            x, y = task.partition(self.partition, self.nodes)
            update, weight = task.train(parameters, x, y), len(y)
        else:
            update, weight = task.vector(self.node, server_round, self.size), 1
        self.out.mkdir(parents=True, exist_ok=True)
        np.savez(
            self.out / f"r{server_round}-n{self.node}.npz",
            flat=np.concatenate([a.ravel() for a in update]),
            weight=weight,
            behaviour=self.behaviour,
        )
        return update, weight, {}


def client_fn(context):
    node = context.node_config
    return Client(
        context.node_id, int(node["partition-id"]), str(node.get("behaviour", "ok")), context.run_config
    ).to_client()


def _supernode_of(pid: int) -> list[int]:
    """This process's ancestors up to and including the SuperNode (read from /proc)."""
    chain = []
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read()
        chain.append(pid)
        if b"flower-supernode" in cmd:
            return chain
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            pid = int(fh.read().rsplit(")", 1)[1].split()[1])
    return []


def die_mod(msg, ctxt, call_next):
    if str(ctxt.node_config.get("behaviour", "ok")) == "die-after-keys":
        for record, stage in AFTER_KEYS.items():
            config = msg.content.config_records.get(record)
            if config is not None and config.get("stage") == stage:
                for pid in reversed(_supernode_of(os.getppid())):
                    os.kill(pid, signal.SIGKILL)
    return call_next(msg, ctxt)


def aggregator_mod(msg, ctxt, call_next):
    if str(ctxt.run_config["aggregator"]).startswith("ours"):
        return secure_sum_mod(msg, ctxt, call_next)
    return secaggplus_mod(msg, ctxt, call_next)


app = ClientApp(client_fn=client_fn, mods=[die_mod, aggregator_mod])
