"""The in-process link model: RTT/2 delay, uplink serialisation, order, and unchanged results."""

from __future__ import annotations

import time

import numpy as np
import pytest

from protocols.errors import InputValidationError
from protocols.runtime import run_inprocess
from protocols.testing.link_model import LinkProfile, ModelledLinks

#: Slack for thread start-up and scheduling on a loaded machine (the model never delivers early).
SLACK = 0.5


def _run(profile: LinkProfile, roles):
    links = ModelledLinks(profile)
    start = time.perf_counter()
    run = run_inprocess(roles, wrap_channel=links.wrap)
    return run, time.perf_counter() - start, links


def test_one_message_arrives_after_half_the_rtt_plus_its_transmission_time():
    payload = bytes(50_000)  # 400,000 bits at 4 Mbit/s: 0.1 s on the uplink
    profile = LinkProfile(rtt_seconds=0.2, bandwidth_bits_per_second=4e6)
    stamps: dict[str, float] = {}

    def sender(p):
        stamps["sent"] = time.perf_counter()
        p.send("b", payload)

    def receiver(p):
        data = p.recv("a")
        stamps["received"] = time.perf_counter()
        return len(data)

    run, _, links = _run(profile, {"a": sender, "b": receiver})
    nbytes = run.reports["a"].bytes_sent
    assert nbytes >= len(payload)
    expected = 0.1 + 8 * nbytes / 4e6
    elapsed = stamps["received"] - stamps["sent"]
    assert expected <= elapsed < expected + SLACK
    assert run.outputs["b"] == len(payload) and links.delivered == 1


def test_back_to_back_messages_share_the_uplink_and_arrive_in_order():
    profile = LinkProfile(rtt_seconds=0.0, bandwidth_bits_per_second=8e6)  # 1 MB/s
    blocks = [bytes([i]) * 100_000 for i in range(3)]  # 0.1 s each on the uplink
    stamps: dict[str, float] = {}

    def sender(p):
        stamps["sent"] = time.perf_counter()
        for block in blocks:
            p.send("b", block)  # never blocks: the uplink queues them

    def receiver(p):
        got = [p.recv("a") for _ in blocks]
        stamps["received"] = time.perf_counter()
        return got

    run, _, _ = _run(profile, {"a": sender, "b": receiver})
    assert run.outputs["b"] == blocks
    serialised = 8 * run.reports["a"].bytes_sent / 8e6  # about 0.3 s: one after another
    assert serialised <= stamps["received"] - stamps["sent"] < serialised + SLACK


def test_two_senders_do_not_share_an_uplink():
    profile = LinkProfile(rtt_seconds=0.0, bandwidth_bits_per_second=8e6)
    block = bytes(200_000)  # 0.2 s on one uplink

    def sender(p):
        p.send("c", block)

    def receiver(p):
        return [len(p.recv(frm)) for frm in ("a", "b")]

    run, elapsed, _ = _run(profile, {"a": sender, "b": sender, "c": receiver})
    one = 8 * run.reports["a"].bytes_sent / 8e6
    assert one <= elapsed < 2 * one  # in parallel: not the 0.4 s one shared uplink would take


def test_a_ping_pong_costs_one_rtt_per_exchange():
    rtt, exchanges = 0.06, 5

    def ping(p):
        for i in range(exchanges):
            p.send("b", i)
            assert p.recv("b") == i

    def pong(p):
        for _ in range(exchanges):
            p.send("a", p.recv("a"))

    run, elapsed, links = _run(LinkProfile(rtt_seconds=rtt), {"a": ping, "b": pong})
    assert exchanges * rtt <= elapsed < exchanges * rtt + SLACK
    assert links.delivered == 2 * exchanges and run.reports["a"].rounds == exchanges
    assert links.depth == 2 * exchanges  # every message waits for the one before it


def test_message_depth_follows_chains_through_other_parties_not_independent_sends():
    def relay(p):
        p.send("c", p.recv("a"))

    def source(p):
        p.send("b", 1)
        p.send("c", 2)  # independent of the chain through b

    def sink(p):
        return [p.recv("a"), p.recv("b")]

    run, _, links = _run(LinkProfile(0.0), {"a": source, "b": relay, "c": sink})
    assert run.outputs["c"] == [2, 1]
    assert links.depth == 2 and links.delivered == 3 and run.reports["a"].rounds == 1


def test_a_pppca_ss_covariance_fit_is_bit_identical_over_the_model():
    from mpc_pca.deploy.local import run_threads

    rng = np.random.default_rng(3)
    parts = np.array_split(rng.normal(size=(300, 6)) @ rng.normal(size=(6, 6)), 3)
    settings = {"n_components": 3}
    plain = run_threads("pppca-ss", parts, settings)
    modelled = run_threads(
        "pppca-ss", parts, settings, link_profile=LinkProfile(0.01, bandwidth_bits_per_second=1e8)
    )
    assert np.array_equal(np.asarray(plain["components"]), np.asarray(modelled["components"]))
    assert np.array_equal(np.asarray(plain["explained_variance"]), np.asarray(modelled["explained_variance"]))
    assert {n: r["bytes_sent"] for n, r in plain["report"].items()} == {
        n: r["bytes_sent"] for n, r in modelled["report"].items()
    }


@pytest.mark.parametrize(
    ("rtt", "bandwidth", "named"),
    [(-0.01, None, "rtt_seconds=-0.01"), (float("inf"), None, "rtt_seconds=inf"), (0.0, 0.0, "bandwidth"),
     (0.0, -5.0, "bandwidth"), (0.0, float("nan"), "bandwidth"), (True, None, "rtt_seconds=True")],
)  # fmt: skip
def test_a_profile_refuses_impossible_links(rtt, bandwidth, named):
    with pytest.raises(InputValidationError, match=named):
        LinkProfile(rtt, bandwidth)


def test_the_model_needs_a_profile():
    with pytest.raises(InputValidationError, match="LinkProfile"):
        ModelledLinks(0.1)  # type: ignore[arg-type]
