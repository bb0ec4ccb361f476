"""The dropout-tolerant secure sum (:mod:`protocols.backends.dropout`), parties as threads.

A provider leaves at each phase boundary: before dealing its keys and shares,
after dealing and before its masked input, after its masked input, before
its unmasking answer, or it sends its masked input after the survivor set
was announced (a late arrival). The sum must be the exact ring sum of the
inputs that count, everybody must name the same dropped providers, too few
survivors must fail with nothing revealed, and the receiver's view must not
depend on a dropped provider's input.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from protocols import AdditiveBackend, FixedPointCodec, Party
from protocols.backends import dropout
from protocols.errors import DropoutError, InputValidationError, ProtocolError
from protocols.runtime import run_inprocess
from protocols.testing.recording import run_recorded
from protocols.testing.views import check_view_independence
from tests.helpers.oracles import ring_sum_reference

PROVIDERS = tuple(f"p{i}" for i in range(5))
SERVER = "server"
CODEC = FixedPointCodec(20)


class _LeftError(Exception):
    """A simulated provider that left the run (its thread returns after disconnecting)."""


def _inputs(length: int = 6, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {p: rng.normal(size=length) * 100 for p in PROVIDERS}


def _roles(
    values: dict[str, np.ndarray], backend: AdditiveBackend, leaving: dict[str, str] | None = None
) -> dict[str, Callable[[Party], object]]:
    """Role functions; ``leaving[p]`` is the step at which provider ``p`` disconnects."""
    leaving = leaving or {}

    def provider(name: str) -> Callable[[Party], object]:
        def run(party: Party) -> object:
            party.context["leave at"] = leaving.get(name)
            try:
                if leaving.get(name) == "before deal":
                    raise _LeftError
                backend.secure_sum(party, values[name], contributors=PROVIDERS, receiver=SERVER)
            except _LeftError:
                party.channel.disconnect()  # type: ignore[attr-defined]
                return "left"
            outcome = dropout.last_outcome(party)
            assert outcome is not None
            return ("dropped" if outcome.me_dropped else "counted", outcome.dropped)

        return run

    def server(party: Party) -> object:
        total = backend.secure_sum(party, None, contributors=PROVIDERS, receiver=SERVER)
        outcome = dropout.last_outcome(party)
        assert outcome is not None
        return total, outcome.dropped

    return {**{p: provider(p) for p in PROVIDERS}, SERVER: server}


@dataclass
class _Hooks:
    answers: dict[str, str]  # provider -> "before answer"
    late: threading.Event  # set when the last provider was sent the survivor set


@pytest.fixture
def leave_hooks(monkeypatch):
    """Make providers leave at the step their role names (``party.context['leave at']``)."""
    send_input, answer = dropout.send_masked_input, dropout.unmasking_response
    late = threading.Event()

    def patched_send(party, receiver, message):
        step = party.context.get("leave at")
        if step == "after deal":
            raise _LeftError
        if step == "late":
            late.wait(30)  # until the survivor set was announced without it
        send_input(party, receiver, message)
        if step == "after input":
            raise _LeftError

    def patched_answer(revealed, held, survivors, contributors, keys=None):
        me = threading.current_thread().name.removeprefix("party-")
        if hooks.answers.get(me) == "before answer":
            raise _LeftError
        return answer(revealed, held, survivors, contributors, keys)

    send_or_gone = dropout._send_or_gone

    def patched_send_or_gone(party, peer, message):
        sent = send_or_gone(party, peer, message)
        if isinstance(message, dict) and "survivors" in message and peer == PROVIDERS[-1]:
            late.set()
        return sent

    hooks = _Hooks(answers={}, late=late)
    monkeypatch.setattr(dropout, "send_masked_input", patched_send)
    monkeypatch.setattr(dropout, "unmasking_response", patched_answer)
    monkeypatch.setattr(dropout, "_send_or_gone", patched_send_or_gone)
    return hooks


def _backend(t: int = 3, timeout: float | None = None) -> AdditiveBackend:
    return AdditiveBackend("masks", CODEC, dropout_threshold=t, dropout_timeout=timeout)


def test_without_dropouts_the_sum_is_exact_and_nobody_is_dropped():
    values = _inputs()
    run = run_inprocess(_roles(values, _backend()))
    total, dropped = run.outputs[SERVER]
    assert np.array_equal(total, ring_sum_reference(list(values.values()), CODEC))
    assert dropped == ()
    assert all(run.outputs[p] == ("counted", ()) for p in PROVIDERS)


@pytest.mark.parametrize("step", ["before deal", "after deal"])
def test_a_provider_that_leaves_before_its_masked_input_is_dropped_and_named(leave_hooks, step):
    values = _inputs()
    run = run_inprocess(_roles(values, _backend(), {"p2": step}))
    total, dropped = run.outputs[SERVER]
    survivors = [values[p] for p in PROVIDERS if p != "p2"]
    assert np.array_equal(total, ring_sum_reference(survivors, CODEC))
    assert dropped == ("p2",)
    assert run.outputs["p2"] == "left"
    assert all(run.outputs[p] == ("counted", ("p2",)) for p in PROVIDERS if p != "p2")


def test_a_survivor_that_leaves_before_confirming_the_survivor_set_aborts_the_sum_naming_it(leave_hooks):
    """Its masked input counted, its confirmation is missing: an abort, never a dropout (nothing revealed)."""
    recorded = run_recorded(_roles(_inputs(), _backend(), {"p1": "after input"}))
    for p in ("p0", "p2", "p3", "p4"):
        error = recorded.errors[p]
        assert isinstance(error, ProtocolError) and not isinstance(error, DropoutError), (p, error)
        assert f"{SERVER!r} counted 'p1' as a survivor, but 'p1' did not confirm" in str(error), (p, error)
        assert f"{SERVER!r} is the source of the disagreement" in str(error)
    assert _answers_to_server(recorded) == []


def test_a_survivor_that_leaves_before_answering_still_counts(leave_hooks):
    leave_hooks.answers["p3"] = "before answer"
    values = _inputs()
    run = run_inprocess(_roles(values, _backend(), {"p0": "after deal"}))
    total, dropped = run.outputs[SERVER]
    assert np.array_equal(total, ring_sum_reference([values[p] for p in PROVIDERS if p != "p0"], CODEC))
    assert dropped == ("p0",)
    assert run.outputs["p3"] == "left"


def test_a_late_masked_input_is_dropped_and_its_sender_told(leave_hooks):
    values = _inputs()
    run = run_inprocess(_roles(values, _backend(timeout=1.0), {"p4": "late"}))
    total, dropped = run.outputs[SERVER]
    assert np.array_equal(total, ring_sum_reference([values[p] for p in PROVIDERS if p != "p4"], CODEC))
    assert dropped == ("p4",)
    assert run.outputs["p4"] == ("dropped", ("p4",))


def _answers_to_server(recorded) -> list[str]:
    return [
        d.sender
        for d in recorded.recorder.received_by(SERVER)
        if isinstance(d.message, dict) and set(d.message) == {"b", "s", "k"}
    ]


def test_below_threshold_at_the_masked_inputs_fails_naming_the_dropped_and_reveals_nothing(leave_hooks):
    recorded = run_recorded(_roles(_inputs(), _backend(t=4), {"p1": "after deal", "p3": "before deal"}))
    error = recorded.errors[SERVER]
    assert isinstance(error, DropoutError)
    assert error.dropped == ("p1", "p3")
    assert "'p1', 'p3'" in str(error) and "threshold 4" in str(error)
    assert _answers_to_server(recorded) == []  # no share of any seed was sent


def test_below_threshold_at_the_answers_fails_cleanly(leave_hooks):
    leave_hooks.answers["p2"] = "before answer"
    recorded = run_recorded(_roles(_inputs(), _backend(t=4), {"p0": "after deal"}))
    error = recorded.errors[SERVER]
    assert isinstance(error, DropoutError)
    assert "silent: ['p2']" in str(error) and "'p0'" in str(error)
    assert len(_answers_to_server(recorded)) == 3  # fewer than t shares of anything


def test_the_receiver_never_gets_a_share_of_a_dropped_providers_self_mask_seed(leave_hooks):
    recorded = run_recorded(_roles(_inputs(), _backend(timeout=1.0), {"p4": "late"}))
    assert not recorded.errors
    answers = [d.message for d in recorded.recorder.received_by(SERVER) if isinstance(d.message, dict)]
    b_owners = {u for a in answers if set(a) == {"b", "s", "k"} for u in a["b"]}
    s_owners = {u for a in answers if set(a) == {"b", "s", "k"} for u in a["s"]}
    assert "p4" not in b_owners and s_owners == {"p4"}
    late_inputs = [d for d in recorded.recorder.received_by(SERVER) if d.sender == "p4" and "y" in d.message]
    assert len(late_inputs) == 1  # its masked input did arrive, after the survivor set


def test_the_receivers_view_does_not_depend_on_a_dropped_providers_input(leave_hooks):
    """A late provider's masked input reaches the receiver with its mask key opened: still independent of x."""
    base = {p: np.full(400, 3.0) for p in PROVIDERS}
    other = {**base, "p4": np.full(400, -12345.678)}

    def roles(values):
        return lambda: _roles(values, _backend(timeout=1.0), {"p4": "late"})

    def fresh_event_roles(values):
        def make():
            leave_hooks.late.clear()
            return roles(values)()

        return make

    report = check_view_independence(
        fresh_event_roles(base), fresh_event_roles(other), parties=[SERVER], repeats=3, timeout=30
    )
    assert report.tests  # something was tested


