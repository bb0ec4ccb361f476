"""An outsider with idle connections, and the set-up guards (parties as threads over TLS on loopback).

The outsider has no certificate: it opens TCP connections to the rendezvous
and to every party's listening port and sends nothing. Handshakes run
concurrently and bounded (:class:`~protocols.transport.rendezvous.HandshakeGate`),
so the run still completes with the normal result. Also here: the size cap
on a set-up frame (:func:`~protocols.transport.rendezvous.read_message`) and
the per-call timeout of ``Channel.recv``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

import protocols.runtime.network as network
from protocols.errors import PeerFailureError, PeerTimeoutError, ProtocolError
from protocols.transport.certs import write_credentials
from protocols.transport.inprocess import InProcessNetwork
from protocols.transport.links import HEADER, Stream
from protocols.transport.mesh import connect_mesh
from protocols.transport.rendezvous import (
    FIRST_BYTES_SECONDS,
    INTRODUCER_NAME,
    MAX_HANDSHAKES_PER_ADDRESS,
    MAX_SETUP_BYTES,
    Introducer,
    listen,
    read_message,
)
from protocols.transport.tls import Credentials, server_context
from protocols.transport.wire import encode_message
from tests.helpers.socket_helpers import run_socket_world

RANKS = {"a0": 0, "a1": 1, "a2": 2}
VALUES = {"a0": 3, "a1": 5, "a2": 11}
TIMEOUT = 10.0
CONNECT = 10.0
#: Idle connections the outsider opens to each listening port.
IDLE = 20
#: Allowed past the run's time without the outsider (thread scheduling on a busy machine).
SLACK = 2.0


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    write_credentials([*RANKS, INTRODUCER_NAME], directory)
    return directory


def exchange(party):
    """Every party sends its value to every peer and returns the sum of all values."""
    for peer in party.channel.peers:
        party.send(peer, VALUES[party.name])
    return VALUES[party.name] + sum(party.recv(peer) for peer in party.channel.peers)


class Outsider:
    """Opens idle TCP connections (no certificate, no byte sent) from ``source``."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.socks: list[socket.socket] = []

    def flood(self, address: tuple[str, int], n: int = IDLE) -> None:
        for _ in range(n):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((self.source, 0))
            sock.connect(address)
            self.socks.append(sock)

    def close(self) -> None:
        for sock in self.socks:
            sock.close()


@pytest.fixture
def outsider_factory() -> Iterator[Callable[[str], Outsider]]:
    made: list[Outsider] = []

    def make(source: str) -> Outsider:
        made.append(Outsider(source))
        return made[-1]

    yield make
    for outsider in made:
        outsider.close()


