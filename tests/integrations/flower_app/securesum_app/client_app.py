"""ClientApp: node ``i`` (node config ``partition-id``) returns fixed updates; some misbehave on purpose.

Run config ``task``: ``fedavg`` (fixed updates) or ``pca`` (node ``i``'s rows,
:func:`rows`, sent as their PCA statistics, :mod:`mpc_pca.integrations.star_sum.pca`).
Node config ``behaviour``: ``ok``; ``bad-shape`` (an update of the wrong shape);
``die-at-<stage>`` (the node kills its own SuperNode when that stage's message
arrives, after it sent its earlier messages: a node killed mid-round).
"""

from __future__ import annotations

import os
import signal

import numpy as np
from flwr.client import ClientApp, NumPyClient

from mpc_pca.integrations.flower import secure_sum_mod
from mpc_pca.integrations.flower.mod import RECORD
from mpc_pca.integrations.star_sum.pca import local_statistics, statistics_shapes

SHAPES = [(3, 4), (5,)]
BOUND = 8.0
PCA_FEATURES = 4
PCA_MAX_ABS = 3.0


def rows(partition: int) -> np.ndarray:
    """Node ``partition``'s rows for the PCA task, every entry within ``PCA_MAX_ABS``."""
    rng = np.random.default_rng(2000 + partition)
    mixing = np.array(
        [[1.0, 0.5, 0.0, 0.2], [0.0, 0.8, 0.3, 0.0], [0.0, 0.0, 0.4, 0.1], [0.0, 0.0, 0.0, 0.2]]
    )
    return np.clip(rng.normal(size=(30 + 10 * partition, PCA_FEATURES)) @ mixing, -PCA_MAX_ABS, PCA_MAX_ABS)


def update(partition: int) -> list[np.ndarray]:
    """Node ``partition``'s update (the test recomputes it)."""
    rng = np.random.default_rng(1000 + partition)
    return [rng.uniform(-BOUND, BOUND, shape) for shape in SHAPES]


class Client(NumPyClient):
    def __init__(self, partition: int, behaviour: str, task: str) -> None:
        self.partition, self.behaviour, self.task = partition, behaviour, task

    def get_parameters(self, config):
        shapes = statistics_shapes(PCA_FEATURES) if self.task == "pca" else SHAPES
        return [np.zeros(shape) for shape in shapes]

    def fit(self, parameters, config):
        if self.task == "pca":
            statistics, n = local_statistics(rows(self.partition))
            return statistics, n, {}
        arrays = update(self.partition)
        if self.behaviour == "bad-shape":
            arrays[1] = np.zeros(4)
        return arrays, self.partition + 1, {"partition": self.partition}


def client_fn(context):
    node = context.node_config
    task = str(context.run_config.get("task", "fedavg"))
    return Client(int(node["partition-id"]), str(node.get("behaviour", "ok")), task).to_client()


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
    behaviour = str(ctxt.node_config.get("behaviour", "ok"))
    record = msg.content.config_records.get(RECORD)
    if behaviour.startswith("die-at-") and record is not None and record.get("stage") == behaviour[7:]:
        for pid in reversed(_supernode_of(os.getppid())):
            os.kill(pid, signal.SIGKILL)
    return call_next(msg, ctxt)


app = ClientApp(client_fn=client_fn, mods=[die_mod, secure_sum_mod])
