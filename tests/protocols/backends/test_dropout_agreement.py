"""Survivor sets agreed or nothing revealed (issue 35): the receiver equivocates, parties as threads.

The attack of issue 35 at a threshold the rule ``2 t > M`` still allows: five
providers, ``t = 3``; the receiver tells ``p0, p1, p2`` that only they survived
and tells ``p3, p4`` that everybody did. Before the fix each group's digests
matched inside the group and a missing digest from the other group was taken
for a dropout, so ``p3, p4`` revealed their shares of ``b_3, b_4`` while
``p0 - p2`` revealed shares of ``s_3, s_4``. Now every honest provider aborts,
naming the receiver, and no share of a self-mask seed of a provider that
another honest provider treats as dropped leaves anyone.
"""

from __future__ import annotations

import numpy as np
import pytest

from protocols import AdditiveBackend, FixedPointCodec
from protocols.backends import dropout
from protocols.backends.dropout_agreement import check_dropout_threshold
from protocols.errors import InputValidationError, ProtocolError
from protocols.testing.recording import run_recorded

PROVIDERS = tuple(f"p{i}" for i in range(5))
SERVER = "server"
CODEC = FixedPointCodec(20)


def _roles(backend: AdditiveBackend):
    values = {p: np.full(4, 10.0 * i) for i, p in enumerate(PROVIDERS)}

    def provider(name):
        return lambda party: backend.secure_sum(party, values[name], contributors=PROVIDERS, receiver=SERVER)

    def server(party):
        return backend.secure_sum(party, None, contributors=PROVIDERS, receiver=SERVER)

    return {**{p: provider(p) for p in PROVIDERS}, SERVER: server}


def _restricted(message: dict, survivors: list[str]) -> dict:
    if "peers" not in message:  # the announcement before issue 35 (to run these tests against it)
        return {**message, "survivors": survivors}
    return {**message, "survivors": survivors, "peers": {s: message["peers"][s] for s in survivors}}


def _announced(recorded) -> dict[str, list[str]]:
    """The survivor set each provider was told."""
    return {
        d.receiver: d.message["survivors"]
        for d in recorded.recorder.sent_by(SERVER)
        if isinstance(d.message, dict) and "survivors" in d.message
    }


def _answers(recorded) -> dict[str, dict]:
    return {
        d.sender: d.message
        for d in recorded.recorder.received_by(SERVER)
        if isinstance(d.message, dict) and {"b", "s"} <= set(d.message)
    }


def test_an_equivocating_receiver_gets_no_self_mask_share_of_a_provider_others_treat_as_dropped(monkeypatch):
    send_or_gone = dropout._send_or_gone

    def equivocating(party, peer, message):
        if isinstance(message, dict) and "survivors" in message and peer in ("p0", "p1", "p2"):
            message = _restricted(message, ["p0", "p1", "p2"])
        return send_or_gone(party, peer, message)

    monkeypatch.setattr(dropout, "_send_or_gone", equivocating)
    monkeypatch.setattr(dropout, "_check_answer", lambda message, *_: message)  # it takes every answer
    recorded = run_recorded(_roles(AdditiveBackend("masks", CODEC, dropout_threshold=3, dropout_timeout=5.0)))
    announced = _announced(recorded)
    assert announced["p0"] == ["p0", "p1", "p2"] and announced["p3"] == list(PROVIDERS)  # the attack ran
    treated_dropped = {u for p in PROVIDERS for u in PROVIDERS if u not in announced[p]}
    for sender, answer in _answers(recorded).items():
        leaked = treated_dropped & set(answer["b"])
        assert not leaked, f"{sender} revealed shares of the self-mask seeds of {leaked}"
    for p in PROVIDERS:
        error = recorded.errors.get(p)
        assert isinstance(error, ProtocolError), (p, error)
        assert f"{SERVER!r} equivocated" in str(error) or f"{SERVER!r} is the source" in str(error), (
            p,
            error,
        )
    assert _answers(recorded) == {}  # nobody revealed anything at all


def test_a_survivor_set_smaller_than_the_threshold_is_refused_by_every_provider(monkeypatch):
    """The receiver tells everyone the same set of 2 < t = 3: consistent, but refused."""
    send_or_gone = dropout._send_or_gone

    def too_small(party, peer, message):
        if isinstance(message, dict) and "survivors" in message:
            message = _restricted(message, ["p0", "p1"])
        return send_or_gone(party, peer, message)

    monkeypatch.setattr(dropout, "_send_or_gone", too_small)
    recorded = run_recorded(_roles(AdditiveBackend("masks", CODEC, dropout_threshold=3, dropout_timeout=5.0)))
    for p in PROVIDERS:
        error = recorded.errors.get(p)
        assert isinstance(error, ProtocolError), (p, error)
        assert f"{SERVER!r} announced 2 survivors, below the threshold 3" in str(error), (p, error)
    assert _answers(recorded) == {}


def test_a_receiver_that_misstates_a_survivors_mask_list_is_refused(monkeypatch):
    """Claiming p1 did not mask with p0 would make p0 reveal their pair key: p1 refuses, so p0 aborts."""
    send_or_gone = dropout._send_or_gone

    def misstated(party, peer, message):
        if isinstance(message, dict) and "survivors" in message:
            peers = {**message["peers"], "p1": [v for v in message["peers"]["p1"] if v != "p0"]}
            message = {**message, "peers": peers}
        return send_or_gone(party, peer, message)

    monkeypatch.setattr(dropout, "_send_or_gone", misstated)
    recorded = run_recorded(_roles(AdditiveBackend("masks", CODEC, dropout_threshold=3, dropout_timeout=5.0)))
    assert "'p1' masked with ['p2', 'p3', 'p4'], but 'p1' masked with ['p0', 'p2', 'p3', 'p4']" in str(
        recorded.errors["p1"]
    )
    assert all(isinstance(recorded.errors.get(p), ProtocolError) for p in PROVIDERS)
    assert _answers(recorded) == {}


@pytest.mark.parametrize(
    ("t", "m", "least"), [(2, 4, 3), (3, 6, 4), (2, 3, None), (3, 5, None), (4, 5, None)]
)
def test_the_threshold_must_exceed_half_the_providers(t, m, least):
    if least is None:
        assert check_dropout_threshold(t, m) == t
        return
    with pytest.raises(InputValidationError, match=rf"t={t} is too small for M={m} providers.*t >= {least}"):
        check_dropout_threshold(t, m)


def test_a_threshold_of_half_the_providers_is_refused_before_anything_is_sent():
    backend = AdditiveBackend("masks", CODEC, dropout_threshold=2)
    recorded = run_recorded(
        {
            **{
                p: (
                    lambda party, p=p: backend.secure_sum(
                        party, np.ones(2), contributors=("a", "b", "c", "d"), receiver="r"
                    )
                )
                for p in "abcd"
            },
            "r": lambda party: backend.secure_sum(
                party, None, contributors=("a", "b", "c", "d"), receiver="r"
            ),
        }
    )
    assert all(
        isinstance(e, InputValidationError) and "t=2 is too small for M=4 providers" in str(e)
        for e in recorded.errors.values()
    )
    assert len(recorded.errors) == 5
    assert not [d for p in "abcdr" for d in recorded.recorder.sent_by(p)]
