"""Issue 35: a party's final line prefers what it observed itself over what a peer claims.

Direct links, parties as threads. ``a0`` forges an ABORT blaming ``a2``;
``a1`` sends ``r`` a data frame out of sequence (evidence ``r`` checks
itself, as the frame arrives). ``r`` is busy while both arrive: its final
line must name ``a1``'s frame, not quote ``a0``'s claim (before issue 35 a
received ABORT always came first). A claim alone is quoted as a claim.
"""

from __future__ import annotations

import threading
import time

import pytest

from protocols.errors import PeerFailureError, ProtocolError
from protocols.transport.certs import write_credentials
from protocols.transport.links import HEADER
from protocols.transport.socket_frames import ABORT, DATA, DATA_PREFIX
from protocols.transport.wire import encode_message
from tests.helpers.socket_helpers import run_socket_world

TIMEOUT = 5.0
FORGED = "party 'a2' failed: 'a2' (rank 2) sent forged shares"


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    write_credentials(["a0", "a1", "a2", "r"], directory)
    return directory


def idle_until_stopped(party, limit: float = 2 * TIMEOUT) -> None:
    end = time.monotonic() + limit
    while not (party.channel._aborts or party.channel._failed) and time.monotonic() < end:
        time.sleep(0.05)


EXPECT_BAD_FRAME, EVIDENCE_SEEN, FORGED_SENT = threading.Event(), threading.Event(), threading.Event()


def forger(party):
    # After r has recorded a1's bad frame (when a1 takes part): frames on two
    # different links reach r's readers in no fixed order, and a claim read
    # first legitimately stops r before it sees the frame.
    EVIDENCE_SEEN.wait(TIMEOUT)
    party.channel._broadcast(ABORT, {"reason": FORGED})
    FORGED_SENT.set()
    idle_until_stopped(party)


def out_of_sequence(party):
    channel = party.channel
    body = encode_message(b"x")
    prefix = DATA_PREFIX.pack(5, channel.link_id("a1", "r"))  # frame 5 where 0 is expected
    channel.streams["r"].send_parts([HEADER.pack(DATA, len(prefix) + len(body)), prefix, body])
    idle_until_stopped(party)


def wait_until(condition, limit: float = TIMEOUT) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end and not condition():
        time.sleep(0.01)


def busy_then_receive(party):
    """Busy (not receiving) until the bad frame (when ``a1`` sends one) and then the claim have arrived."""
    channel = party.channel
    if EXPECT_BAD_FRAME.is_set():
        wait_until(lambda: channel._failed)
    EVIDENCE_SEEN.set()
    FORGED_SENT.wait(TIMEOUT)
    wait_until(lambda: channel._aborts)
    return party.recv("a1")


def reset(*, bad_frame: bool) -> None:
    for event in (EXPECT_BAD_FRAME, EVIDENCE_SEEN, FORGED_SENT):
        event.clear()
    if bad_frame:
        EXPECT_BAD_FRAME.set()


def test_own_evidence_comes_before_a_forged_abort(tls_dir):
    reset(bad_frame=True)
    roles = {"a0": forger, "a1": out_of_sequence, "a2": idle_until_stopped, "r": busy_then_receive}
    results = run_socket_world(roles, tls_dir, timeout=TIMEOUT)
    error = results["r"]
    assert isinstance(error, ProtocolError), error
    text = str(error)
    assert "'a1' (rank 1) sent data frame 5 where 0 was expected: replayed or reordered" in text, text
    assert FORGED not in text and "reported" not in text, text


def test_a_claim_alone_is_quoted_as_the_senders_claim(tls_dir):
    reset(bad_frame=False)
    roles = {"a0": forger, "a1": idle_until_stopped, "a2": idle_until_stopped, "r": busy_then_receive}
    results = run_socket_world(roles, tls_dir, timeout=TIMEOUT)
    error = results["r"]
    assert isinstance(error, PeerFailureError), error
    assert str(error) == f"'r' stopped: 'a0' (rank 0) reported: {FORGED} ['a0''s claim, not checked by 'r']"
