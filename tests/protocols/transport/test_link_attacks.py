"""A certified insider on the socket transport (parties as threads over TLS): deadlines and blame.

Each test lets one party write raw frames on its authenticated links and
checks that every honest party ends by itself, with an error naming the
insider, and never on the insider's word alone.
"""

from __future__ import annotations

import threading
import time

import pytest

from protocols.errors import PeerFailureError, PeerTimeoutError, ProtocolError, WireFormatError
from protocols.transport.certs import write_credentials
from protocols.transport.links import HEADER
from protocols.transport.socket_frames import ABORT, CONTROL_QUEUE_CAP, DATA, DATA_PREFIX, STATUS
from tests.helpers.socket_helpers import run_socket_world

TIMEOUT = 3.0
#: Slack allowed past the deadline for a party to notice it and end (thread scheduling on a busy CI).
SLACK = 3.0


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    write_credentials(["a0", "a1", "a2", "r"], directory)
    return directory


def timed(role, ended):
    """``role``, recording when it ended (seconds after it started) under its party's name."""

    def run(party):
        start = time.perf_counter()
        try:
            return role(party)
        finally:
            ended[party.name] = time.perf_counter() - start

    return run


def idle_until_stopped(party, limit: float = 30.0) -> None:
    """Send nothing until a peer reports a failure or a link fails (or ``limit`` seconds pass)."""
    end = time.perf_counter() + limit
    while not (party.channel._aborts or party.channel._failed) and time.perf_counter() < end:
        time.sleep(0.05)


def test_status_frames_with_new_phase_labels_restart_nobodys_deadline(tls_dir):
    """An insider announces a new phase every 0.2 s and sends no data: it is blamed at the deadline."""
    stop = threading.Event()
    ended: dict[str, float] = {}

    def rogue(party):
        for i in range(200):  # 40 s of phase announcements, far past any deadline
            if stop.is_set() or party.channel._aborts:
                break
            party.channel._broadcast(STATUS, {"phase": f"phase {i}", "waiting": None})
            time.sleep(0.2)

    def honest(party):
        return party.recv("a1")

    roles = {"a0": timed(honest, ended), "a1": rogue, "r": timed(honest, ended)}
    results = run_socket_world(roles, tls_dir, timeout=TIMEOUT)
    stop.set()
    for name in ("a0", "r"):
        assert ended.get(name, float("inf")) <= TIMEOUT + SLACK, (name, ended.get(name, "still waiting"))
        error = results[name]  # its own timeout, or the other's report of it if that came first
        assert isinstance(error, (PeerTimeoutError, PeerFailureError)), (name, error)
        assert "'a1' (rank 1) did not send within the deadline" in str(error), error


def test_a_false_waiting_claim_does_not_shift_the_blame(tls_dir):
    """a1 says it waits for honest a0 and never sends: r blames a1 and quotes the claim as a1's."""
    ended: dict[str, float] = {}

    def liar(party):
        party.channel._broadcast(STATUS, {"phase": "sum", "waiting": "a0"})
        idle_until_stopped(party)

    def busy(party):  # honest, computing, waiting for nobody
        idle_until_stopped(party)

    def r(party):
        return party.recv("a1")

    results = run_socket_world({"a0": busy, "a1": liar, "r": timed(r, ended)}, tls_dir, timeout=TIMEOUT)
    error = results["r"]
    assert isinstance(error, PeerTimeoutError), error
    message = str(error)
    assert "'a1' (rank 1) did not send within the deadline" in message, message
    assert "'a1' says it waits for 'a0' (its claim, not checked)" in message, message
    assert "'a0' (rank 0) did not send" not in message, message
    # a claim of waiting buys the claimant one more deadline to report a failure, no more
    assert ended["r"] <= 2 * TIMEOUT + SLACK, ended["r"]


