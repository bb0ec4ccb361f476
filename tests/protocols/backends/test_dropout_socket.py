"""Dropout tolerance over the socket transport: a failed provider ends only what waits for it.

Parties are threads linked by real sockets (:func:`tests.helpers.socket_helpers.run_socket_world`).
Inside the dropout-tolerant secure sum a provider that fails (its ``ABORT``
and closed links reach the others) is dropped and the sum completes; outside
it, a provider's failure still ends the run, naming that provider.
"""

from __future__ import annotations

import numpy as np
import pytest

from protocols import AdditiveBackend, FixedPointCodec
from protocols.backends import dropout
from protocols.errors import PeerFailureError
from tests.helpers.oracles import ring_sum_reference
from tests.helpers.socket_helpers import run_socket_world

PROVIDERS = ("p0", "p1", "p2", "p3")
CODEC = FixedPointCodec(20)


class CrashError(RuntimeError):
    """The simulated crash of a provider."""


def _values() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {p: rng.normal(size=5) for p in PROVIDERS}


def _roles(values, crash_in_sum: str | None, crash_after: str | None):
    backend = AdditiveBackend("masks", CODEC, dropout_threshold=3, dropout_timeout=5.0)

    def provider(name):
        def run(party):
            backend.secure_sum(party, values[name], contributors=PROVIDERS, receiver="server")
            outcome = dropout.last_outcome(party)
            if name == crash_after:
                raise CrashError(f"{name} crashed after the sum")
            party.send("server", np.array([1.0]))  # a later, ordinary phase
            return outcome.dropped

        return run

    def server(party):
        total = backend.secure_sum(party, None, contributors=PROVIDERS, receiver="server")
        outcome = dropout.last_outcome(party)
        for p in outcome.survivors:
            party.recv(p)
        return total, outcome.dropped

    return {**{p: provider(p) for p in PROVIDERS}, "server": server}


@pytest.fixture
def crash_before_input(monkeypatch):
    original = dropout.send_masked_input

    def patched(party, receiver, message):
        if party.name == "p2":
            raise CrashError("p2 crashed after dealing its shares")
        original(party, receiver, message)

    monkeypatch.setattr(dropout, "send_masked_input", patched)


def test_a_provider_that_fails_inside_the_sum_is_dropped_and_the_run_completes(crash_before_input):
    values = _values()
    results = run_socket_world(_roles(values, "p2", None), None, timeout=20.0)
    assert isinstance(results["p2"], CrashError)
    total, dropped = results["server"][0]
    assert dropped == ("p2",)
    assert np.array_equal(total, ring_sum_reference([values[p] for p in PROVIDERS if p != "p2"], CODEC))
    for p in ("p0", "p1", "p3"):
        assert results[p][0] == ("p2",), results[p]


def test_a_provider_that_fails_outside_the_sum_still_ends_the_run_naming_it():
    results = run_socket_world(_roles(_values(), None, "p1"), None, timeout=20.0)
    assert isinstance(results["p1"], CrashError)
    error = results["server"]
    # Its failure may reach the server while the server is still in the sum (then p1, counted,
    # stays excused: PeerDroppedError) or after (PeerFailureError); either way the phase that
    # needs p1 ends the run, quoting p1's report.
    assert isinstance(error, PeerFailureError)
    assert "'p1' (rank 1)" in str(error) and "reported: party 'p1' failed" in str(error)
    assert "crashed after the sum" in str(error)
