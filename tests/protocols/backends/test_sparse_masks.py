"""The sparse-graph pairwise-mask mode of the additive backend (Bell et al. 2020)."""

import math

import numpy as np
import pytest

from protocols import AdditiveBackend, FixedPointCodec
from protocols.backends import make_backend
from protocols.backends.sparse_masks import (
    add_masks,
    agree_sparse_keys,
    graph_neighbours,
    log2_disconnection_bound,
    mask_graph,
    plan_graph,
)
from protocols.errors import InputValidationError, ProtocolError
from protocols.prg import RingPRG
from protocols.runtime import run_inprocess
from protocols.secure_sum import run_secure_sum
from tests.helpers.oracles import ring_sum_reference

SEED = bytes(range(32))


@pytest.mark.parametrize("m", [2, 3, 7, 33, 100])
def test_sparse_sum_equals_plain_sum(m):
    rng = np.random.default_rng(m)
    values = [rng.normal(scale=100.0, size=(4, 3)) for _ in range(m)]
    codec = FixedPointCodec(20)
    backend = AdditiveBackend("sparse-masks", codec)
    total, run = run_secure_sum(
        {f"p{i:03d}": v for i, v in enumerate(values)}, receiver="server", backend=backend
    )
    np.testing.assert_array_equal(total, ring_sum_reference(values, codec))
    assert np.allclose(total, np.sum(values, axis=0), atol=m * 2.0**-21)
    if m == 100:  # the point of the mode: far fewer key agreements than the complete graph
        plan = backend.plan(m)
        assert plan.neighbours < m - 1
        assert run.reports["server"].messages_sent == m  # one graph message per contributor


def test_sparse_sum_with_contributing_receiver():
    values = {f"p{i}": np.full(5, float(i)) for i in range(6)}
    total, _ = run_secure_sum(values, receiver="p3", backend=AdditiveBackend("sparse-masks", graph_seed=SEED))
    np.testing.assert_allclose(total, np.full(5, 15.0), atol=1e-5)


def test_graph_is_symmetric_deterministic_and_sparse():
    names = tuple(f"p{i:03d}" for i in range(200))
    plan = plan_graph(200, max_colluders=20)
    graph = mask_graph(SEED, names, plan.edge_probability)
    assert graph == mask_graph(SEED, names, plan.edge_probability)
    assert graph != mask_graph(bytes(32), names, plan.edge_probability)
    for node, peers in graph.items():
        assert node not in peers
        assert all(node in graph[peer] for peer in peers)
    degrees = np.array([len(v) for v in graph.values()])
    # Binomial(199, p) degrees: the mean is within 5 standard errors of k.
    p = plan.edge_probability
    assert abs(degrees.mean() - plan.neighbours) < 5 * math.sqrt(199 * p * (1 - p) / 200) * 2
    assert degrees.max() < 199


def test_masks_cancel_and_hide_each_input():
    names = tuple(f"p{i}" for i in range(12))
    plan = plan_graph(12, max_colluders=2, neighbours=8, security_bits=8)
    graph = mask_graph(SEED, names, plan.edge_probability)
    keys = {(a, b): bytes([i]) * 32 for i, (a, b) in enumerate((a, b) for a in names for b in names if a < b)}
    rng = np.random.default_rng(3)
    encodings = {n: rng.integers(0, 2**63, size=20, dtype=np.uint64) for n in names}
    total = np.zeros(20, dtype=np.uint64)
    for n in names:
        state = {"keys": {peer: keys[tuple(sorted((n, peer)))] for peer in graph[n]}, "counter": 0}
        masked = add_masks(n, state, encodings[n].copy())
        if graph[n]:
            assert not np.array_equal(masked, encodings[n])
        total += masked
    np.testing.assert_array_equal(total, sum(encodings.values(), np.zeros(20, dtype=np.uint64)))


def test_bound_matches_small_graphs_exactly_or_from_above():
    p = 0.3
    assert log2_disconnection_bound(2, p) == pytest.approx(math.log2(1 - p))
    exact_three = 1 - (3 * p**2 * (1 - p) + p**3)  # connected iff at least two of the three edges
    assert 2 ** log2_disconnection_bound(3, p) >= exact_three - 1e-12


