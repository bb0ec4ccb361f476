"""A provider that stalls half-way through dealing its keys, then resumes (issue 35), parties as threads.

``p2`` sends its keys and shares to ``p0`` and ``p1``, then stops (as under
``SIGSTOP``) until ``p3`` and ``p4`` have given up waiting for its keys and sent
their masked inputs without a mask with ``p2``; then it resumes. Its mask
lists and theirs disagree (``p2`` masked with ``p3``, ``p3`` not with ``p2``):
before the fix every party failed with "'p2' masked with 'p3' but 'p3' not
with 'p2'". Now the receiver announces every survivor's mask list, ``p2``
reveals the two pair keys nobody else will cancel, and the sum is exact.
If ``p2`` stays stopped until the survivor set is out, it is left out: ``p0``
and ``p1`` reveal their pair keys with it (only two of them hold shares of its
mask key, below the threshold), and the sum is the other four's.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from protocols import AdditiveBackend, FixedPointCodec
from protocols.backends import dropout
from protocols.runtime import run_inprocess
from protocols.testing.recording import run_recorded
from tests.helpers.oracles import ring_sum_reference

PROVIDERS = tuple(f"p{i}" for i in range(5))
SERVER = "server"
CODEC = FixedPointCodec(20)


@pytest.fixture
def stall(monkeypatch):
    """``p2`` stops before sending its keys to ``p3``, until the event named by the test is set."""
    events = {"inputs": threading.Event(), "announced": threading.Event(), "resume on": None, "before": "p3"}
    gave_up: set[str] = set()
    lock = threading.Lock()
    send_or_gone, send_input = dropout._send_or_gone, dropout.send_masked_input

    def stalling(party, peer, message):
        if party.name == "p2" and peer == events["before"] and isinstance(message, dict) and "pk" in message:
            assert events[events["resume on"]].wait(60), "the stalled provider was never resumed"
        sent = send_or_gone(party, peer, message)
        if isinstance(message, dict) and "survivors" in message and peer == "p2":
            events["announced"].set()
        return sent

    def masked_input(party, receiver, message):
        if party.name in ("p3", "p4") or (events["before"] == "p0" and party.name != "p2"):
            assert "p2" not in message["peers"]  # they gave up waiting for p2's keys
            with lock:
                gave_up.add(party.name)
                if gave_up == ({"p3", "p4"} if events["before"] == "p3" else {"p0", "p1", "p3", "p4"}):
                    events["inputs"].set()
        send_input(party, receiver, message)

    monkeypatch.setattr(dropout, "_send_or_gone", stalling)
    monkeypatch.setattr(dropout, "send_masked_input", masked_input)
    return events


def _run(values, recorded=False):
    backend = AdditiveBackend("masks", CODEC, dropout_threshold=3, dropout_timeout=8.0)

    def provider(name):
        def run(party):
            backend.secure_sum(party, values[name], contributors=PROVIDERS, receiver=SERVER)
            return dropout.last_outcome(party)

        return run

    def server(party):
        total = backend.secure_sum(party, None, contributors=PROVIDERS, receiver=SERVER)
        return total, dropout.last_outcome(party)

    roles = {**{p: provider(p) for p in PROVIDERS}, SERVER: server}
    if recorded:
        return run_recorded(roles, timeout=30.0)
    return run_inprocess(roles, timeout=30.0).outputs


def _values():
    rng = np.random.default_rng(35)
    return {p: rng.normal(size=7) * 50 for p in PROVIDERS}


def test_a_provider_that_stalls_and_resumes_in_time_counts_and_the_sum_is_exact(stall):
    stall["resume on"] = "inputs"
    values = _values()
    outputs = _run(values)
    total, outcome = outputs[SERVER]
    assert outcome.dropped == ()
    assert np.array_equal(total, ring_sum_reference(list(values.values()), CODEC))
    assert all(outputs[p].dropped == () and not outputs[p].me_dropped for p in PROVIDERS)


def test_a_provider_that_stalls_past_the_survivor_set_is_left_out_and_the_sum_is_the_others(stall):
    stall["resume on"] = "announced"
    values = _values()
    outputs = _run(values)
    total, outcome = outputs[SERVER]
    assert outcome.dropped == ("p2",)
    assert np.array_equal(total, ring_sum_reference([values[p] for p in PROVIDERS if p != "p2"], CODEC))
    assert outputs["p2"].me_dropped
    assert all(outputs[p].dropped == ("p2",) for p in PROVIDERS)


def test_a_provider_whose_keys_reached_nobody_in_time_is_left_out_not_opened(stall):
    """It masked with everybody, nobody with it: all its masks are one-sided.

    Counting it would open its input (its self mask and every pairwise mask
    revealed); the receiver leaves it out, as the providers would insist.
    """
    stall["resume on"], stall["before"] = "inputs", "p0"
    values = _values()
    recorded = _run(values, recorded=True)
    assert not recorded.errors, recorded.errors
    total, outcome = recorded.outputs[SERVER]
    assert outcome.dropped == ("p2",)
    assert np.array_equal(total, ring_sum_reference([values[p] for p in PROVIDERS if p != "p2"], CODEC))
    answers = [d.message for d in recorded.recorder.received_by(SERVER) if isinstance(d.message, dict)]
    assert not any("p2" in a.get("b", {}) for a in answers)  # its self-mask seed was never opened


def test_providers_refuse_a_survivor_set_that_counts_a_provider_no_mask_links_to(stall, monkeypatch):
    """The receiver counts the unlinked provider anyway: every provider refuses, nothing is revealed."""
    from protocols.errors import ProtocolError

    stall["resume on"], stall["before"] = "inputs", "p0"
    monkeypatch.setattr(dropout, "linked_groups", lambda peers, members: [sorted(members)])
    recorded = _run(_values(), recorded=True)
    for p in PROVIDERS:
        error = recorded.errors.get(p)
        assert isinstance(error, ProtocolError), (p, error)
        assert "do not link them into one group" in str(error) or f"{SERVER!r} equivocated" in str(error), (
            p,
            error,
        )
    answers = [d.message for d in recorded.recorder.received_by(SERVER) if isinstance(d.message, dict)]
    assert not any("b" in a for a in answers)
