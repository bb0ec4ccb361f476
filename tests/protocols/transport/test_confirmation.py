"""The final confirmation round of a socket run (protocols.transport.confirmation), parties as threads.

A party's ``run_role`` returns its output only once every peer that is not
excused confirmed that it finished (its ``BYE``); a peer that vanishes, fails
or stays silent instead makes it raise naming that peer. The multi-process
version (killed providers, no output files) is tests/multiprocess/test_all_or_nothing.py.
"""

from __future__ import annotations

import time

import pytest

from protocols.errors import PeerFailureError, PeerTimeoutError
from protocols.transport.certs import write_credentials
from protocols.transport.confirmation import CONFIRMATION_FRAME_BYTES
from tests.helpers.socket_helpers import run_socket_world

NAMES = ("a0", "a1", "a2")


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    write_credentials(list(NAMES), directory)
    return directory


def finish(party):
    return party.name


def vanish(party):
    """Everything sent, then the links close without a confirmation (as when the process is killed)."""
    for stream in party.channel.streams.values():
        stream.sock.close()
    return party.name


def test_every_party_returns_once_all_confirmed_and_the_cost_is_one_frame_per_peer(tls_dir):
    results = run_socket_world(dict.fromkeys(NAMES, finish), tls_dir, timeout=5)
    for name in NAMES:
        output, _report = results[name]
        assert output == name
    assert CONFIRMATION_FRAME_BYTES == 18  # 9-byte header + the 9-byte empty mapping


def test_a_peer_that_vanishes_before_confirming_fails_every_other_party_naming_it(tls_dir):
    results = run_socket_world({"a0": finish, "a1": finish, "a2": vanish}, tls_dir, timeout=5)
    for name in ("a0", "a1"):
        exc = results[name]
        assert isinstance(exc, PeerFailureError), (name, exc)
        assert "writes no result" in str(exc) and "'a2' (rank 2) closed the connection" in str(exc), exc
        assert "before confirming that it finished" in str(exc), exc


def test_a_peer_that_fails_after_the_others_finished_is_quoted_by_them(tls_dir):
    def fail_late(party):
        time.sleep(0.3)  # the others are already waiting for confirmations
        raise ValueError("late failure")

    results = run_socket_world({"a0": finish, "a1": finish, "a2": fail_late}, tls_dir, timeout=5)
    assert isinstance(results["a2"], ValueError)
    for name in ("a0", "a1"):
        exc = results[name]
        assert isinstance(exc, PeerFailureError), (name, exc)
        assert "'a2' (rank 2) reported" in str(exc) and "late failure" in str(exc), exc


@pytest.mark.parametrize("secure", [True, False])
def test_a_silent_peer_is_named_when_the_deadline_passes(tls_dir, secure):
    """Also over --insecure links, whose dialled sockets once kept their connect timeout (a silent link broke)."""

    def stall(party):
        time.sleep(4)
        return party.name

    start = time.monotonic()
    results = run_socket_world(
        {"a0": finish, "a1": finish, "a2": stall}, tls_dir if secure else None, timeout=1.5
    )
    for name in ("a0", "a1"):
        exc = results[name]
        assert isinstance(exc, PeerTimeoutError), (name, exc)
        assert "no confirmation that the run finished came within 1.5 s from 'a2' (rank 2)" in str(exc), exc
    assert time.monotonic() - start < 30


def test_a_dropped_peer_is_not_awaited(tls_dir):
    """Dropout: a provider the protocol dropped is excused, so its missing confirmation fails nobody."""

    def drop_a2(party):
        party.channel.drop("a2")
        return party.name

    results = run_socket_world({"a0": drop_a2, "a1": drop_a2, "a2": vanish}, tls_dir, timeout=5)
    for name in ("a0", "a1"):
        output, _report = results[name]
        assert output == name