def test_an_honest_provider_refuses_to_reveal_both_secrets_of_one_provider():
    held = {"p0": {"b": b"b0", "s": b"s0"}, "p1": {"b": b"b1", "s": b"s1"}}
    revealed: dict[str, str] = {}
    first = dropout.unmasking_response(revealed, held, ["p0", "p1"], ("p0", "p1", "p2"))
    assert first == {"b": {"p0": b"b0", "p1": b"b1"}, "s": {}, "k": {}}
    with pytest.raises(ProtocolError, match="refusing to reveal the share of the mask key of 'p1'"):
        dropout.unmasking_response(revealed, held, ["p0"], ("p0", "p1", "p2"))
    assert revealed == {"p0": "b", "p1": "b"}  # nothing more was recorded as revealed


def test_a_receiver_that_tells_providers_different_survivor_sets_is_caught_before_any_share(monkeypatch):
    send_or_gone = dropout._send_or_gone

    def equivocating(party, peer, message):
        if isinstance(message, dict) and "survivors" in message and peer == "p0":
            survivors = [s for s in message["survivors"] if s != "p4"]
            message = {
                **message,
                "survivors": survivors,
                "peers": {s: message["peers"][s] for s in survivors},
            }
        return send_or_gone(party, peer, message)

    monkeypatch.setattr(dropout, "_send_or_gone", equivocating)
    recorded = run_recorded(_roles(_inputs(), _backend()))
    caught = [e for e in recorded.errors.values() if "equivocated" in str(e)]
    assert caught and all(f"{SERVER!r} equivocated" in str(e) for e in caught)
    assert _answers_to_server(recorded) == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"dropout_threshold": 1}, "at least 2"), ({"dropout_threshold": 3, "dropout_timeout": 0}, "positive"),
     ({"dropout_threshold": True}, "integer")],
)  # fmt: skip
def test_invalid_dropout_settings_are_refused(kwargs, match):
    with pytest.raises(InputValidationError, match=match):
        AdditiveBackend("masks", **kwargs)


