"""The star sum over a sparse mask graph (issue 40): neighbourhoods, dropout, message counts, plan checks."""

from __future__ import annotations

import numpy as np
import pytest

from mpc_pca.integrations.star_sum import client, server
from mpc_pca.integrations.star_sum.graph import derive
from mpc_pca.integrations.star_sum.protocol import SumPlan
from protocols.errors import DropoutError, InputValidationError, ProtocolError
from protocols.shamir import SHARE_BYTES

SHAPES = [(2, 2), (3,)]
#: (nodes, threshold, max_colluders) of the three sizes tested.
SIZES = [(10, 7, 1), (40, 28, 2), (100, 70, 5)]


def nodes_of(n):
    return [str(1000 + 7 * i) for i in range(n)]


def updates(nodes, seed):
    rng = np.random.default_rng(seed)
    return {u: [rng.uniform(-8, 8, s) for s in SHAPES] for u in nodes}, {
        u: float(1 + i % 9) for i, u in enumerate(nodes)
    }


def plain_sum(ups, w, nodes):
    return sum(np.concatenate([[w[u]], *(w[u] * a.ravel() for a in ups[u])]) for u in nodes)


def run_round(plan, ups, w, dropped=()):
    """Every stage in process; nodes in ``dropped`` vanish after stage ``shares``. Returns total, server, bytes."""
    nodes = plan.contributors
    received = dict.fromkeys(nodes, 0)
    sent = dict.fromkeys(nodes, 0)
    srv = server.ServerSum(plan)
    states, keys = {}, {}
    for u in nodes:
        states[u], k = client.start(u, plan, ups[u], w[u])
        keys[u] = (k["mask_pk"], k["enc_pk"])
        sent[u] += len(k["mask_pk"]) + len(k["enc_pk"])
    srv.take_keys(keys)
    shares = {}
    for u in nodes:
        mask_pks, enc_pks, _, _ = srv.keys_for(u)
        received[u] += sum(len(k) for k in (*mask_pks.values(), *enc_pks.values()))
        shares[u] = client.share(states[u], mask_pks, enc_pks)
        sent[u] += sum(len(c) for c in shares[u].values())
    srv.take_shares(shares)
    maskers = [u for u in nodes if u not in dropped]
    masked = {}
    for u in maskers:
        incoming = srv.shares_for(u)
        received[u] += sum(len(c) for c in incoming.values())
        masked[u] = client.mask(states[u], incoming)
        sent[u] += len(masked[u][0])
    survivors = srv.take_masked(masked)
    answers = {}
    for u in survivors:
        answers[u] = client.answer(states[u], survivors)
        sent[u] += SHARE_BYTES * (len(answers[u]["b"]) + len(answers[u]["s"]))
    total = srv.finish(survivors, answers)
    return total, srv, {u: received[u] + sent[u] for u in nodes}


def sparse_plan(n, t, c, **kwargs):
    return SumPlan.make(1, nodes_of(n), t, SHAPES, 8.0, 10.0, graph="sparse", max_colluders=c, **kwargs)


@pytest.mark.parametrize(("n", "t", "c"), SIZES)
def test_the_sparse_sum_equals_the_plain_sum_within_the_bound(n, t, c):
    plan = sparse_plan(n, t, c)
    ups, w = updates(plan.contributors, seed=n)
    total, _, _ = run_round(plan, ups, w)
    assert np.max(np.abs(total - plain_sum(ups, w, plan.contributors))) <= plan.sum_error_bound(n)


@pytest.mark.parametrize("fraction", [0.1, 0.3])
def test_ten_and_thirty_percent_dropped_after_sharing_are_recovered(fraction):
    plan = sparse_plan(100, 70, 5, graph_seed=bytes(range(32)).hex())
    ups, w = updates(plan.contributors, seed=7)
    rng = np.random.default_rng(40)
    dropped = set(rng.choice(plan.contributors, size=int(fraction * 100), replace=False).tolist())
    alive = [u for u in plan.contributors if u not in dropped]
    total, srv, _ = run_round(plan, ups, w, dropped)
    assert sorted(srv.peers) == alive
    assert np.max(np.abs(total - plain_sum(ups, w, alive))) <= plan.sum_error_bound(len(alive))


