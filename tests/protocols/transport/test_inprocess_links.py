"""In-process links are made on first use: an abort or a departure must still reach them."""

import pytest

from protocols.errors import PeerFailureError
from protocols.transport.inprocess import InProcessNetwork


def test_only_the_links_used_are_made():
    names = [f"p{i}" for i in range(50)]
    network = InProcessNetwork(names, timeout=1.0)
    a, b = network.channel("p0"), network.channel("p7")
    a.send("p7", b"hello")
    assert b.recv("p0") == b"hello"
    assert set(network._queues) == {("p0", "p7")}  # not 50 * 49 queues


def test_an_abort_reaches_a_link_made_after_it():
    network = InProcessNetwork(["a", "b", "c"], timeout=5.0)
    network.abort("test abort")
    with pytest.raises(PeerFailureError, match="test abort"):
        network.channel("b").recv("c")
    with pytest.raises(PeerFailureError, match="test abort"):
        network.channel("b").send("a", b"x")


def test_a_party_that_left_before_a_link_was_made_fails_the_receive_at_once():
    network = InProcessNetwork(["a", "b", "c"], timeout=5.0)
    network.channel("a").send("b", b"early")
    network.channel("a").disconnect()
    b, c = network.channel("b"), network.channel("c")
    assert b.recv("a") == b"early"  # what was sent before leaving still arrives, in order
    with pytest.raises(PeerFailureError, match="left the run"):
        b.recv("a")
    with pytest.raises(PeerFailureError, match="left the run"):
        c.recv("a")  # this link did not exist when "a" left
