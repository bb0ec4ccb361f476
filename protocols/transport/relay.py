"""Relay mode: every party dials out to one relay; each pair runs its own TLS 1.3 session through it.

For parties behind firewalls that allow outbound connections only (issue 26).
Every party opens ONE mutually authenticated TLS 1.3 connection to the relay
(the relay's certificate names it :data:`RELAY_NAME`, under the consortium
CA). The relay hosts the rendezvous (:class:`RelayRendezvous`, the
:class:`~protocols.transport.rendezvous.Introducer`'s waiting room, join
window and late refusal over those same connections) for the layout its
operator fixed (no registrant can change it, issue 35) and then forwards
opaque frames between the parties (:class:`RelayServer`).

Outer frames
    Between a party and the relay, after the address table: a header
    (:data:`OUTER`: kind, a party's rank, payload length) and the payload. A
    party writes the *destination*'s rank, the relay writes the *source*'s
    rank. Kinds: :data:`DATA` (ciphertext of the pair's TLS session),
    :data:`END` (the sender closed its side of the pair, or its connection to
    the relay ended), :data:`NOTICE` (relay to party: why the relay
    stopped forwarding for a party, UTF-8 text) and :data:`STALL` (relay to
    party: that party does not read, UTF-8 text; empty: it reads again). A payload is at most
    :data:`MAX_FRAME_BYTES`.

End-to-end sessions
    Inside the outer frames, each pair of parties runs its own TLS 1.3
    session (:class:`~protocols.transport.relay_session.RelayedStream`, an :class:`ssl.SSLObject` over memory
    BIOs: ``SSLContext.wrap_bio``), the lower rank as client, with the same
    party certificates and contexts as the direct mesh
    (:mod:`protocols.transport.mesh`); each end checks that the peer's
    certificate names the party expected at that rank
    (:func:`~protocols.transport.tls.check_peer_name`). The relay holds no
    key that opens a frame. The TLS record layer (AEAD with an implicit
    sequence number) detects a frame the relay altered, replayed, reordered,
    dropped (a later record then fails) or injected: the pair's stream ends
    with a :class:`~protocols.errors.ProtocolError` naming the link and the
    relay ("frame on link 'a'<->'b' failed authentication: the relay altered,
    replayed, reordered or injected it ...").

What the relay sees
    Who talks to whom (the party names in the certificates), when, and how
    many bytes; never the content. It can delay or drop frames (a denial of
    service, which the parties' deadlines turn into an error), not forge,
    replay or reorder them undetected.

Bounded memory at the relay
    Frames from an insider party that name an unknown destination or
    itself, announce more than :data:`MAX_FRAME_BYTES`, or have an unknown
    kind end that party's connection; the relay tells every other party why
    (a :data:`NOTICE` naming it). Each party's outgoing queue at the relay
    holds at most ``queue_bytes`` (:data:`QUEUE_BYTES`); a source whose
    destination's queue is full waits (back-pressure, as TCP) for at most
    ``stall_seconds``, after which the destination that does not read is
    dropped and named. After :data:`REPORT_SECONDS` of such a wait the relay
    reports the destination to every other party (a :data:`STALL` frame:
    what it saw first-hand, which the parties quote in their errors; issue
    35), and withdraws the report once the destination reads again. Frames
    for a party that hung up are discarded, so the relay exits once every
    party has gone, whatever was queued. So the relay holds at most about ``W x (queue_bytes +
    MAX_FRAME_BYTES)`` for ``W`` parties, whatever an insider sends.

Bounded memory at a party
    The ciphertext received from one peer and not yet read is at most
    ``max_buffered`` bytes (:data:`BUFFERED_BYTES` unless given); beyond
    that the pair's stream fails, naming the peer (or the relay).

This module moves bytes only; it never imports :mod:`protocols.runtime`.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any

from protocols.errors import PeerFailureError, PeerTimeoutError, ProtocolError
from protocols.transport.links import ClosedError, Stream
from protocols.transport.ranks import check_ranks
from protocols.transport.relay_frames import (
    BUFFERED_BYTES,
    DATA,
    END,
    KINDS,
    MAX_FRAME_BYTES,
    MAX_NOTICE_CHARS,
    NOTICE,
    OUTER,
    QUEUE_BYTES,
    RELAY_NAME,
    REPORT_SECONDS,
    STALL,
    STALL_SECONDS,
    Payload,
)
from protocols.transport.relay_rendezvous import (
    MAX_PARTIES,
    RelayRendezvous,
    check_layout,
    parse_relay_registration,
)
from protocols.transport.relay_server import RelayServer
from protocols.transport.relay_session import RelayedStream
from protocols.transport.rendezvous import await_table, dial, parse_address, send_message

log = logging.getLogger("mpc_pca.transport")

_LINGER_SECONDS = 2.0


class RelayConnection:
    """This party's one connection to the relay, demultiplexed into one :class:`RelayedStream` per peer.

    Parameters
    ----------
    me : str
        This party's name.
    ranks : mapping of str to int
        Every party's rank.
    stream : Stream
        The authenticated connection to the relay (the address table already read).
    max_buffered : int
        Most ciphertext bytes buffered unread from one peer.
    send_timeout : float, optional
        Seconds a send to the relay may make no progress (the socket's timeout) before it fails,
        naming the parties the relay reports as not reading; ``None``: no bound.

    Attributes
    ----------
    reports : dict
        The relay's current reports of parties that do not read (:data:`STALL`), by party name.
    """

    def __init__(
        self,
        me: str,
        ranks: Mapping[str, int],
        stream: Stream,
        max_buffered: int,
        send_timeout: float | None = None,
    ) -> None:
        self.me = me
        self.send_timeout = send_timeout
        self.reports: dict[str, str] = {}
        self._broken: str | None = None
        self.ranks = dict(ranks)
        self.names = {r: n for n, r in self.ranks.items()}
        self.stream = stream
        self.max_buffered = int(max_buffered)
        self.streams: dict[str, RelayedStream] = {}
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._open: set[str] = set()
        self._closed = False
        self._demux_done = threading.Event()
        self._demux_done.set()  # until start(): nothing to wait for

    def add(self, peer: str, ctx: ssl.SSLContext, *, server: bool) -> RelayedStream:
        """The session with ``peer`` (not yet handshaken)."""
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(incoming, outgoing, server_side=server)
        stream = RelayedStream(self, peer, obj, incoming, outgoing)
        self.streams[peer] = stream
        self._open.add(peer)
        return stream

    def start(self) -> None:
        self._demux_done.clear()
        threading.Thread(target=self._demux, name=f"relay-demux-{self.me}", daemon=True).start()

    def send_frames(self, kind: int, rank: int, data: bytes) -> None:
        """``data`` to the party at ``rank``, in outer frames of at most :data:`MAX_FRAME_BYTES`."""
        parts: list[Any] = []
        view = memoryview(data)
        for start in range(0, max(1, len(view)), MAX_FRAME_BYTES):
            chunk = view[start : start + MAX_FRAME_BYTES]
            parts += [OUTER.pack(kind, rank, len(chunk)), chunk]
        with self._send_lock:
            if self._broken is not None:
                raise BrokenPipeError(self._broken)
            try:
                self.stream.send_parts(parts)
            except TimeoutError:
                # Part of a record may have left: this connection can carry nothing more.
                self._broken = (
                    f"{self.me!r}: a send through the relay made no progress for {self.send_timeout:g} s"
                )
                raise PeerTimeoutError(self._broken + self.report_suffix()) from None

    def report(self) -> str:
        """The relay's current reports of parties that do not read, joined ('' if none)."""
        with self._lock:
            return "; ".join(self.reports.values())

    def report_suffix(self) -> str:
        """``; the relay reports: ...`` for an error message, or ''."""
        text = self.report()
        return (
            f"; the relay reports: {text} (the relay's observation, not checked by {self.me!r})"
            if text
            else ""
        )

    def _stall_report(self, peer: str, payload: Payload) -> None:
        text = bytes(payload[:MAX_NOTICE_CHARS]).decode("utf-8", "replace")
        with self._lock:
            if text:
                self.reports[peer] = text
            else:
                self.reports.pop(peer, None)

    def _read_exact(self, n: int) -> memoryview:
        """Exactly ``n`` bytes from the relay; a receive timeout (the socket's send bound) is no error."""
        buf = memoryview(bytearray(n))
        got = 0
        while got < n:
            try:
                k = self.stream.recv_into(buf[got:n])
            except TimeoutError:
                continue
            if k == 0:
                raise ClosedError(f"connection closed after {got} of {n} bytes", truncated=got > 0)
            got += k
        return buf

    def _demux(self) -> None:
        try:
            self._demux_frames()
        finally:
            self._demux_done.set()

    def _demux_frames(self) -> None:
        where = "the relay"
        try:
            while True:
                try:
                    header = self._read_exact(OUTER.size)
                except ClosedError as exc:
                    if exc.truncated:
                        raise ProtocolError(f"{where} sent a truncated frame header") from None
                    raise PeerFailureError(f"{where} closed {self.me!r}'s connection to it") from None
                kind, rank, size = OUTER.unpack(header)
                if kind not in KINDS:
                    raise ProtocolError(f"{where} sent a frame of unknown kind {kind}")
                if rank not in self.names or self.names[rank] == self.me:
                    raise ProtocolError(
                        f"{where} sent a frame from rank {rank}, which is no peer of {self.me!r}"
                    )
                if size > MAX_FRAME_BYTES:
                    raise ProtocolError(
                        f"{where} sent a frame of {size} bytes; at most {MAX_FRAME_BYTES} are allowed"
                    )
                payload = self._read_exact(size) if size else memoryview(b"")
                stream = self.streams.get(self.names[rank])
                if stream is None:
                    continue

                if kind == DATA:
                    stream.feed(payload)
                elif kind == END:
                    stream.end()
                elif kind == STALL:
                    self._stall_report(stream.peer, payload)
                else:
                    text = bytes(payload[:MAX_NOTICE_CHARS]).decode("utf-8", "replace")
                    stream.fail(PeerFailureError(f"the relay reports on {stream.peer!r}: {text}"))
        except (ProtocolError, OSError, ValueError) as exc:
            with self._lock:
                closed = self._closed
            if not closed:
                error = exc if isinstance(exc, ProtocolError) else PeerFailureError(f"{where}: {exc}")
                for stream in self.streams.values():
                    stream.fail(
                        PeerFailureError(f"the link to {stream.peer!r} through the relay failed: {error}")
                    )

    def stream_closed(self, peer: str) -> None:
        """A pair's stream was closed; when all are, the connection to the relay is closed."""
        with self._lock:
            self._open.discard(peer)
            last = not self._open and not self._closed
            if last:
                self._closed = True
        if last and self._broken is not None:
            # the relay is not reading us: a close_notify would wait for the send timeout; cut at once
            with contextlib.suppress(OSError):
                self.stream.sock.shutdown(socket.SHUT_RDWR)
            self.stream.close()
        elif last:
            with self._send_lock:
                self.stream.close_write()
            # the relay closes its end once it has read ours and sent what it had queued: wait for that,
            # so that no frame still on its way turns the end of the connection into a reset
            self._demux_done.wait(_LINGER_SECONDS)
            self.stream.close()

    def close(self) -> None:
        """Close every pair's stream and the connection to the relay."""
        for stream in list(self.streams.values()):
            stream.close()
        with self._lock:
            done = self._closed
            self._closed = True
        if not done:
            self.stream.close()


def connect_relay(
    me: str,
    ranks: Mapping[str, int],
    relay: str,
    *,
    client_ctx: ssl.SSLContext,
    server_ctx: ssl.SSLContext,
    join_window: float,
    timeout: float,
    max_buffered: int = BUFFERED_BYTES,
    send_timeout: float | None = None,
) -> dict[str, Stream]:
    """Join the run at the relay and open one end-to-end TLS session per peer; return ``{peer: stream}``.

    Parameters
    ----------
    me : str
        This party's name (its certificate must name it).
    ranks : mapping of str to int
        Every party's rank; sent to the relay, which refuses a layout that
        differs from the other parties'.
    relay : str
        ``HOST:PORT`` of the relay.
    client_ctx, server_ctx : ssl.SSLContext
        This party's TLS contexts (the same as for direct links): the client
        context dials the relay and the higher ranks, the server context
        answers the lower ranks.
    join_window : float
        Seconds to wait for the relay and for every party to join.
    timeout : float
        Seconds for the pairwise handshakes once everyone has joined.
    max_buffered : int
        Most ciphertext bytes buffered unread from one peer.
    send_timeout : float, optional
        Seconds a send to the relay may make no progress before it fails (the run's receive
        deadline: a party held back by one that does not read then ends in time, quoting the
        relay's report); ``None``: no bound.

    Raises
    ------
    AuthenticationError
        The relay's certificate does not name :data:`RELAY_NAME`, the relay
        refused this party, or a peer's certificate does not name it.
    PeerTimeoutError
        The run did not come together in time.
    """
    table = check_ranks(ranks)
    rank = table[me]
    host, port = parse_address(relay)
    deadline = time.monotonic() + join_window
    where = f"the relay at {relay}"
    stream = dial(
        (host, port), client_ctx, expected=RELAY_NAME, me=me, where=where, deadline=deadline,
        retry_unreachable=True, what=f"{me!r} (rank {rank})",
    )  # fmt: skip
    conn: RelayConnection | None = None
    try:
        send_message(stream, {"name": me, "rank": rank, "layout": table})
        log.info("%r: registered at %s", me, where)
        await_table(stream, me, where, deadline, join_window)
        stream.sock.settimeout(send_timeout)
        conn = RelayConnection(me, table, stream, max_buffered, send_timeout)
        pending = []
        for peer, peer_rank in sorted(table.items(), key=lambda item: item[1]):
            if peer == me:
                continue
            server = peer_rank < rank  # the lower rank is the client
            pending.append((conn.add(peer, server_ctx if server else client_ctx, server=server), server))
        conn.start()
        errors: list[BaseException] = []
        hand_deadline = time.monotonic() + timeout

        def shake(pair: RelayedStream, server: bool) -> None:
            try:
                pair.handshake(server=server, deadline=hand_deadline)
            except BaseException as exc:
                errors.append(exc)

        threads = [
            threading.Thread(target=shake, args=item, name=f"relay-handshake-{me}", daemon=True)
            for item in pending
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
    except BaseException:
        if conn is not None:
            conn.close()
        else:
            stream.close()
        raise
    return dict(conn.streams)


__all__ = [
    "BUFFERED_BYTES",
    "DATA",
    "END",
    "MAX_FRAME_BYTES",
    "MAX_PARTIES",
    "NOTICE",
    "OUTER",
    "QUEUE_BYTES",
    "RELAY_NAME",
    "REPORT_SECONDS",
    "STALL",
    "STALL_SECONDS",
    "RelayConnection",
    "RelayRendezvous",
    "RelayServer",
    "RelayedStream",
    "check_layout",
    "connect_relay",
    "parse_relay_registration",
]
