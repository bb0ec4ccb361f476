"""One authenticated connection per pair of parties: the lower rank dials, the higher accepts.

See :mod:`protocols.transport.rendezvous` for how parties learn each other's
addresses. Each link is checked at both ends: the dialler's TLS context
demands that the acceptor's certificate names the party expected at that
rank, and the acceptor demands that the dialler's certificate names the party
its ``HELLO`` claims to be, one of the lower ranks that has not connected yet.
Connections that fail these checks are refused and remembered, so a run that
does not come together says why.

The acceptor runs each handshake in its own thread under a
:class:`~protocols.transport.rendezvous.HandshakeGate` (first bytes within
:data:`~protocols.transport.rendezvous.FIRST_BYTES_SECONDS`, at most
:data:`~protocols.transport.rendezvous.MAX_HANDSHAKES_PER_ADDRESS` in flight
per source address and :data:`~protocols.transport.rendezvous.MAX_HANDSHAKES`
in all), so idle or slow connections from an outsider delay no dialler; a
dialler closed unanswered by a busy acceptor retries until its deadline.
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
from protocols.transport.rendezvous import (
    FIRST_BYTES_SECONDS,
    HANDSHAKE_SECONDS,
    HandshakeGate,
    dial,
    parse_hello,
    read_message,
    send_message,
)
from protocols.transport.tls import AuthenticationError


class _Acceptor:
    """Accepts the links from lower ranks, each handshake in its own thread (see :class:`HandshakeGate`)."""

    def __init__(
        self, me: str, expected: dict[str, int], ctx: ssl.SSLContext | None, deadline: float
    ) -> None:
        self.me = me
        self.expected = expected
        self.ctx = ctx
        self.deadline = deadline
        self.gate = HandshakeGate(repr(me))
        self.accepted: dict[str, Stream] = {}
        self.complete = threading.Event()
        self._lock = threading.Lock()
        self._finished = False
        if not expected:
            self.complete.set()

    def serve(self, listener: socket.socket, done: threading.Event) -> None:
        try:
            self.gate.serve(listener, self.deadline, self._admit, self.complete)
        finally:
            with self._lock:
                self._finished = True
            self.gate.stop()
            done.set()

    def _admit(self, conn: socket.socket, who: str) -> None:
        me, expected = self.me, self.expected
        timeout = max(0.1, min(self.deadline - time.monotonic(), HANDSHAKE_SECONDS))
        stream, cert_name = handshake(
            conn, self.ctx, server=True, expected=None, me=me, where=who, timeout=timeout,
            first_bytes=FIRST_BYTES_SECONDS,
        )  # fmt: skip
        try:
            conn.settimeout(FIRST_BYTES_SECONDS if self.ctx is None else timeout)
            name = parse_hello(who, read_message(stream, who))
            if self.ctx is not None and name in expected and cert_name != name:
                raise AuthenticationError(
                    f"{me!r}: authentication failed for {who} claiming to be {name!r} "
                    f"(rank {expected[name]}): its certificate is issued to {cert_name!r}"
                )
            conn.settimeout(None)
            with self._lock:
                if self._finished:
                    raise PeerTimeoutError(
                        f"{me!r}: {who} said it is {name!r} after {me!r} stopped accepting"
                    )
                if name not in expected or name in self.accepted:
                    raise AuthenticationError(
                        f"{me!r}: authentication failed for {who}: it claims to be {name!r}, which is not a "
                        f"party that dials {me!r} (expected one of {sorted(set(expected) - set(self.accepted))})"
                    )
                self.gate.keep(conn)
                self.accepted[name] = stream
                if len(self.accepted) == len(expected):
                    self.complete.set()
        except BaseException:
            stream.close()
            raise


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
    acceptor = _Acceptor(me, lower, server_ctx, deadline)
    accepted = acceptor.accepted
    done = threading.Event()
    threading.Thread(target=acceptor.serve, args=(listener, done), name=f"accept-{me}", daemon=True).start()
    streams: dict[str, Stream] = {}
    try:
        for peer, peer_rank in sorted(ranks.items(), key=lambda item: item[1]):
            if peer_rank <= rank:
                continue
            if peer not in table:
                raise ProtocolError(f"the rendezvous gave {me!r} no address for {peer!r}")
            host, port = table[peer]
            where = f"{peer!r} (rank {peer_rank}) at {host}:{port}"
            stream = dial(
                (host, port), client_ctx, expected=peer, me=me, where=where, deadline=deadline,
                retry_unreachable=False, what=repr(me),
            )  # fmt: skip
            send_message(stream, {"name": me})
            streams[peer] = stream
        done.wait(max(0.0, deadline - time.monotonic()) + 1.0)
        with acceptor._lock:
            acceptor._finished = True
            missing = [f"{n!r} (rank {r})" for n, r in lower.items() if n not in accepted]
        if missing:
            raise PeerTimeoutError(
                f"{me!r} waited {timeout:g} s, but {', '.join(missing)} did not connect{acceptor.gate.summary()}"
            )
    except BaseException:
        acceptor.complete.set()  # stop accepting
        with acceptor._lock:
            acceptor._finished = True
        for stream in [*streams.values(), *accepted.values()]:
            stream.close()
        raise
    finally:
        with contextlib.suppress(OSError):
            listener.close()
    streams.update(accepted)
    return streams


__all__ = ["connect_mesh"]