def run_world(tls_dir, monkeypatch, outsider: Outsider | None) -> tuple[dict[str, object], float]:
    """Host the rendezvous, start every party in a thread; return results and seconds to the last one.

    With ``outsider``, it floods the rendezvous before any party starts and each
    party's listening port as soon as it is open (before the party registers).
    """
    ctx = server_context(Credentials.from_dir(tls_dir, INTRODUCER_NAME))
    introducer = Introducer("127.0.0.1:0", RANKS, ctx, CONNECT + 3)
    if outsider is not None:
        outsider.flood(("127.0.0.1", introducer.port))
        real_listen = network.listen

        def flooded_listen(host: str, port: int = 0) -> socket.socket:
            sock = real_listen(host, port)
            outsider.flood(sock.getsockname()[:2])
            return sock

        monkeypatch.setattr(network, "listen", flooded_listen)
    results: dict[str, object] = {}

    def party(name: str) -> None:
        try:
            channel = network.open_links(
                name, RANKS, f"127.0.0.1:{introducer.port}", credentials=Credentials.from_dir(tls_dir, name),
                timeout=TIMEOUT, connect_timeout=CONNECT, host_rendezvous=False,
            )  # fmt: skip
            results[name] = network.run_role(channel, exchange)[0]
        except Exception as exc:  # collected for the test to inspect
            results[name] = exc

    start = time.perf_counter()
    threads = [threading.Thread(target=party, args=(name,), daemon=True) for name in RANKS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(3 * CONNECT)
    elapsed = time.perf_counter() - start
    introducer.join(5)
    monkeypatch.undo()
    return results, elapsed


@pytest.mark.parametrize(
    ("source", "delay"),
    [
        # Another host (127.0.0.2 is loopback too): its connections count against its own address.
        ("127.0.0.2", 0.0),
        # The honest parties' own address: they may be closed over the per-address limit and retry
        # until the outsider's connections reach the first-bytes deadline (rendezvous, then links).
        ("127.0.0.1", 2 * FIRST_BYTES_SECONDS),
    ],
)
def test_idle_connections_do_not_stop_or_delay_a_run(tls_dir, monkeypatch, outsider_factory, source, delay):
    baseline, normal = run_world(tls_dir, monkeypatch, None)
    assert baseline == {name: sum(VALUES.values()) for name in RANKS}, baseline
    outsider = outsider_factory(source)
    results, elapsed = run_world(tls_dir, monkeypatch, outsider)
    assert len(outsider.socks) == IDLE * (1 + len(RANKS))  # the rendezvous and every party's port
    assert results == {name: sum(VALUES.values()) for name in RANKS}, results
    assert elapsed <= normal + delay + SLACK, (elapsed, normal)


def test_a_party_that_times_out_says_what_happened_at_the_rendezvous(tls_dir, outsider_factory):
    """'a2' never comes and 3 idle connections sit at the rendezvous: both are reported, not 'authentication'."""
    ctx = server_context(Credentials.from_dir(tls_dir, INTRODUCER_NAME))
    wait = FIRST_BYTES_SECONDS + 1.0
    introducer = Introducer("127.0.0.1:0", RANKS, ctx, wait)
    outsider_factory("127.0.0.2").flood(("127.0.0.1", introducer.port), 3)
    errors: dict[str, BaseException] = {}

    def party(name: str) -> None:
        try:
            network.open_links(
                name, RANKS, f"127.0.0.1:{introducer.port}", credentials=Credentials.from_dir(tls_dir, name),
                timeout=TIMEOUT, connect_timeout=wait + 2, host_rendezvous=False,
            )  # fmt: skip
        except ProtocolError as exc:
            errors[name] = exc

    threads = [threading.Thread(target=party, args=(name,), daemon=True) for name in ("a0", "a1")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(4 * wait)
    assert set(errors) == {"a0", "a1"}, errors
    for exc in errors.values():
        text = str(exc)
        assert isinstance(exc, PeerTimeoutError), text
        assert "3 connections did not complete a handshake at the rendezvous" in text, text
        assert "'a2' (rank 2) did not join" in text, text
        assert "authentication failed" not in text, text


def test_connections_still_in_a_handshake_when_the_rendezvous_gives_up_are_counted(tls_dir, outsider_factory):
    """The rendezvous gives up before the idle connections' first-bytes deadline: they are still reported."""
    ctx = server_context(Credentials.from_dir(tls_dir, INTRODUCER_NAME))
    introducer = Introducer("127.0.0.1:0", RANKS, ctx, FIRST_BYTES_SECONDS / 3)
    outsider_factory("127.0.0.2").flood(("127.0.0.1", introducer.port), 2)
    introducer.join(FIRST_BYTES_SECONDS * 3)
    assert introducer.error is not None
    assert "'a0' (rank 0), 'a1' (rank 1), 'a2' (rank 2) did not join" in introducer.error, introducer.error
    assert "2 connections did not complete a handshake at the rendezvous" in introducer.error, (
        introducer.error
    )


def test_a_party_whose_peer_never_dials_counts_the_idle_connections(tls_dir, outsider_factory):
    """'a1' waits for 'a0', which never dials, while idle connections and an over-limit burst arrive."""
    listener = listen("127.0.0.1", 0)
    outsider = outsider_factory("127.0.0.2")
    outsider.flood(listener.getsockname()[:2], MAX_HANDSHAKES_PER_ADDRESS + 2)
    ranks = {"a0": 0, "a1": 1}
    with pytest.raises(PeerTimeoutError) as caught:
        connect_mesh(
            "a1", ranks, {}, listener, client_ctx=None,
            server_ctx=server_context(Credentials.from_dir(tls_dir, "a1")), timeout=FIRST_BYTES_SECONDS + 1,
        )  # fmt: skip
    text = str(caught.value)
    assert "'a0' (rank 0) did not connect" in text, text
    assert f"{MAX_HANDSHAKES_PER_ADDRESS} connections did not complete a handshake at 'a1'" in text, text
    assert "2 connections were closed at once, over the limit of 8 handshakes in flight per address" in text


# -- the size cap on a set-up frame -------------------------------------------------------------


def _pair() -> tuple[socket.socket, Stream]:
    a, b = socket.socketpair()
    b.settimeout(5)
    return a, Stream(b)


def test_an_oversize_setup_frame_is_refused_naming_the_limit():
    """A HELLO one byte over the cap, fully sent and well formed, is refused (not decoded)."""
    payload = encode_message({"name": "a0", "pad": "x" * MAX_SETUP_BYTES})
    assert len(payload) > MAX_SETUP_BYTES
    a, stream = _pair()
    threading.Thread(target=a.sendall, args=(HEADER.pack(6, len(payload)) + payload,), daemon=True).start()
    with pytest.raises(
        ProtocolError, match=f"{len(payload)} bytes, over the limit of {MAX_SETUP_BYTES} bytes"
    ):
        read_message(stream, "a connection from 127.0.0.1:5")
    a.close()
    stream.close()


def test_a_huge_setup_header_is_refused_before_allocating():
    """A header announcing 1 TiB (and nothing after it) is refused at once, naming the sender and the limit."""
    a, stream = _pair()
    a.sendall(HEADER.pack(6, 1 << 40))
    start = time.perf_counter()
    with pytest.raises(
        ProtocolError,
        match=r"a connection from 127\.0\.0\.1:5 announced a set-up message of 1099511627776 bytes",
    ):
        read_message(stream, "a connection from 127.0.0.1:5")
    assert time.perf_counter() - start < 1.0
    a.close()
    stream.close()


# -- Channel.recv's per-call timeout -------------------------------------------------------------


def test_inprocess_recv_honours_its_per_call_timeout():
    """A recv with timeout=0.3 on a channel whose default is 30 s raises within 2 s, naming the peer."""
    net = InProcessNetwork(["a0", "a1"], timeout=30.0)
    start = time.perf_counter()
    with pytest.raises(PeerTimeoutError, match=r"'a1' received nothing from 'a0' within 0\.3 s"):
        net.channel("a1").recv("a0", timeout=0.3)
    assert time.perf_counter() - start < 2.0


def test_socket_recv_honours_its_per_call_timeout(tls_dir):
    """Over TLS, default 30 s: 'a1' receives with timeout=0.3 from 'a0' (which sends nothing) and ends within 2 s."""
    ended: dict[str, float] = {}

    def quick(party):
        start = time.perf_counter()
        try:
            return party.recv("a0", timeout=0.3)
        finally:
            ended[party.name] = time.perf_counter() - start

    def waits(party):
        return party.recv("a1")  # ends when 'a1' reports its failure

    results = run_socket_world({"a0": waits, "a1": quick}, tls_dir, timeout=30.0)
    assert isinstance(results["a1"], PeerTimeoutError), results["a1"]
    assert "0.3 s" in str(results["a1"]) and "'a0'" in str(results["a1"]), results["a1"]
    assert ended["a1"] < 2.0, ended
    assert isinstance(results["a0"], PeerFailureError), results["a0"]