def test_dropout_is_for_masks_mode_with_a_separate_receiver():
    with pytest.raises(InputValidationError, match="mode='masks' only"):
        AdditiveBackend("shares", dropout_threshold=2)
    backend = _backend(t=2)
    values = {"a": np.ones(2), "b": np.ones(2)}

    def role(name):
        return lambda party: backend.secure_sum(party, values[name], contributors=["a", "b"], receiver="a")

    with pytest.raises(InputValidationError, match="not a provider; 'a' is one"):
        run_inprocess({"a": role("a"), "b": role("b")})
    with pytest.raises(InputValidationError, match="threshold=6 exceeds the number of shares n=5"):
        run_inprocess(_roles(_inputs(), _backend(t=6)))


def test_consecutive_sums_use_fresh_keys_and_each_names_its_own_dropped(leave_hooks):
    values = _inputs()
    backend = _backend()

    def provider(name):
        def run(party):
            backend.secure_sum(party, values[name], contributors=PROVIDERS, receiver=SERVER)
            if name == "p1":
                party.channel.disconnect()
                return None
            backend.secure_sum(party, values[name], contributors=PROVIDERS, receiver=SERVER)
            return [o.dropped for o in party.context[dropout.OUTCOMES]]

        return run

    def server(party):
        first = backend.secure_sum(party, None, contributors=PROVIDERS, receiver=SERVER)
        second = backend.secure_sum(party, None, contributors=PROVIDERS, receiver=SERVER)
        return first, second

    run = run_inprocess({**{p: provider(p) for p in PROVIDERS}, SERVER: server})
    first, second = run.outputs[SERVER]
    assert np.array_equal(first, ring_sum_reference(list(values.values()), CODEC))
    assert np.array_equal(second, ring_sum_reference([values[p] for p in PROVIDERS if p != "p1"], CODEC))
    assert run.outputs["p0"] == [(), ("p1",)]
