"""The user-space WAN emulator (protocols.testing.wan_emulator): delay, bandwidth, byte-exact forwarding, close.

Bounds are lower bounds the emulator must respect (a forwarder that ignored
the delay or the bandwidth fails them) and upper bounds with generous slack
for a loaded 2-core machine (a forwarder that applied a delay per chunk in
series, or twice, fails them).
"""

from __future__ import annotations

import math
import secrets
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from protocols.errors import InputValidationError
from protocols.testing import wan_emulator
from protocols.testing.wan_emulator import DelayForwarder, LinkProfile

#: Slack allowed above a lower bound, for scheduling on a loaded machine (seconds).
SLACK = 0.15


@pytest.fixture
def server() -> Iterator[socket.socket]:
    sock = socket.create_server(("127.0.0.1", 0))
    yield sock
    sock.close()


def _read_all(sock: socket.socket) -> bytes:
    parts = []
    while chunk := sock.recv(1 << 16):
        parts.append(chunk)
    return b"".join(parts)


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise ConnectionError(f"closed after {got} of {n} bytes")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _connect(server: socket.socket, fwd: DelayForwarder) -> tuple[socket.socket, socket.socket]:
    client = socket.create_connection(fwd.address)
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn, _ = server.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return client, conn


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rtt_seconds": -0.1},
        {"rtt_seconds": math.inf},
        {"rtt_seconds": math.nan},
        {"rtt_seconds": True},
        {"rtt_seconds": "0.1"},
        {"rtt_seconds": 0.1, "bandwidth_bits_per_second": 0},
        {"rtt_seconds": 0.1, "bandwidth_bits_per_second": -1e6},
        {"rtt_seconds": 0.1, "bandwidth_bits_per_second": math.inf},
    ],
)
def test_profile_refuses_invalid_values_naming_them(kwargs: dict[str, object]) -> None:
    field, value = list(kwargs.items())[-1]
    with pytest.raises(InputValidationError, match=field) as info:
        LinkProfile(**kwargs)  # type: ignore[arg-type]
    assert repr(value) in str(info.value)


def test_profile_accepts_zero_rtt_and_no_bandwidth() -> None:
    profile = LinkProfile(0.0)
    assert profile.one_way_seconds == 0.0
    assert profile.serialisation_seconds(10**9) == 0.0
    assert LinkProfile(0.2, 8e6).serialisation_seconds(10**6) == pytest.approx(1.0)


def test_forwarder_refuses_a_target_that_is_not_host_port() -> None:
    with pytest.raises(InputValidationError, match="target"):
        DelayForwarder("127.0.0.1:80", LinkProfile(0.0))  # type: ignore[arg-type]


def test_round_trips_take_one_rtt_and_a_new_connection_one_more(server: socket.socket) -> None:
    rtt = 0.2
    with DelayForwarder(server.getsockname()[:2], LinkProfile(rtt)) as fwd:
        start = time.monotonic()
        client, conn = _connect(server, fwd)
        with client, conn:
            client.sendall(b"a")
            assert _read_exactly(conn, 1) == b"a"
            conn.sendall(b"b")
            assert _read_exactly(client, 1) == b"b"
            first = time.monotonic() - start  # TCP's handshake round trip, then the data's
            times = []
            for _ in range(3):
                began = time.monotonic()
                client.sendall(b"ping")
                assert _read_exactly(conn, 4) == b"ping"
                conn.sendall(b"pong")
                assert _read_exactly(client, 4) == b"pong"
                times.append(time.monotonic() - began)
    assert 2 * rtt <= first < 2 * rtt + SLACK
    for seconds in times:
        assert rtt <= seconds < rtt + SLACK


def test_delay_of_a_chunk_does_not_add_to_the_next_ones(server: socket.socket) -> None:
    """20 messages 10 ms apart arrive one-way delay after each was sent, not 20 delays after the first."""
    rtt, count, gap = 0.2, 20, 0.01
    with DelayForwarder(server.getsockname()[:2], LinkProfile(rtt)) as fwd:
        client, conn = _connect(server, fwd)
        with client, conn:
            client.sendall(b"x")  # pay for the connection's handshake first
            _read_exactly(conn, 1)
            start = time.monotonic()
            arrivals: list[float] = []

            def receive() -> None:
                for _ in range(count):
                    _read_exactly(conn, 1)
                    arrivals.append(time.monotonic() - start)

            reader = threading.Thread(target=receive)
            reader.start()
            for _ in range(count):
                client.sendall(b"y")
                time.sleep(gap)
            reader.join(10)
    assert len(arrivals) == count
    assert arrivals[0] >= rtt / 2
    assert arrivals[-1] < rtt / 2 + count * gap + SLACK


