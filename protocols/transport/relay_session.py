"""One pair's end-to-end TLS 1.3 session through the relay (:class:`RelayedStream`).

Inside the relay's outer frames (:mod:`protocols.transport.relay_frames`),
each pair of parties runs its own TLS 1.3 session, an :class:`ssl.SSLObject`
over memory BIOs (``SSLContext.wrap_bio``), the lower rank as client, with
the same party certificates and contexts as the direct mesh. The relay holds
no key that opens a frame; the TLS record layer detects a frame it altered,
replayed, reordered, dropped or injected, and the pair's stream then ends
with a :class:`~protocols.errors.ProtocolError` naming the link and the
relay. The ciphertext received from the peer and not yet read is bounded
(``max_buffered``). See :mod:`protocols.transport.relay` for the whole
design; :class:`~protocols.transport.relay.RelayConnection` feeds every
session its ciphertext and carries what it sends.

This module moves bytes only; it never imports :mod:`protocols.runtime`.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
import time
from typing import TYPE_CHECKING, Any

from protocols.errors import PeerTimeoutError, ProtocolError
from protocols.transport.links import Stream
from protocols.transport.relay_frames import DATA, END
from protocols.transport.tls import AuthenticationError, check_peer_name

if TYPE_CHECKING:
    from protocols.transport.relay import RelayConnection

_PLAINTEXT_CHUNK = 1 << 20


def _tamper_message(me: str, peer: str, reason: str) -> str:
    if "ALERT" in reason.upper():  # the peer's TLS refused a record this party sent
        return (
            f"{peer!r} refused a frame on link {me!r}<->{peer!r} (TLS alert: {reason}): the relay altered, "
            "replayed, reordered or injected a frame on the way"
        )
    return (
        f"frame on link {me!r}<->{peer!r} failed authentication (TLS: {reason}): the relay altered, "
        f"replayed, reordered or injected it (or {peer!r} sent bytes that are not its TLS records)"
    )


class RelayedStream(Stream):
    """One pair's TLS 1.3 session carried in outer frames through the relay.

    The same interface as the direct mesh's streams
    (:class:`~protocols.transport.links.TlsStream`): one writer thread
    (``send_parts``, ``close_write``) and one reader thread (``recv_into``,
    ``read_exact``). Ciphertext from the peer is written into the session's
    incoming BIO by the :class:`RelayConnection`'s demultiplexer.

    Parameters
    ----------
    conn : RelayConnection
        This party's connection to the relay.
    peer : str
        The party at the other end.
    obj, incoming, outgoing
        The session's :class:`ssl.SSLObject` and its memory BIOs.
    """

    secure = True

    def __init__(
        self,
        conn: RelayConnection,
        peer: str,
        obj: ssl.SSLObject,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
    ) -> None:
        super().__init__(conn.stream.sock)
        self.conn = conn
        self.peer = peer
        self.rank = conn.ranks[peer]
        self._obj, self._in, self._out = obj, incoming, outgoing
        self._cond = threading.Condition()  # guards the SSLObject, the BIOs and the flags below
        self._ended = False  # the peer (or the relay) said END: no more ciphertext will come
        self._fed = 0  # pieces of ciphertext received so far (a reader waits for this to change)
        self._eof_written = False
        self._failure: ProtocolError | None = None
        self._closed = False
        self._write_closed = False

    # fed by the demultiplexer
    def feed(self, data: bytes | memoryview) -> None:
        """Ciphertext from the peer; beyond ``max_buffered`` unread bytes the stream fails."""
        with self._cond:
            if self._closed or self._failure is not None:
                return
            limit = self.conn.max_buffered
            if self._in.pending + len(data) > limit:
                self._failure = ProtocolError(
                    f"{self.peer!r} (through the relay) sent more than the {limit} bytes "
                    f"{self.conn.me!r} may have unread from one peer"
                )
            else:
                self._in.write(data)
                self._fed += 1
            self._cond.notify_all()

    def relay_report(self) -> str:
        """The relay's current reports of parties that do not read ('' if none): for the blame (issue 35)."""
        return self.conn.report()

    def end(self) -> None:
        """The peer's side ended (its ``close_write``, or its connection to the relay)."""
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def fail(self, error: ProtocolError) -> None:
        """End the stream with ``error`` (raised to the reader once the ciphertext already received is read)."""
        with self._cond:
            if self._failure is None:
                self._failure = error
            self._cond.notify_all()

    # the session's own traffic
    def _flush(self) -> None:
        """Send pending ciphertext as outer frames; the caller holds the send lock."""
        with self._cond:
            data = self._out.read()
        if data:
            self.conn.send_frames(DATA, self.rank, data)

    def handshake(self, *, server: bool, deadline: float) -> None:
        """Run the pair's TLS handshake; the peer's certificate must name :attr:`peer`.

        Raises
        ------
        AuthenticationError
            The handshake failed or the certificate names another party.
        PeerTimeoutError
            It did not finish by ``deadline`` (monotonic).
        """
        me = self.conn.me
        where = f"{self.peer!r} (rank {self.rank}) through the relay"
        with self._send_lock:
            while True:
                with self._cond:
                    seen = self._fed
                    try:
                        self._obj.do_handshake()
                        done = True
                    except ssl.SSLWantReadError:
                        done = False
                    except ssl.SSLError as exc:
                        error: ProtocolError = AuthenticationError(
                            f"{me!r}: authentication failed for {where}: TLS handshake error: "
                            f"{exc.reason or exc}"
                        )
                        self._failure = error
                        done = True
                self._flush()
                if self._failure is not None:
                    raise self._failure
                if done:
                    break
                with self._cond:
                    while self._fed == seen and not self._ended and self._failure is None:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise PeerTimeoutError(
                                f"{me!r}: TLS handshake with {where} did not finish in time"
                            )
                        self._cond.wait(min(left, 0.5))
                    if self._failure is not None:
                        raise self._failure
                    if self._fed == seen and self._ended:
                        raise AuthenticationError(
                            f"{me!r}: authentication failed for {where}: the peer's side ended during "
                            "the TLS handshake (it probably refused our certificate)"
                        )
        check_peer_name(self._obj.getpeercert(), self.peer, me=me, where=where)

    def recv_into(self, view: memoryview) -> int:
        while True:
            with self._cond:
                seen = self._fed
                try:
                    n = int(self._obj.read(len(view), view))
                except ssl.SSLWantReadError:
                    n = -1
                except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                    return 0
                except ssl.SSLError as exc:
                    error = ProtocolError(_tamper_message(self.conn.me, self.peer, str(exc.reason or exc)))
                    self._failure = error
                    raise error from None
                pending = self._out.pending
                if n < 0:
                    if self._failure is not None:
                        raise self._failure
                    if self._ended and not self._eof_written:
                        self._eof_written = True
                        self._in.write_eof()
                        continue
                    if self._closed or self._eof_written:
                        return 0
                    while (
                        self._fed == seen and not self._ended and not self._closed and self._failure is None
                    ):
                        self._cond.wait()
            if pending:
                with self._send_lock:
                    self._flush()
            if n >= 0:
                return n

    def send_parts(self, parts: list[Any]) -> None:
        with self._send_lock:
            if self._write_closed:
                raise BrokenPipeError(f"the link to {self.peer!r} through the relay is closed")
            for part in parts:
                view = memoryview(part).cast("B")
                for start in range(0, len(view), _PLAINTEXT_CHUNK):
                    with self._cond:
                        self._obj.write(view[start : start + _PLAINTEXT_CHUNK])
                    self._flush()

    def close_write(self) -> None:
        """Send TLS close_notify, then an outer END: the peer reads end-of-stream."""
        with self._send_lock:
            if self._write_closed:
                return
            self._write_closed = True
            with self._cond, contextlib.suppress(ssl.SSLError, ValueError):
                self._obj.unwrap()
            with contextlib.suppress(OSError, ValueError, ProtocolError):
                self._flush()
                self.conn.send_frames(END, self.rank, b"")

    def close(self) -> None:
        self.close_write()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self.conn.stream_closed(self.peer)


__all__ = ["RelayedStream"]
