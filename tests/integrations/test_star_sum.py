"""The star-topology secure sum of the Flower integration, driven without Flower (mpc_pca.integrations.star_sum)."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from mpc_pca.integrations.star_sum import client, server
from mpc_pca.integrations.star_sum.protocol import SumPlan, choose_frac_bits
from protocols.errors import DropoutError, InputValidationError, ProtocolError

NODES = ["101", "202", "303", "404", "505"]
SHAPES = [(3, 2), (4,)]


def updates(seed=0, bound=8.0):
    rng = np.random.default_rng(seed)
    return {n: [rng.uniform(-bound, bound, s) for s in SHAPES] for n in NODES}


def weights():
    return {n: float(i + 1) for i, n in enumerate(NODES)}


def plain_sum(ups, w, nodes):
    flat = {n: np.concatenate([a.ravel() for a in ups[n]]) for n in nodes}
    return np.concatenate([[sum(w[n] for n in nodes)], sum(w[n] * flat[n] for n in nodes)])


def run_until_masked(plan, ups, w, *, share_senders=NODES, maskers=NODES):
    """Stages keys, shares and masked over the nodes; returns the server and the client states."""
    srv = server.ServerSum(plan)
    states, keys = {}, {}
    for n in NODES:
        states[n], k = client.start(n, plan, ups[n], w[n])
        keys[n] = (k["mask_pk"], k["enc_pk"])
    srv.take_keys(keys)
    mask_pks, enc_pks = dict(srv.mask_pks), dict(srv.enc_pks)
    srv.take_shares({n: client.share(states[n], mask_pks, enc_pks) for n in share_senders})
    srv.take_masked({n: client.mask(states[n], srv.shares_for(n)) for n in maskers})
    return srv, states


def test_the_unmasked_total_is_the_plain_sum_within_the_stated_bound():
    plan = SumPlan.make(1, NODES, 3, SHAPES, 8.0, 100.0)
    ups, w = updates(), weights()
    srv, states = run_until_masked(plan, ups, w)
    survivors = sorted(NODES)
    total = srv.finish(survivors, {n: client.answer(states[n], survivors) for n in survivors[:3]})
    error = np.max(np.abs(total - plain_sum(ups, w, NODES)))
    assert error <= plan.sum_error_bound(5) < 1e-11


def test_masks_hide_each_input_and_cancel_only_after_unmasking():
    plan = SumPlan.make(1, NODES, 3, SHAPES, 8.0, 100.0)
    ups, w = updates(1), weights()
    srv, _ = run_until_masked(plan, ups, w)
    still_masked = plan.codec.decode(srv.total.copy())
    # The self-masks PRG(b_u) are still in: the raw total is far from the sum.
    assert np.max(np.abs(still_masked - plain_sum(ups, w, NODES))) > 1.0


def test_a_node_dropped_after_sending_shares_is_left_out_and_its_masks_removed():
    plan = SumPlan.make(1, NODES, 3, SHAPES, 8.0, 100.0)
    ups, w = updates(2), weights()
    alive = NODES[:3]
    srv, states = run_until_masked(plan, ups, w, maskers=alive)
    total = srv.finish(alive, {n: client.answer(states[n], alive) for n in alive})
    assert np.max(np.abs(total - plain_sum(ups, w, alive))) <= plan.sum_error_bound(3)


def test_too_few_masked_inputs_fail_naming_the_nodes_that_did_not_answer():
    plan = SumPlan.make(1, NODES, 3, SHAPES, 8.0, 100.0)
    with pytest.raises(DropoutError, match=r"stage 'masked'.*\['303', '404', '505'\]") as info:
        run_until_masked(plan, updates(), weights(), maskers=NODES[:2])
    assert info.value.dropped == ("303", "404", "505")


def test_too_few_unmasking_answers_fail_naming_who_did_not_answer():
    plan = SumPlan.make(1, NODES, 3, SHAPES, 8.0, 100.0)
    ups, w = updates(), weights()
    srv, states = run_until_masked(plan, ups, w)
    survivors = sorted(NODES)
    with pytest.raises(DropoutError, match=r"stage 'unmask'.*\['303', '404', '505'\]"):
        srv.finish(survivors, {n: client.answer(states[n], survivors) for n in survivors[:2]})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda a: [a[0], np.zeros(3)],
            r"node 101: array 1 of the update has shape \(3,\), the agreed shape is \(4,\)",
        ),
        (lambda a: [a[0].astype(np.int64), a[1]], r"node 101: array 0 of the update has dtype int64"),
        (lambda a: [a[0], np.full(4, 8.5)], r"node 101: array 1 .* value 8.5 at flat index 0, outside"),
        (lambda a: [a[0], np.array([0, np.nan, 0, 0])], r"node 101: array 1 .* nan at flat index 1"),
        (lambda a: a[:1], r"node 101: the update has 1 arrays, the agreed model has 2"),
    ],
)
def test_an_update_that_breaks_the_plan_is_refused_by_name_before_any_key_exists(change, message):
    plan = SumPlan.make(1, NODES, 3, SHAPES, 8.0, 100.0)
    with pytest.raises(InputValidationError, match=message):
        client.start("101", plan, change(updates()["101"]), 1.0)


def test_a_weight_above_the_limit_is_refused_by_name():
    plan = SumPlan.make(1, NODES, 3, SHAPES, 8.0, 100.0)
    with pytest.raises(InputValidationError, match=r"node 202: the update's weight .* 101"):
        client.start("202", plan, updates()["202"], 101)


def test_a_share_altered_by_the_relay_is_refused_naming_its_sender():
    plan = SumPlan.make(1, NODES, 3, SHAPES, 8.0, 100.0)
    srv = server.ServerSum(plan)
    states, keys = {}, {}
    for n in NODES:
        states[n], k = client.start(n, plan, updates()[n], 1.0)
        keys[n] = (k["mask_pk"], k["enc_pk"])
    srv.take_keys(keys)
    srv.take_shares({n: client.share(states[n], srv.mask_pks, srv.enc_pks) for n in NODES})
    incoming = srv.shares_for("101")
    incoming["303"] = incoming["303"][:-1] + bytes([incoming["303"][-1] ^ 1])
    with pytest.raises(ProtocolError, match="relayed from node 303 fail authentication"):
        client.mask(states["101"], incoming)


def test_a_second_survivor_set_cannot_open_an_input():
    plan = SumPlan.make(1, NODES, 3, SHAPES, 8.0, 100.0)
    _, states = run_until_masked(plan, updates(), weights())
    client.answer(states["101"], NODES)  # b-shares of everyone
    with pytest.raises(ProtocolError, match="refusing to reveal"):
        client.answer(states["101"], NODES[:4])  # would add the s-share of 505


def test_stages_out_of_order_are_refused():
    plan = SumPlan.make(1, NODES, 3, SHAPES, 8.0, 100.0)
    state, _ = client.start("101", plan, updates()["101"], 1.0)
    with pytest.raises(ProtocolError, match="stage 'masked' arrived after 'keys'"):
        client.mask(state, {})


def test_a_threshold_that_lets_two_disjoint_groups_finish_is_refused():
    with pytest.raises(InputValidationError, match="2\\*t > M"):
        SumPlan.make(1, NODES, 2, SHAPES, 8.0, 100.0)


def test_the_plan_round_trips_through_its_config_and_a_changed_scale_is_refused():
    plan = SumPlan.make(7, NODES, 3, SHAPES, 2.5, 50.0)
    assert SumPlan.from_config(plan.to_config()) == plan
    with pytest.raises(ProtocolError, match="frac_bits=20"):
        SumPlan.from_config({**plan.to_config(), "frac_bits": 20})


@pytest.mark.parametrize(("peak", "n"), [(8.0, 5), (8000.0, 10), (8e6, 100), (1e15, 1000), (3.0, 1)])
def test_the_scale_is_the_largest_that_keeps_the_sum_in_the_ring(peak, n):
    f = choose_frac_bits(peak, n)
    assert peak * n * 2.0**f < 2.0**62
    assert f == 52 or peak * n * 2.0 ** (f + 1) >= 2.0**62


def test_the_flower_package_without_flwr_gives_the_pip_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "flwr", None)  # an import of flwr now raises ImportError
    for name in [m for m in sys.modules if m.startswith("mpc_pca.integrations.flower")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match=r'pip install "mpc-pca\[flower\]"'):
        importlib.import_module("mpc_pca.integrations.flower")
