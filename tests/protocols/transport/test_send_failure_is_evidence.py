"""A send that fails is first-hand evidence that the peer's link is gone, recorded at once.

CI's full suite once failed ``test_dropout_processes``: a provider sent its keys
and shares to a peer that had just died, the send failed with a broken pipe
before its reader thread had seen the connection close, so ``peer_gone`` still
said no, and the dropout-tolerant sum ended the run instead of leaving the dead
peer out. Here the link's stream is replaced by one whose sends fail, so the
reader never sees a close: only the send's own evidence can tell.
"""

from __future__ import annotations

import errno
import time

import pytest

from protocols.backends import dropout
from protocols.errors import PeerFailureError
from protocols.transport.certs import write_credentials
from tests.helpers.socket_helpers import run_socket_world


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    write_credentials(["a", "b"], directory)
    return directory


class BrokenStream:
    """A stream whose peer has gone: every send fails as the kernel reports a closed connection."""

    def __init__(self, inner):
        self._inner = inner

    def send_parts(self, parts):
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    def __getattr__(self, name):
        return getattr(self._inner, name)


def idle(party, seconds: float = 1.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and not party.channel._aborts:
        time.sleep(0.05)


def test_a_failed_send_marks_the_peer_gone_and_an_excused_send_carries_on(tls_dir):
    def sender(party):
        channel = party.channel
        channel.streams["b"] = BrokenStream(channel.streams["b"])
        assert not channel.peer_gone("b")
        with channel.tolerating(["b"]):
            sent = dropout._send_or_gone(party, "b", {"x": 1})
        return sent, channel.peer_gone("b")

    results = run_socket_world({"a": sender, "b": idle}, tls_dir, timeout=5.0)
    output = results["a"]
    assert not isinstance(output, Exception), output
    (sent, gone), _report = output
    assert (sent, gone) == (False, True)


def test_a_failed_send_outside_a_tolerated_sum_still_ends_the_run_naming_the_peer(tls_dir):
    def sender(party):
        party.channel.streams["b"] = BrokenStream(party.channel.streams["b"])
        party.send("b", {"x": 1})

    results = run_socket_world({"a": sender, "b": idle}, tls_dir, timeout=5.0)
    error = results["a"]
    assert isinstance(error, PeerFailureError), error
    assert "'b' (rank 1) closed the connection (sending to it failed" in str(error), error
