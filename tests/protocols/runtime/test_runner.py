import pytest

from protocols.errors import PeerFailureError, PeerTimeoutError, ProtocolError
from protocols.runtime import run_inprocess


def test_outputs_and_reports_are_collected():
    def ping(party):
        party.send("b", {"x": 1})
        return party.recv("b")

    def pong(party):
        message = party.recv("a")
        party.send("a", message["x"] + 1)
        return "done"

    run = run_inprocess({"a": ping, "b": pong})
    assert run.outputs == {"a": 2, "b": "done"}
    assert run.reports["a"].messages_sent == 1 and run.reports["a"].rounds == 1
    assert run.reports["a"].bytes_sent == run.reports["b"].bytes_received > 0


def test_one_failing_role_stops_the_others_with_the_root_cause_not_their_timeout():
    seen: dict[str, BaseException] = {}

    def broken(party):
        raise ValueError("disk on fire")

    def waiting(party):
        try:
            return party.recv("a")
        except BaseException as exc:
            seen[party.name] = exc
            raise

    with pytest.raises(ValueError, match="disk on fire"):
        run_inprocess({"a": broken, "b": waiting, "c": waiting}, timeout=30)
    # each waiting party was woken by a's failure, not by its own 30 s receive timeout
    assert set(seen) == {"b", "c"}
    for name, exc in seen.items():
        assert isinstance(exc, PeerFailureError) and not isinstance(exc, PeerTimeoutError), (name, exc)
        assert "party 'a' failed" in str(exc) and "disk on fire" in str(exc), (name, exc)


def test_silent_peer_times_out_with_a_clear_error():
    with pytest.raises(PeerTimeoutError, match=r"'b' received nothing from 'a' within 0\.2 s"):
        run_inprocess({"a": lambda party: None, "b": lambda party: party.recv("a")}, timeout=0.2)


def test_unknown_peer_is_an_error():
    with pytest.raises(ProtocolError, match="no peer named 'zz'"):
        run_inprocess({"a": lambda party: party.send("zz", 1)})


def test_rounds_count_runs_of_sends():
    def chatty(party):
        party.send("b", 1)
        party.send("b", 2)
        party.recv("b")
        party.send("b", 3)

    def listener(party):
        party.recv("a")
        party.recv("a")
        party.send("a", 0)
        party.recv("a")

    run = run_inprocess({"a": chatty, "b": listener})
    assert run.reports["a"].rounds == 2
    assert run.reports["b"].rounds == 1


def test_peer_failure_error_is_raised_to_waiting_parties():
    seen = {}

    def broken(party):
        raise RuntimeError("boom")

    def waiting(party):
        try:
            party.recv("a")
        except PeerFailureError as exc:
            seen["err"] = exc
            raise

    with pytest.raises(RuntimeError, match="boom"):
        run_inprocess({"a": broken, "b": waiting})
    assert "party 'a' failed" in str(seen["err"])


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), float("nan"), "10", True])
def test_bad_timeouts_are_rejected_before_any_role_starts(timeout):
    from protocols.errors import InputValidationError

    started = []
    with pytest.raises(InputValidationError, match="timeout="):
        run_inprocess({"a": lambda party: started.append(1)}, timeout=timeout)
    assert not started
