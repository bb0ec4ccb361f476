"""Run a :class:`~mpc_pca.deployment.Deployment` as the deploy floor will, with parties as threads.

Each party computes its announcement alone, every party gets the same
announcements, configures the run, builds its role with its own noise
generator, and the roles run over :func:`protocols.runtime.run_inprocess`
with each party's channel wrapped to measure every message it sends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc_pca.deployment import Deployment
from protocols.runtime import RunResult, run_inprocess
from protocols.transport.base import Channel, WrappedChannel


class SizingChannel(WrappedChannel):
    """A channel that records the size of every message its party sends (the inner meter's growth)."""

    def __init__(self, inner: Channel, sizes: list[int], lock: threading.Lock) -> None:
        super().__init__(inner)
        self._sizes = sizes
        self._lock = lock

    def send(self, to: str, obj: Any) -> None:
        before = self.meter.bytes_sent
        self._inner.send(to, obj)
        with self._lock:
            self._sizes.append(self.meter.bytes_sent - before)


@dataclass
class HarnessRun:
    """What a harness run produced."""

    result: dict[str, Any]
    config: Any
    cap: int
    largest_message: int
    run: RunResult
    layout: dict[str, int]


def announce(
    deployment: Deployment,
    parts: Sequence[np.ndarray],
    settings: Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
    """Every party's announcement; ``settings`` may be one mapping or one per party in layout order."""
    layout = deployment.layout(len(parts))
    holders = deployment.data_holders(len(parts))
    data = dict(zip(holders, parts, strict=True))
    per_party = [settings] * len(layout) if isinstance(settings, Mapping) else list(settings)
    by_rank = sorted(layout, key=layout.__getitem__)
    views = {name: deployment.public(name, data.get(name), per_party[layout[name]]) for name in by_rank}
    # announcements cross the links as JSON: every party configures from the decoded copy
    return layout, json.loads(json.dumps(views))


def run_deployment(
    deployment: Deployment,
    parts: Sequence[np.ndarray],
    settings: Mapping[str, Any],
    *,
    noise_seed: int | None,
    timeout: float = 60.0,
) -> HarnessRun:
    """Run every party of ``deployment`` as a thread; return the result party's JSON fields."""
    layout, views = announce(deployment, parts, settings)
    holders = deployment.data_holders(len(parts))
    data = dict(zip(holders, parts, strict=True))
    configs = {name: deployment.configure(dict(views), len(parts)) for name in layout}
    caps = {name: deployment.message_cap(configs[name]) for name in layout}
    roles = {
        name: deployment.role(
            name, configs[name], data.get(name), deployment.generator(name, layout, noise_seed)
        )
        for name in layout
    }
    sizes: list[int] = []
    lock = threading.Lock()
    run = run_inprocess(roles, timeout=timeout, wrap_channel=lambda name, ch: SizingChannel(ch, sizes, lock))
    party = deployment.result_party(layout)
    result = deployment.result(party, configs[party], run.outputs[party])
    return HarnessRun(result, configs[party], min(caps.values()), max(sizes, default=0), run, layout)