def test_a_neighbourhood_with_too_few_answers_fails_naming_who_did_not_answer():
    plan = sparse_plan(40, 28, 2, graph_seed=bytes(32).hex())
    ups, w = updates(plan.contributors, seed=3)
    hood = plan.neighbourhoods()
    victim = min(plan.contributors, key=lambda u: len(hood.neighbours[u]))
    # Just enough of the victim's neighbours stay silent that fewer than its threshold answer,
    # while at least the plan's threshold of all nodes answer.
    silent = set(hood.neighbours[victim][: len(hood.group(victim)) - hood.thresholds[victim] + 1])
    assert 40 - len(silent) >= 28
    srv = server.ServerSum(plan)
    states = {}
    keys = {}
    for u in plan.contributors:
        states[u], k = client.start(u, plan, ups[u], w[u])
        keys[u] = (k["mask_pk"], k["enc_pk"])
    srv.take_keys(keys)
    srv.take_shares({u: client.share(states[u], *srv.keys_for(u)[:2]) for u in plan.contributors})
    survivors = srv.take_masked({u: client.mask(states[u], srv.shares_for(u)) for u in plan.contributors})
    answers = {u: client.answer(states[u], survivors) for u in survivors if u not in silent}
    with pytest.raises(DropoutError, match=rf"node {victim}'s neighbourhood") as info:
        srv.finish(survivors, answers)
    assert set(info.value.dropped) <= silent and info.value.dropped


def test_a_node_exchanges_keys_and_shares_with_its_neighbours_only_and_bytes_drop():
    n, t, c = 100, 70, 5
    ups, w = updates(nodes_of(n), seed=11)
    plan = sparse_plan(n, t, c)
    complete = SumPlan.make(1, nodes_of(n), t, SHAPES, 8.0, 10.0)
    _, srv, sparse_bytes = run_round(plan, ups, w)
    _, _, complete_bytes = run_round(complete, ups, w)
    hood = plan.neighbourhoods()
    for u in plan.contributors:
        # Keys relayed, shares received and masks used: exactly the node's neighbours.
        assert set(srv.keys_for(u)[0]) == set(hood.group(u))
        assert set(srv.shares_for(u)) == set(hood.neighbours[u])
        assert set(srv.peers[u]) == set(hood.neighbours[u])
    degrees = [len(v) for v in hood.neighbours.values()]
    assert max(degrees) < n - 1 and np.mean(degrees) < 0.5 * (n - 1)
    assert np.mean(list(sparse_bytes.values())) < 0.6 * np.mean(list(complete_bytes.values()))


def test_plans_with_other_graph_settings_have_other_digests():
    nodes = nodes_of(10)
    complete = SumPlan.make(1, nodes, 7, SHAPES, 8.0, 10.0)
    sparse = SumPlan.make(1, nodes, 7, SHAPES, 8.0, 10.0, graph="sparse", max_colluders=1)
    reseeded = SumPlan.make(1, nodes, 7, SHAPES, 8.0, 10.0, graph="sparse", max_colluders=1)
    assert len({complete.digest(), sparse.digest(), reseeded.digest()}) == 3
    assert SumPlan.from_config(sparse.to_config()) == sparse


def test_a_node_refuses_a_plan_whose_degree_is_below_what_its_colluder_bound_needs():
    plan = sparse_plan(100, 70, 5)
    config = {**plan.to_config(), "neighbours": 10}
    with pytest.raises(ProtocolError, match=r"neighbours=10 is too few .* use neighbours >= 39"):
        SumPlan.from_config(config)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"graph": "ring"}, r"graph must be one of \['complete', 'sparse'\], got 'ring'"),
        ({"neighbours": 5}, r"apply only to graph='sparse'"),
        ({"graph": "sparse", "max_colluders": 69}, r"max_colluders=69 .* must be at most 68"),
        ({"graph": "sparse", "max_colluders": -1}, r"max_colluders must be a non-negative integer, got -1"),
        ({"graph": "sparse", "max_colluders": 5, "neighbours": 5}, r"neighbours=5 is too few .* >= 39"),
        # 34 colluders need every neighbourhood's majority above 34: no draw of G(100, 0.9..) gives that.
        ({"graph": "sparse", "max_colluders": 34}, r"share threshold is \d+, not above max_colluders=34"),
    ],
)
def test_impossible_graph_settings_are_refused_with_the_value_and_its_limit(kwargs, message):
    with pytest.raises(InputValidationError, match=message):
        SumPlan.make(1, nodes_of(100), 70, SHAPES, 8.0, 10.0, **kwargs)


def test_every_node_derives_the_same_graph_from_the_plan_and_thresholds_are_neighbourhood_majorities():
    plan = sparse_plan(40, 28, 2)
    again = SumPlan.from_config(plan.to_config())
    derive.cache_clear()
    hood = again.neighbourhoods()
    assert hood == plan.neighbourhoods()
    for u, peers in hood.neighbours.items():
        assert u not in peers and all(u in hood.neighbours[v] for v in peers)  # symmetric
        assert 2 * hood.thresholds[u] > len(peers) + 1 and hood.thresholds[u] > plan.max_colluders
