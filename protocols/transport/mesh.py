"""One authenticated connection per pair of parties: the lower rank dials, the higher accepts.

See :mod:`protocols.transport.rendezvous` for how parties learn each other's
addresses. Each link is checked at both ends: the dialler's TLS context
demands that the acceptor's certificate names the party expected at that
rank, and the acceptor demands that the dialler's certificate names the party
its ``HELLO`` claims to be, one of the lower ranks that has not connected yet.
Connections that fail these checks are refused and remembered, so a run that
does not come together says why.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Mapping

from protocols.errors import PeerTimeoutError, ProtocolError
from protocols.transport.links import Stream, handshake
from protocols.transport.rendezvous import parse_hello, read_message, send_message
from protocols.transport.tls import AuthenticationError


def _accept_all(
    listener: socket.socket,
    me: str,
    expected: dict[str, int],
    ctx: ssl.SSLContext | None,
    deadline: float,
    out: dict[str, Stream],
    refused: list[str],
    done: threading.Event,
) -> None:
    try:
        while len(out) < len(expected):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            listener.settimeout(remaining)
            try:
                conn, addr = listener.accept()
            except (TimeoutError, OSError):
                continue
            who = f"a connection from {addr[0]}:{addr[1]}"
            try:
                stream, cert_name = handshake(
                    conn, ctx, server=True, expected=None, me=me, where=who, timeout=min(remaining, 10.0)
                )
                conn.settimeout(min(remaining, 10.0))
                name = parse_hello(who, read_message(stream, who))
                if name not in expected or name in out:
                    raise AuthenticationError(
                        f"{me!r}: authentication failed for {who}: it claims to be {name!r}, which is not a "
                        f"party that dials {me!r} (expected one of {sorted(set(expected) - set(out))})"
                    )
                if ctx is not None and cert_name != name:
                    raise AuthenticationError(
                        f"{me!r}: authentication failed for {who} claiming to be {name!r} "
                        f"(rank {expected[name]}): its certificate is issued to {cert_name!r}"
                    )
                conn.settimeout(None)
                out[name] = stream
            except ProtocolError as exc:
                refused.append(str(exc))
                with contextlib.suppress(OSError):
                    conn.close()
    finally:
        done.set()


def connect_mesh(
    me: str,
    ranks: Mapping[str, int],
    table: Mapping[str, tuple[str, int]],
    listener: socket.socket,
    *,
    client_ctx: ssl.SSLContext | None,
    server_ctx: ssl.SSLContext | None,
    timeout: float,
) -> dict[str, Stream]:
    """Connect to every other party; return ``{peer: stream}``.

    Raises
    ------
    AuthenticationError
        A party we dialled did not prove the expected name.
    PeerTimeoutError
        Some lower-rank party did not connect (with the refused attempts, if any).
    """
    rank = ranks[me]
    lower = {n: r for n, r in ranks.items() if r < rank}
    deadline = time.monotonic() + timeout
    accepted: dict[str, Stream] = {}
    refused: list[str] = []
    done = threading.Event()
    acceptor = threading.Thread(
        target=_accept_all,
        args=(listener, me, lower, server_ctx, deadline, accepted, refused, done),
        name=f"accept-{me}",
        daemon=True,
    )
    acceptor.start()
    streams: dict[str, Stream] = {}
    try:
        for peer, peer_rank in sorted(ranks.items(), key=lambda item: item[1]):
            if peer_rank <= rank:
                continue
            if peer not in table:
                raise ProtocolError(f"the rendezvous gave {me!r} no address for {peer!r}")
            host, port = table[peer]
            where = f"{peer!r} (rank {peer_rank}) at {host}:{port}"
            try:
                sock = socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic()))
            except OSError as exc:
                raise PeerTimeoutError(f"{me!r} could not connect to {where}: {exc}") from None
            stream, _ = handshake(
                sock, client_ctx, server=False, expected=peer, me=me, where=where,
                timeout=max(0.1, deadline - time.monotonic()),
            )  # fmt: skip
            send_message(stream, {"name": me})
            streams[peer] = stream
        done.wait(max(0.0, deadline - time.monotonic()) + 1.0)
        missing = [f"{n!r} (rank {r})" for n, r in lower.items() if n not in accepted]
        if missing:
            why = f"; refused: {'; '.join(refused)}" if refused else ""
            raise PeerTimeoutError(
                f"{me!r} waited {timeout:g} s, but {', '.join(missing)} did not connect{why}"
            )
    except BaseException:
        for stream in [*streams.values(), *accepted.values()]:
            stream.close()
        raise
    finally:
        with contextlib.suppress(OSError):
            listener.close()
    streams.update(accepted)
    return streams


__all__ = ["connect_mesh"]
