"""Masking a second sum with the pairwise keys agreed for the first (``AdditiveBackend(keys_from=...)``)."""

import numpy as np
import pytest

from protocols import AdditiveBackend, FixedPointCodec
from protocols.backends.sparse_masks import mask_graph, plan_graph
from protocols.errors import InputValidationError, ProtocolError
from protocols.runtime import run_inprocess
from tests.helpers.oracles import ring_sum_reference

SEED = bytes(range(32))


def two_sums(mode: str, names, first, second, extra: dict | None = None):
    """A sum of ``first`` to the server, then one of ``second`` to names[0] with the server's keys."""
    extra = extra or {}
    relayed = AdditiveBackend(mode, **extra)
    reused = AdditiveBackend(
        mode, keys_from="server", **{k: v for k, v in extra.items() if k != "graph_seed"}
    )
    states = {}

    def contributor(party):
        a = relayed.secure_sum(party, first[party.name], contributors=names, receiver="server")
        b = reused.secure_sum(party, second[party.name], contributors=names, receiver=names[0])
        states[party.name] = next(v for k, v in party.context.items() if k.endswith("|".join(names)))
        return a, b

    roles = {n: contributor for n in names}
    roles["server"] = lambda party: relayed.secure_sum(party, None, contributors=names, receiver="server")
    run = run_inprocess(roles)
    return run, states


@pytest.mark.parametrize("mode", ["masks", "sparse-masks"])
def test_the_second_sum_is_the_exact_ring_sum_and_uses_the_next_streams(mode):
    names = tuple(f"p{i:02d}" for i in range(9))
    rng = np.random.default_rng(4)
    first = {n: rng.normal(scale=50.0, size=(3, 4)) for n in names}
    second = {n: rng.normal(scale=50.0, size=7) for n in names}
    extra = {"graph_seed": SEED} if mode == "sparse-masks" else {}
    run, states = two_sums(mode, names, first, second, extra)
    codec = FixedPointCodec(20)
    assert run.outputs["server"].tobytes() == ring_sum_reference(list(first.values()), codec).tobytes()
    opened = run.outputs[names[0]][1]
    assert opened.tobytes() == ring_sum_reference(list(second.values()), codec).tobytes()
    assert all(run.outputs[n][1] is None for n in names[1:])
    # one key agreement, two sums: every contributor's stream counter moved on twice
    assert {state["counter"] for state in states.values()} == {2}


def test_the_second_sum_sends_one_message_per_contributor():
    names = tuple(f"p{i:02d}" for i in range(40))
    values = {n: np.ones(3) for n in names}
    run, states = two_sums("sparse-masks", names, values, values, {"graph_seed": SEED})
    graph = mask_graph(SEED, names, plan_graph(40).edge_probability)
    for n in names[1:]:
        # a key to each larger neighbour, then one masked array per sum; no second key agreement
        assert run.reports[n].messages_sent == sum(peer > n for peer in graph[n]) + 2
        assert sorted(states[n]["keys"]) == list(graph[n]) and len(graph[n]) < 39


def test_a_contributor_without_keys_from_that_relay_refuses():
    names = ("a", "b", "c")
    reused = AdditiveBackend("sparse-masks", keys_from="server")
    roles = {
        n: (lambda party: reused.secure_sum(party, np.ones(2), contributors=names, receiver="a"))
        for n in names
    }
    with pytest.raises(ProtocolError, match="no additive-sparse-masks keys agreed through 'server'"):
        run_inprocess(roles)


@pytest.mark.parametrize(
    "kwargs",
    [{"mode": "shares"}, {"mode": "masks", "dropout_threshold": 2}, {"mode": "masks", "keys_from": ""}],
)
def test_keys_from_is_refused_where_there_are_no_pairwise_keys_to_reuse(kwargs):
    kwargs = {"keys_from": "server", **kwargs}
    with pytest.raises(InputValidationError, match="keys_from"):
        AdditiveBackend(**kwargs)