def test_bound_holds_empirically():
    # Monte Carlo of G(8, 0.35): the empirical disconnection rate stays below the bound
    # (one-sided binomial test at alpha = 1e-3, fixed seed).
    rng = np.random.default_rng(7)
    h, p, trials = 8, 0.35, 4000
    disconnected = 0
    for _ in range(trials):
        adj = np.triu(rng.random((h, h)) < p, 1)
        adj = adj | adj.T
        seen, stack = {0}, [0]
        while stack:
            for j in np.flatnonzero(adj[stack.pop()]):
                if int(j) not in seen:
                    seen.add(int(j))
                    stack.append(int(j))
        disconnected += len(seen) < h
    bound = 2 ** log2_disconnection_bound(h, p)
    z = (disconnected / trials - bound) / math.sqrt(bound * (1 - bound) / trials)
    assert z < 3.09


def test_plan_picks_logarithmic_degrees():
    ks = [plan_graph(m).neighbours for m in (100, 1000, 10_000)]
    assert ks[0] < ks[1] < ks[2] < 60  # grows, but like log M, not like M
    for m, k in zip((100, 1000, 10_000), ks, strict=True):
        assert log2_disconnection_bound(m - m // 3, k / (m - 1)) <= -40
        assert log2_disconnection_bound(m - m // 3, (k - 1) / (m - 1)) > -40


def test_too_few_honest_contributors_is_refused():
    values = {f"p{i}": np.ones(3) for i in range(10)}
    with pytest.raises(InputValidationError, match="leaves 1 honest contributor"):
        run_secure_sum(values, receiver="server", backend=AdditiveBackend("sparse-masks", max_colluders=9))
    with pytest.raises(InputValidationError, match=r"neighbours=3 is too few .* neighbours >= \d+"):
        run_secure_sum(
            values, receiver="server", backend=AdditiveBackend("sparse-masks", max_colluders=3, neighbours=3)
        )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mode": "masks", "neighbours": 3},
        {"mode": "sparse-masks", "max_colluders": -1},
        {"mode": "sparse-masks", "neighbours": 0},
        {"mode": "sparse-masks", "security_bits": 0},
        {"mode": "sparse-masks", "graph_seed": b"short"},
    ],
)
def test_bad_parameters_are_refused(kwargs):
    with pytest.raises(InputValidationError):
        AdditiveBackend(**kwargs)


def test_registry_name():
    backend = make_backend("additive-sparse-masks", max_colluders=2)
    assert backend.mode == "sparse-masks" and backend.name == "additive-sparse-masks"


def test_each_edge_stream_reads_on_from_sum_to_sum():
    """Two sums on one edge use consecutive keystream words, never the same ones twice."""
    key = bytes(range(32, 64))
    state = {"keys": {"b": key}, "counter": 0}
    first = add_masks("a", state, np.zeros(5, dtype=np.uint64))
    second = add_masks("a", state, np.zeros(3, dtype=np.uint64))
    stream = RingPRG(key, bytes(16)).ring_elements(8)
    np.testing.assert_array_equal(np.concatenate([first, second]), stream)
    assert state["counter"] == 2


def test_a_malformed_edge_key_is_refused_naming_its_sender():
    names = ("a", "b")
    plan = plan_graph(2, max_colluders=0)

    def honest(party):
        return agree_sparse_keys(party, names, "server", plan, SEED)

    def cheat(party):
        party.recv("server")
        party.send("b", b"short")

    with pytest.raises(ProtocolError, match="'a' sent a malformed seed"):
        run_inprocess({"a": cheat, "b": honest, "server": honest}, timeout=5)


@pytest.mark.parametrize("m", [2, 5, 100])
def test_a_contributors_own_row_is_its_row_of_the_whole_graph(m):
    names = tuple(f"p{i:03d}" for i in range(m))
    p = plan_graph(m).edge_probability
    graph = mask_graph(SEED, names, p)
    assert all(graph_neighbours(SEED, names, p, n) == graph[n] for n in names)