def test_a_forged_abort_is_quoted_as_its_senders_claim(tls_dir):
    """a1 sends an ABORT blaming a0: every other party names a1 as the reporter, not a0 as the culprit."""

    def forger(party):
        party.channel._broadcast(ABORT, {"reason": "party 'a0' failed: 'a0' (rank 0) sent forged shares"})
        idle_until_stopped(party, 2 * TIMEOUT)

    def waiter(party):
        return party.recv("a0")

    def a0(party):
        return party.recv("r")

    results = run_socket_world({"a0": a0, "a1": forger, "r": waiter}, tls_dir, timeout=TIMEOUT)
    for name in ("a0", "r"):
        error = results[name]
        assert isinstance(error, PeerFailureError), (name, error)
        # quoted, possibly as forwarded by a0: "'r' stopped: 'a0' (rank 0) reported: ... 'a1' (rank 1) reported:"
        message = str(error)
        assert message.startswith(f"'{name}' stopped: "), message
        assert "'a1' (rank 1) reported: party 'a0' failed: 'a0' (rank 0) sent forged shares" in message, (
            message
        )
        assert "did not send" not in message, message


def test_a_flood_of_unsolicited_data_frames_is_refused_within_the_budget(tls_dir):
    """a0 sends 100 x 1 MiB that nobody reads: r refuses it naming a0, its queue never over budget."""
    frame = bytes((1 << 20) - 16)  # encoded (9 bytes more), within the 1 MiB cap
    channels = {}

    def flooder(party):
        for _ in range(100):
            if party.channel._aborts or party.channel._failed:
                break
            party.channel.send("r", frame)  # numbered frames: only the budget can refuse them
        idle_until_stopped(party)

    def r(party):
        channels["r"] = party.channel
        return party.recv("a1")  # a1 sends nothing: r is busy with a1 while a0 floods it

    roles = {"a0": flooder, "a1": idle_until_stopped, "r": r}
    results = run_socket_world(roles, tls_dir, timeout=TIMEOUT, cap=1 << 20)
    channel = channels["r"]
    budget = channel.data_budget
    assert budget == 64 << 20  # the floor: twice the 1 MiB cap is less
    error = results["r"]
    assert isinstance(error, ProtocolError), error
    assert "'a0' (rank 0) sent more data than was read" in str(error), error
    assert f"exceed the {budget} bytes a peer may have waiting" in str(error), error
    assert 0 < channel.peak_queued_bytes["a0"] <= budget
    assert channel.queued_bytes["a0"] == 0  # dropped once refused


def test_a_flood_of_control_frames_is_refused_naming_the_sender(tls_dir):
    def flooder(party):
        for _ in range(CONTROL_QUEUE_CAP + 10):
            party.channel.send_control("r", {"settings": "again"})
        idle_until_stopped(party)

    def r(party):
        return party.recv("a1")

    results = run_socket_world({"a0": flooder, "a1": idle_until_stopped, "r": r}, tls_dir, timeout=TIMEOUT)
    error = results["r"]
    assert isinstance(error, ProtocolError), error
    assert "'a0' (rank 0) sent more control frames than were read" in str(error), error
    assert f"at most {CONTROL_QUEUE_CAP} may wait unread" in str(error), error


def test_one_unsolicited_data_frame_is_named_at_the_end(tls_dir):
    """a0 sends r one message more than the protocol reads: r's run fails naming a0 and the count."""

    def a0(party):
        party.send("r", "the answer")
        party.send("r", "and one more")

    def r(party):
        return party.recv("a0")

    results = run_socket_world({"a0": a0, "r": r}, tls_dir, timeout=TIMEOUT)
    error = results["r"]
    assert isinstance(error, ProtocolError), error
    assert "'a0' (rank 0) sent 1 unsolicited data frame" in str(error), error
    assert "never read" in str(error)


def test_a_run_that_reads_everything_ends_cleanly(tls_dir):
    def a0(party):
        party.send("r", "the answer")
        return party.recv("r")

    def r(party):
        party.send("a0", "thanks")
        return party.recv("a0")

    results = run_socket_world({"a0": a0, "r": r}, tls_dir, timeout=TIMEOUT)
    assert results["r"][0] == "the answer" and results["a0"][0] == "thanks", results


def record_sends(party, peer: str) -> list[list[bytes]]:
    """Keep a copy of every frame ``party`` writes on its link to ``peer`` (header, prefix, body)."""
    stream = party.channel.streams[peer]
    sent: list[list[bytes]] = []
    original = stream.send_parts

    def send_parts(parts):
        sent.append([bytes(p) for p in parts])
        original(parts)

    stream.send_parts = send_parts
    return sent