@pytest.mark.parametrize("direction", ["to_target", "from_target"])
def test_bandwidth_paces_each_direction(server: socket.socket, direction: str) -> None:
    """500 kB at 4 Mbit/s take at least 1 s (and not much more) in either direction."""
    size, rate = 500_000, 4e6
    payload = secrets.token_bytes(size)
    with DelayForwarder(server.getsockname()[:2], LinkProfile(0.0, rate)) as fwd:
        client, conn = _connect(server, fwd)
        with client, conn:
            sender, receiver = (client, conn) if direction == "to_target" else (conn, client)
            start = time.monotonic()
            threading.Thread(target=sender.sendall, args=(payload,), daemon=True).start()
            got = _read_exactly(receiver, size)
            seconds = time.monotonic() - start
        counted = fwd.bytes_to_target if direction == "to_target" else fwd.bytes_from_target
    assert got == payload
    assert counted == size
    assert 8 * size / rate <= seconds < 8 * size / rate + 0.5


def test_connections_of_a_forwarder_share_its_bandwidth(server: socket.socket) -> None:
    """Two connections sending 250 kB each at once through one 4 Mbit/s link take 1 s, not 0.5 s."""
    size, rate = 250_000, 4e6
    with DelayForwarder(server.getsockname()[:2], LinkProfile(0.0, rate)) as fwd:
        pairs = [_connect(server, fwd) for _ in range(2)]
        payloads = [secrets.token_bytes(size) for _ in pairs]
        got: dict[int, bytes] = {}
        start = time.monotonic()
        for (client, _), payload in zip(pairs, payloads, strict=True):
            threading.Thread(target=client.sendall, args=(payload,), daemon=True).start()
        readers = [
            threading.Thread(target=lambda i=i, c=conn: got.__setitem__(i, _read_exactly(c, size)))
            for i, (_, conn) in enumerate(pairs)
        ]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(10)
        seconds = time.monotonic() - start
        for client, conn in pairs:
            client.close()
            conn.close()
    assert [got[0], got[1]] == payloads
    assert 8 * 2 * size / rate <= seconds < 8 * 2 * size / rate + 0.5


def test_forwarding_is_byte_exact_both_ways_with_half_close(server: socket.socket) -> None:
    up, down = secrets.token_bytes(300_000), secrets.token_bytes(200_001)
    with DelayForwarder(server.getsockname()[:2], LinkProfile(0.02)) as fwd:
        client, conn = _connect(server, fwd)
        with client, conn:
            client.sendall(up)
            client.shutdown(socket.SHUT_WR)  # half-close: the server still answers
            assert _read_all(conn) == up
            conn.sendall(down)
            conn.close()
            assert _read_all(client) == down
        assert (fwd.bytes_to_target, fwd.bytes_from_target) == (len(up), len(down))
        assert fwd.connections == 1


def _threads_left(before: set[threading.Thread], seconds: float = 5.0) -> list[str]:
    """Names of the threads started since ``before`` still alive after waiting up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        started = [t for t in threading.enumerate() if t not in before]
        if not started or time.monotonic() >= deadline:
            return [t.name for t in started]
        time.sleep(0.01)


def test_close_stops_the_threads_and_the_listener(server: socket.socket) -> None:
    before = set(threading.enumerate())
    fwd = DelayForwarder(server.getsockname()[:2], LinkProfile(0.05))
    client, conn = _connect(server, fwd)
    address = fwd.address
    fwd.close()
    assert _threads_left(before) == []
    assert client.recv(1) == b""  # the dialler's connection was closed
    client.close()
    conn.close()
    with pytest.raises(OSError):
        socket.create_connection(address, timeout=1).close()


def test_close_wakes_the_readers_when_the_reaper_closes_the_sockets_first(
    server: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loaded machine may run the reap thread between stopping a direction and the rest of close().

    Closing a socket does not wake a thread blocked in recv() on it; only a
    shutdown does. The stall after each stop gives the reap thread time to
    close both sockets, as a busy scheduler would: the readers must still end
    and the peers still see their connections close.
    """
    stop = wan_emulator._Direction.stop

    def stop_then_stall(self: wan_emulator._Direction) -> None:
        stop(self)
        if threading.current_thread() is threading.main_thread():  # close(), not the writer's own stop
            time.sleep(0.2)

    monkeypatch.setattr(wan_emulator._Direction, "stop", stop_then_stall)
    before = set(threading.enumerate())
    fwd = DelayForwarder(server.getsockname()[:2], LinkProfile(0.05))
    client, conn = _connect(server, fwd)
    fwd.close()
    assert _threads_left(before) == []
    client.settimeout(5)
    conn.settimeout(5)
    assert client.recv(1) == b""
    assert conn.recv(1) == b""
    client.close()
    conn.close()
