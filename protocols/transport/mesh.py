"""One authenticated connection per pair of parties: the lower rank dials, the higher accepts.

See :mod:`protocols.transport.rendezvous` for how parties learn each other's
addresses. Each link is checked at both ends: the dialler's TLS context
demands that the acceptor's certificate names the party expected at that
rank, and the acceptor demands that the dialler's certificate names the party
its ``HELLO`` claims to be, one of the lower ranks that has not connected yet.
Connections that fail these checks are refused and remembered, so a run that
does not come together says why.

A party dials all its higher-rank peers at once, one thread per dial, so
connecting costs about two and a half round trips (TCP, TLS 1.3, ``HELLO``)
at any number of parties; the first dial that fails ends the attempt with
that failure, naming the peer.

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
    Wakeup,
    dial,
    handshake_limits,
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
        self.gate = HandshakeGate(repr(me), *handshake_limits(len(expected)))
        self.accepted: dict[str, Stream] = {}
        self.complete = Wakeup()
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
            self.complete.close()
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
    retry_unreachable: bool = False,
) -> dict[str, Stream]:
    """Connect to every other party; return ``{peer: stream}``.

    Every higher-rank peer is dialled at once (one thread per dial: TCP, TLS
    and ``HELLO``, about two and a half round trips in all, whatever the
    number of parties) while the links from lower ranks are accepted.

    ``retry_unreachable``: keep dialling a peer that refuses the connection
    until ``timeout`` (a static address table, where a peer may not be
    listening yet; with a rendezvous every peer listens before the table
    arrives, so a refusal is a failure).

    Raises
    ------
    AuthenticationError
        A party we dialled did not prove the expected name (the first such
        failure, naming the party; the other dials are abandoned).
    PeerTimeoutError
        A party we dialled could not be reached in time, or some lower-rank
        party did not connect (with the refused attempts, if any).
    """
    rank = ranks[me]
    lower = {n: r for n, r in ranks.items() if r < rank}
    higher = sorted(((n, r) for n, r in ranks.items() if r > rank), key=lambda item: item[1])
    for peer, _ in higher:
        if peer not in table:
            raise ProtocolError(f"the address table gives {me!r} no address for {peer!r}")
    deadline = time.monotonic() + timeout
    acceptor = _Acceptor(me, lower, server_ctx, deadline)
    accepted = acceptor.accepted
    done = threading.Event()
    threading.Thread(target=acceptor.serve, args=(listener, done), name=f"accept-{me}", daemon=True).start()
    dials = _Dials(me, table, client_ctx, deadline, retry_unreachable)
    try:
        for peer, peer_rank in higher:
            dials.start(peer, peer_rank)
        streams = dials.wait()
        if not acceptor.complete.wait(max(0.0, deadline - time.monotonic()) + 1.0):
            done.wait(1.0)  # the acceptor stops at the deadline: let it count what failed
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
        for stream in [*dials.abandon(), *accepted.values()]:
            stream.close()
        raise
    finally:
        acceptor.complete.set()
        done.wait(1.0)  # the accept loop has left select() before its listener closes
        with contextlib.suppress(OSError):
            listener.close()
    streams.update(accepted)
    return streams


class _Dials:
    """The dials of one party to its higher-rank peers, each in its own thread."""

    def __init__(
        self,
        me: str,
        table: Mapping[str, tuple[str, int]],
        ctx: ssl.SSLContext | None,
        deadline: float,
        retry_unreachable: bool = False,
    ) -> None:
        self.me, self.table, self.ctx, self.deadline = me, table, ctx, deadline
        self.retry_unreachable = retry_unreachable
        self._cond = threading.Condition()
        self._streams: dict[str, Stream] = {}
        self._errors: list[BaseException] = []
        self._pending = 0
        self._abandoned = False

    def start(self, peer: str, peer_rank: int) -> None:
        with self._cond:
            self._pending += 1
        threading.Thread(
            target=self._dial, args=(peer, peer_rank), name=f"dial-{self.me}-{peer}", daemon=True
        ).start()

    def _dial(self, peer: str, peer_rank: int) -> None:
        host, port = self.table[peer]
        where = f"{peer!r} (rank {peer_rank}) at {host}:{port}"
        stream: Stream | None = None
        error: BaseException | None = None
        try:
            stream = dial(
                (host, port), self.ctx, expected=peer, me=self.me, where=where, deadline=self.deadline,
                retry_unreachable=self.retry_unreachable, what=repr(self.me),
            )  # fmt: skip
            send_message(stream, {"name": self.me})
        except BaseException as exc:  # reported by wait(), in the caller's thread
            error = exc
        with self._cond:
            self._pending -= 1
            if error is not None:
                self._errors.append(error)
            elif stream is not None and not self._abandoned:
                self._streams[peer] = stream
                stream = None
            self._cond.notify_all()
        if stream is not None:  # the caller gave up meanwhile
            stream.close()

    def wait(self) -> dict[str, Stream]:
        """Every dialled stream, or the first failure (naming its peer) as soon as it happens."""
        with self._cond:
            while self._pending and not self._errors:
                self._cond.wait()
            if self._errors:
                raise self._errors[0]
            return dict(self._streams)

    def abandon(self) -> list[Stream]:
        """Stop waiting: the streams dialled so far (to close); later ones close themselves."""
        with self._cond:
            self._abandoned = True
            streams, self._streams = list(self._streams.values()), {}
        return streams


__all__ = ["connect_mesh"]
