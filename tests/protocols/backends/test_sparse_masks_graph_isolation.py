"""Issue 35: a sparse mask graph that isolates a contributor is refused before any input leaves it.

An isolated contributor of the ``additive-sparse-masks`` mode shares no mask,
so its masked input would be its plain input (Bell et al. 2020, Lemma 3.3).
The receiver refuses such a graph before it sends the seed, and a contributor
refuses a seed whose graph leaves it alone (a receiver that chose the seed).
"""

from __future__ import annotations

import numpy as np
import pytest

from protocols import AdditiveBackend
from protocols.backends.sparse_masks import GraphPlan, agree_sparse_keys, mask_graph
from protocols.errors import PeerFailureError, ProtocolError
from protocols.runtime import run_inprocess
from protocols.secure_sum import run_secure_sum

NAMES = tuple(f"p{i}" for i in range(5))
#: Expected degree 1 of 4: edge probability 1/4, so a seed that isolates a contributor is easy to find.
PLAN = GraphPlan(n_contributors=5, max_colluders=0, neighbours=1, log2_failure=0.0)
#: For this seed G(5, 1/4) is {p0-p2, p3-p4}: p1 alone.
ISOLATING_SEED = bytes(32)


def test_the_seed_really_isolates_p1():
    graph = mask_graph(ISOLATING_SEED, NAMES, PLAN.edge_probability)
    assert [name for name, peers in graph.items() if not peers] == ["p1"]
    assert all(graph[name] for name in NAMES if name != "p1")


def test_the_receiver_refuses_a_graph_with_an_isolated_contributor_before_sending_the_seed():
    received: dict[str, object] = {}

    def receiver(party):
        return agree_sparse_keys(party, NAMES, "server", PLAN, ISOLATING_SEED)

    def contributor(party):
        try:
            received[party.name] = party.recv("server")
        except PeerFailureError:
            received[party.name] = None
        return None

    roles = {name: contributor for name in NAMES}
    with pytest.raises(ProtocolError, match=r"left \['p1'\] without neighbours"):
        run_inprocess({**roles, "server": receiver}, timeout=10)
    assert received == dict.fromkeys(NAMES)  # no contributor got the seed


def test_a_contributor_refuses_a_seed_that_isolates_it_and_sends_nothing():
    """A receiver that picks the seed (no check of its own) cannot isolate a victim."""
    sent: dict[str, int] = {}

    def cheating_receiver(party):
        for name in NAMES:
            party.send(name, {"seed": ISOLATING_SEED})
        return None

    def contributor(party):
        try:
            return agree_sparse_keys(party, NAMES, "server", PLAN, None)
        finally:
            sent[party.name] = party.channel.meter.messages_sent

    roles = {name: contributor for name in NAMES}
    with pytest.raises(ProtocolError, match=r"leaves 'p1' without neighbours \(0 of 4 contributors\)"):
        run_inprocess({**roles, "server": cheating_receiver}, timeout=10)
    assert sent["p1"] == 0


def test_an_honest_sparse_sum_still_adds_up():
    values = {name: np.full(3, float(i)) for i, name in enumerate(NAMES)}
    total, _ = run_secure_sum(values, receiver="server", backend=AdditiveBackend("sparse-masks"))
    np.testing.assert_allclose(total, np.full(3, 10.0))
