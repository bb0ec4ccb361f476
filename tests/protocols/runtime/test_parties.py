"""The public API for a user's own protocol: run_party (one party per host) and run_processes."""

from __future__ import annotations

import functools
import threading

import numpy as np
import pytest

from protocols import AdditiveBackend, LinkOptions, run_party, run_processes, secure_sum
from protocols.errors import InputValidationError, ProtocolError
from protocols.runtime.launcher import PythonCall, launch
from protocols.transport.rendezvous import Introducer

RANKS = {"a": 0, "b": 1, "r": 2}
VALUES = {"a": np.arange(4.0), "b": np.ones(4)}


def contributor(party, name):
    secure_sum(party, VALUES[name], contributors=["a", "b"], receiver="r", backend=AdditiveBackend())


def receiver(party):
    return secure_sum(party, None, contributors=["a", "b"], receiver="r", backend=AdditiveBackend())


def big_sender(party):
    if party.name == "a":
        party.send("r", np.zeros(1000))
    elif party.name == "r":
        return party.recv("a")
    return None


def roles():
    return {
        "a": functools.partial(contributor, name="a"),
        "b": functools.partial(contributor, name="b"),
        "r": receiver,
    }


def run_threads_over_sockets(role_of, **options):
    """Every party of RANKS in a thread of its own, each through run_party over loopback links."""
    introducer = Introducer("127.0.0.1:0", RANKS, None, 20)
    results, errors = {}, {}

    def target(name):
        links = LinkOptions(f"127.0.0.1:{introducer.port}", insecure=True, listen_host="127.0.0.1",
                            timeout=10, connect_timeout=10, host_rendezvous=False, **options)  # fmt: skip
        try:
            results[name] = run_party(name, role_of[name], ranks=RANKS, links=links)
        except Exception as exc:
            errors[name] = exc

    threads = [threading.Thread(target=target, args=(n,)) for n in RANKS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results, errors


def test_run_party_needs_no_cap_call_and_sums():
    results, errors = run_threads_over_sockets(roles())
    assert not errors, errors
    output, report = results["r"]
    assert np.allclose(output, VALUES["a"] + VALUES["b"])
    assert report.bytes_received > 0 and results["a"][1].bytes_sent > 0


def test_a_message_over_the_cap_stops_the_receiver_naming_the_sender():
    _, errors = run_threads_over_sockets(dict.fromkeys(RANKS, big_sender), message_cap=1000)
    assert "r" in errors and isinstance(errors["r"], ProtocolError)
    assert "'a' (rank 0) announced a data frame of" in str(errors["r"]) and "at most 1000" in str(errors["r"])


def test_links_without_credentials_are_refused_before_anything_is_sent():
    with pytest.raises(InputValidationError, match=r"'?a'? has no TLS credentials|a has no TLS credentials"):
        run_party("a", receiver, ranks=RANKS, links=LinkOptions("127.0.0.1:1"))
    with pytest.raises(InputValidationError, match="message_cap=0"):
        run_party("a", receiver, ranks=RANKS, links=LinkOptions("127.0.0.1:1", insecure=True, message_cap=0))
    with pytest.raises(InputValidationError, match="party 'x' has no rank"):
        run_party("x", receiver, ranks=RANKS, links=LinkOptions("127.0.0.1:1", insecure=True))


def test_run_processes_over_tls_gives_the_in_process_result():
    from protocols import run_inprocess

    run = run_processes(roles(), timeout=30)
    reference = run_inprocess(roles())
    assert np.allclose(run.outputs["r"], reference.outputs["r"]) and run.outputs["a"] is None
    for name in RANKS:
        assert run.reports[name].bytes_sent == reference.reports[name].bytes_sent, name
        assert run.reports[name].rounds == reference.reports[name].rounds, name


def test_run_processes_refuses_a_role_no_child_can_receive():
    with pytest.raises(
        InputValidationError, match=r"role of 'r' cannot be handed to a process.*functools\.partial"
    ):
        run_processes({**roles(), "r": lambda party: receiver(party)}, timeout=10)


def unsendable(party):
    return object()


def test_an_output_that_is_not_wire_encodable_is_reported_by_party():
    with pytest.raises(ProtocolError, match="'r''s output cannot be sent back in the wire format"):
        run_processes({"a": unsendable, "r": unsendable}, timeout=10)


def test_the_launcher_refuses_an_unknown_start_method():
    with pytest.raises(InputValidationError, match="start_method must be"):
        launch({"a": PythonCall(int, (), start_method="fork")}, timeout=5)
