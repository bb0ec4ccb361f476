"""The cost structure of a PPPCA fit with many providers, counted, not timed (issue 28).

With sparse masks a provider opens one ChaCha20 stream per graph neighbour
for the whole fit (``k = O(log M)`` of them) and sends ``O(k)`` messages, the
server's answer check included; with full masks, ``M - 1`` streams per sum. A regression to per-pair work (share seeds to every peer) shows up
as a count that grows with ``M``.
"""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np
import pytest

from mpc_pca.pppca.top_k_check import power_steps
from mpc_pca.roles import provider_names
from protocols.backends import make_backend, sparse_masks
from protocols.prg import RingPRG
from tests.helpers import pppca_threads as driver

M = 64
#: Secure sums of the answer check (d = 6, k = 2: its top-k test's power steps).
P = power_steps(6, 2)


@pytest.fixture
def parts():
    rng = np.random.default_rng(28)
    mixing = rng.normal(size=(6, 6))
    return [rng.normal(size=(12, 6)) @ mixing + 5.0 for _ in range(M)]


def count_streams(monkeypatch) -> Counter:
    """ChaCha20 streams opened, by party thread (``party-<name>``)."""
    streams: Counter = Counter()
    lock = threading.Lock()
    original = RingPRG.__init__

    def counted(self, *args, **kwargs):
        with lock:
            streams[threading.current_thread().name] += 1
        original(self, *args, **kwargs)

    monkeypatch.setattr(RingPRG, "__init__", counted)
    return streams


def test_sparse_masks_cost_each_provider_its_neighbours_not_its_peers(monkeypatch, parts):
    streams = count_streams(monkeypatch)
    keys: dict[str, list[str]] = {}
    add_masks = sparse_masks.add_masks

    def recorded(me, state, encoded):
        keys[me] = sorted(state["keys"])
        return add_masks(me, state, encoded)

    monkeypatch.setattr(sparse_masks, "add_masks", recorded)
    backend = make_backend("additive-sparse-masks")
    model, _, run = driver.run_pppca(parts, 2, backend)
    assert model.components.shape == (2, 6)
    k = backend.plan(M).neighbours
    assert k <= 2 * np.log2(M) + 24  # what the security level asks for at M = 64 (34 today)
    for name in provider_names(M):
        degree = len(keys[name])
        assert degree < M - 1
        # one stream per neighbour for the whole run (masked sums: statistics, Gram, the answer
        # check's p), plus the public graph's; no stream per peer, none per sum
        assert streams[f"party-{name}"] == degree + 1, name
        # a key to each larger neighbour, two masked arrays, the check's p masked arrays (the first
        # with all k residual columns: larger, not more); provider0 also sends every other provider
        # the top-k test's start, the digest and the p opened sums (each with the next direction)
        larger = sum(peer > name for peer in keys[name])
        allowed = (3 * M + 5 + (P - 1) * (M - 1)) if name == "provider0" else 5 + (P - 1)
        assert run.reports[name].messages_sent <= larger + allowed, name


def test_full_masks_expand_one_stream_per_peer_and_sum(monkeypatch, parts):
    streams = count_streams(monkeypatch)
    _, _, run = driver.run_pppca(parts[:16], 2, make_backend("additive-masks"))
    for name in provider_names(16):
        # one stream per peer and masked sum: statistics, Gram and the answer check's p sums
        assert streams[f"party-{name}"] == (2 + P) * 15, name
        allowed = 3 * 16 + 5 + (P - 1) * 15 if name == "provider0" else 5 + (P - 1)
        assert run.reports[name].messages_sent <= allowed, name
