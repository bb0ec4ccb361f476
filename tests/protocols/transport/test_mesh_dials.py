"""connect_mesh dials every higher-rank peer at once: the first failure ends it, naming that peer."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import pytest

from protocols.errors import PeerTimeoutError
from protocols.transport.certs import write_credentials
from protocols.transport.links import handshake
from protocols.transport.mesh import connect_mesh
from protocols.transport.rendezvous import listen
from protocols.transport.tls import AuthenticationError, Credentials, client_context, server_context

#: The dials' deadline: far beyond what the failing dial takes.
DEADLINE = 30.0


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory):  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("tls")
    write_credentials(["a", "b", "c", "mallory"], folder, days=1)
    return folder


@contextlib.contextmanager
def silent_listener() -> Iterator[tuple[str, int]]:
    """A port that accepts connections (the kernel does) and never answers a handshake."""
    sock = listen("127.0.0.1", 0)
    try:
        yield ("127.0.0.1", sock.getsockname()[1])
    finally:
        sock.close()


@contextlib.contextmanager
def impostor(tls_dir) -> Iterator[tuple[str, int]]:  # type: ignore[no-untyped-def]
    """A TLS server with a valid certificate of the consortium that names 'mallory'."""
    sock = listen("127.0.0.1", 0)
    ctx = server_context(Credentials.from_dir(tls_dir, "mallory"))

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = sock.accept()
            with contextlib.suppress(Exception):
                handshake(conn, ctx, server=True, expected=None, me="mallory", where="a dialler", timeout=10)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield ("127.0.0.1", sock.getsockname()[1])
    finally:
        sock.close()


def test_a_failed_dial_ends_the_mesh_without_waiting_for_a_slower_peer(tls_dir) -> None:  # type: ignore[no-untyped-def]
    """'b' (dialled first by rank) never answers; 'c' is an impostor: the impostor is named at once.

    Dialled one after another, 'a' would wait for 'b' until the deadline and report a timeout.
    """
    ranks = {"a": 0, "b": 1, "c": 2}
    creds = Credentials.from_dir(tls_dir, "a")
    with silent_listener() as b, impostor(tls_dir) as c:
        start = time.monotonic()
        with pytest.raises(AuthenticationError, match="'c'") as caught:
            connect_mesh(
                "a", ranks, {"b": b, "c": c}, listen("127.0.0.1", 0), client_ctx=client_context(creds),
                server_ctx=server_context(creds), timeout=DEADLINE,
            )  # fmt: skip
        elapsed = time.monotonic() - start
    assert "mallory" in str(caught.value)
    assert elapsed < DEADLINE / 2, elapsed


def test_an_unreachable_peer_is_named_in_the_timeout(tls_dir) -> None:  # type: ignore[no-untyped-def]
    ranks = {"a": 0, "b": 1}
    creds = Credentials.from_dir(tls_dir, "a")
    with silent_listener() as b, pytest.raises(PeerTimeoutError, match=r"'b' \(rank 1\)"):
        connect_mesh(
            "a", ranks, {"b": b}, listen("127.0.0.1", 0), client_ctx=client_context(creds),
            server_ctx=server_context(creds), timeout=1.0,
        )  # fmt: skip


def test_every_peer_dialled_at_once_gets_its_stream(tls_dir) -> None:  # type: ignore[no-untyped-def]
    """Three parties in threads: each ends with one authenticated stream per peer."""
    ranks = {"a": 0, "b": 1, "c": 2}
    listeners = {name: listen("127.0.0.1", 0) for name in ranks}
    table = {name: ("127.0.0.1", sock.getsockname()[1]) for name, sock in listeners.items()}
    results: dict[str, object] = {}

    def party(name: str) -> None:
        creds = Credentials.from_dir(tls_dir, name)
        try:
            results[name] = connect_mesh(
                name, ranks, table, listeners[name], client_ctx=client_context(creds),
                server_ctx=server_context(creds), timeout=20.0,
            )  # fmt: skip
        except Exception as exc:  # inspected below
            results[name] = exc

    threads = [threading.Thread(target=party, args=(name,)) for name in ranks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for name in ranks:
        streams = results[name]
        assert isinstance(streams, dict), (name, streams)
        assert sorted(streams) == sorted(set(ranks) - {name})
        for stream in streams.values():
            stream.close()