def test_a_replayed_data_frame_is_refused_naming_the_sender(tls_dir):
    """a0 re-sends its own first data frame, byte for byte (valid TLS, valid message): r names a0."""

    def a0(party):
        frames = record_sends(party, "r")
        party.send("r", "pay 10")
        data = [f for f in frames if f[0][0] == DATA]
        party.channel.streams["r"].send_parts(data[0])  # the same frame again: sequence number 0
        idle_until_stopped(party)

    def r(party):
        return [party.recv("a0"), party.recv("a0")]

    results = run_socket_world({"a0": a0, "r": r}, tls_dir, timeout=TIMEOUT)
    error = results["r"]
    assert isinstance(error, ProtocolError), error
    assert "'a0' (rank 0) sent data frame 0 where 1 was expected: replayed or reordered" in str(error), error


def test_a_reordered_data_frame_is_refused_naming_the_sender(tls_dir):
    """a0 holds back its first frame and sends the second first: r refuses frame 1 where 0 was due."""

    def a0(party):
        stream = party.channel.streams["r"]
        original = stream.send_parts
        stream.send_parts = lambda parts: None  # held back: only recorded
        frames = record_sends(party, "r")
        party.send("r", "first")
        party.send("r", "second")
        stream.send_parts = original
        data = [f for f in frames if f[0][0] == DATA]
        original(data[1])
        original(data[0])
        idle_until_stopped(party)

    def r(party):
        return [party.recv("a0"), party.recv("a0")]

    results = run_socket_world({"a0": a0, "r": r}, tls_dir, timeout=TIMEOUT)
    error = results["r"]
    assert isinstance(error, ProtocolError), error
    assert "'a0' (rank 0) sent data frame 1 where 0 was expected: replayed or reordered" in str(error), error


def test_a_frame_of_another_link_is_refused_by_its_run_id(tls_dir):
    """a0 passes r the frame it sent a1 (sequence number 0, as r expects): its run id gives it away."""

    def a0(party):
        frames = record_sends(party, "a1")
        party.send("a1", "for a1 only")
        data = [f for f in frames if f[0][0] == DATA]
        party.channel.streams["r"].send_parts(data[0])
        idle_until_stopped(party)

    def a1(party):
        return party.recv("a0")

    def r(party):
        return party.recv("a0")

    results = run_socket_world({"a0": a0, "a1": a1, "r": r}, tls_dir, timeout=TIMEOUT)
    error = results["r"]
    assert isinstance(error, ProtocolError), error
    message = str(error)
    assert "'a0' (rank 0) sent data frame 0 with run id" in message, message
    assert "a frame of another run or of another link" in message, message


def test_a_malformed_data_body_names_its_sender(tls_dir):
    """A correctly numbered data frame whose body is not the wire format: the error names a0."""

    def a0(party):
        party.channel._send_bytes("r", b"\xffnot a message")
        idle_until_stopped(party)

    def r(party):
        return party.recv("a0")

    results = run_socket_world({"a0": a0, "r": r}, tls_dir, timeout=TIMEOUT)
    error = results["r"]
    assert isinstance(error, WireFormatError), error  # a ProtocolError
    assert "'r': 'a0' sent a malformed message: unknown tag" in str(error), error


def test_data_frames_carry_the_sequence_header_outside_the_metered_bytes(tls_dir):
    """Each data frame is the message plus 24 bytes; the meters count the message only."""
    frames_seen: dict[str, list[list[bytes]]] = {}
    meters = {}

    def a0(party):
        frames_seen["a0"] = record_sends(party, "r")
        party.send("r", b"x" * 100)
        party.send("r", "y")
        meters["a0"] = party.channel.meter
        return party.recv("r")

    def r(party):
        got = [party.recv("a0"), party.recv("a0")]
        party.send("a0", "ok")
        meters["r"] = party.channel.meter
        return got

    results = run_socket_world({"a0": a0, "r": r}, tls_dir, timeout=TIMEOUT)
    assert results["r"][0] == [b"x" * 100, "y"], results
    data = [f for f in frames_seen["a0"] if f[0][0] == DATA]
    assert [DATA_PREFIX.unpack(f[1])[0] for f in data] == [0, 1]
    framed = sum(HEADER.unpack(f[0])[1] for f in data)
    assert meters["a0"].sent_to["r"] == meters["r"].received_from["a0"] == framed - 2 * DATA_PREFIX.size
