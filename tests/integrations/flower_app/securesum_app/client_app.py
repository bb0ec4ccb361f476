"""ClientApp: node ``i`` (node config ``partition-id``) returns fixed updates; some misbehave on purpose.

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

SHAPES = [(3, 4), (5,)]
BOUND = 8.0


def update(partition: int) -> list[np.ndarray]:
    """Node ``partition``'s update (the test recomputes it)."""
    rng = np.random.default_rng(1000 + partition)
    return [rng.uniform(-BOUND, BOUND, shape) for shape in SHAPES]


class Client(NumPyClient):
    def __init__(self, partition: int, behaviour: str) -> None:
        self.partition, self.behaviour = partition, behaviour

    def get_parameters(self, config):
        return [np.zeros(shape) for shape in SHAPES]

    def fit(self, parameters, config):
        arrays = update(self.partition)
        if self.behaviour == "bad-shape":
            arrays[1] = np.zeros(4)
        return arrays, self.partition + 1, {"partition": self.partition}


def client_fn(context):
    node = context.node_config
    return Client(int(node["partition-id"]), str(node.get("behaviour", "ok"))).to_client()


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
