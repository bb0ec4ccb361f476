"""Byte streams between two parties: plain TCP, or TLS 1.3 through :class:`ssl.SSLObject`.

A :class:`Stream` is written by the party's main thread and read by one
reader thread (see :mod:`protocols.transport.socket_receiving`). OpenSSL does
not allow one ``SSL`` object to be used by two threads at once, so the TLS
stream drives an :class:`ssl.SSLObject` over memory BIOs under a lock and does
the socket I/O itself: ciphertext is produced and put on the socket under a
send lock (TLS records leave in the order they were made), and the reader
feeds what arrives into the incoming BIO. Frames on top of a stream are a
1-byte kind and an 8-byte little-endian length, then the payload.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
import time
from typing import Any

from protocols.errors import PeerTimeoutError, ProtocolError
from protocols.transport.tls import AuthenticationError, certificate_names, check_peer_name

#: Frame header: kind (1 byte) and payload length (8 bytes, little endian).
HEADER = struct.Struct("<BQ")
_CHUNK = 1 << 20  # plaintext handed to OpenSSL per write, and socket read size
_RECV = 256 << 10


class ClosedError(ProtocolError):
    """The peer closed the connection (``truncated`` tells whether mid-frame)."""

    def __init__(self, message: str, truncated: bool) -> None:
        super().__init__(message)
        self.truncated = truncated


class UnansweredError(ProtocolError):
    """The accepting end closed a connection before sending any byte of the TLS handshake.

    It never looked at this party's hello (it was over its limit of handshakes
    in flight, or stopping), so nothing was refused: the dialler may retry.
    """


class Stream:
    """A plain TCP stream (``insecure=True``): nothing is encrypted or authenticated."""

    secure = False

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._send_lock = threading.Lock()

    def recv_into(self, view: memoryview) -> int:
        """Read up to ``len(view)`` bytes; 0 means the peer closed the connection."""
        return self.sock.recv_into(view)

    def send_parts(self, parts: list[Any]) -> None:
        """Send the concatenation of ``parts`` (bytes-like), atomically with respect to other sends."""
        with self._send_lock:
            for part in _coalesce(parts):
                self.sock.sendall(part)

    def read_exact(self, n: int, into: memoryview | None = None) -> memoryview:
        """Exactly ``n`` bytes; :class:`ClosedError` if the stream ends first."""
        buf = memoryview(bytearray(n)) if into is None else into
        got = 0
        while got < n:
            k = self.recv_into(buf[got:n])
            if k == 0:
                raise ClosedError(f"connection closed after {got} of {n} bytes", truncated=got > 0)
            got += k
        return buf

    def close_write(self) -> None:
        """Half-close: everything sent so far is delivered, then the peer reads end-of-stream."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


def _coalesce(parts: list[Any]) -> list[Any]:
    """Join runs of small pieces so a frame is not sent as dozens of tiny writes."""
    out: list[Any] = []
    small: list[bytes] = []
    for part in parts:
        if len(part) <= 4096:
            small.append(bytes(part))
            continue
        if small:
            out.append(b"".join(small))
            small = []
        out.append(part)
    if small:
        out.append(b"".join(small))
    return out


class TlsStream(Stream):
    """A TLS 1.3 stream over memory BIOs, safe for one writer and one reader thread."""

    secure = True

    def __init__(
        self, sock: socket.socket, obj: ssl.SSLObject, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO
    ):
        super().__init__(sock)
        self._obj, self._in, self._out = obj, incoming, outgoing
        self._ssl_lock = threading.Lock()
        self._eof = False

    def _flush_locked(self) -> None:
        """Put pending ciphertext on the socket; caller holds the send lock."""
        with self._ssl_lock:
            data = self._out.read()
        if data:
            self.sock.sendall(data)

    def recv_into(self, view: memoryview) -> int:
        while True:
            with self._ssl_lock:
                try:
                    n = int(self._obj.read(len(view), view))  # with a buffer, read returns a count
                    pending = self._out.pending
                except ssl.SSLWantReadError:
                    n, pending = -1, self._out.pending
                except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                    return 0  # close_notify, or the TCP connection ended without one
                except ssl.SSLError as exc:
                    reason = str(exc.reason or exc)
                    if "ALERT" in reason or "CERTIFICATE" in reason:
                        raise AuthenticationError(
                            f"authentication failed: the peer sent TLS alert {reason}"
                        ) from None
                    raise ProtocolError(f"TLS record error: {reason}") from None
            if pending:
                with self._send_lock:
                    self._flush_locked()
            if n >= 0:
                return n
            if self._eof:
                return 0
            raw = self.sock.recv(_RECV)
            if not raw:
                self._eof = True
                with self._ssl_lock:
                    self._in.write_eof()
                continue
            with self._ssl_lock:
                self._in.write(raw)

    def send_parts(self, parts: list[Any]) -> None:
        with self._send_lock:
            for part in _coalesce(parts):
                view = memoryview(part).cast("B")
                for start in range(0, len(view), _CHUNK):
                    with self._ssl_lock:
                        self._obj.write(view[start : start + _CHUNK])
                    self._flush_locked()

    def close_write(self) -> None:
        """Send TLS close_notify, then half-close the TCP connection."""
        with contextlib.suppress(OSError, ValueError), self._send_lock:
            with self._ssl_lock, contextlib.suppress(ssl.SSLError):
                self._obj.unwrap()  # queues close_notify; the peer's answer is not awaited
            self._flush_locked()
        super().close_write()

    def close(self) -> None:
        self.close_write()
        super().close()


def handshake(
    sock: socket.socket,
    ctx: ssl.SSLContext | None,
    *,
    server: bool,
    expected: str | None,
    me: str,
    where: str,
    timeout: float,
    first_bytes: float | None = None,
) -> tuple[Stream, str | None]:
    """Run the TLS handshake on a connected socket; return the stream and the peer's names.

    With ``ctx=None`` (``insecure=True``) the socket is returned as a plain
    :class:`Stream`. With ``expected`` the peer's certificate must name that
    party; otherwise (an accepting end that learns who dialled) the first
    certificate name is returned for the caller to check. On failure the
    socket is closed, so the peer learns of the refusal at once. With
    ``first_bytes`` the peer must send its first bytes within that many
    seconds (an accepting end's bound on idle connections).

    Raises
    ------
    AuthenticationError
        The handshake failed (no certificate, another CA, ...) or the name does not match.
    UnansweredError
        The peer closed the connection before sending any byte (a dialler may retry).
    PeerTimeoutError
        The peer sent nothing within ``first_bytes`` seconds, or the handshake did not
        finish within ``timeout`` seconds.
    """
    try:
        return _handshake(
            sock, ctx, server=server, expected=expected, me=me, where=where, timeout=timeout,
            first_bytes=first_bytes,
        )  # fmt: skip
    except ProtocolError:
        with contextlib.suppress(OSError):
            sock.close()
        raise


def _handshake_bytes(sock: socket.socket, *, received: bool, server: bool, me: str, where: str) -> bytes:
    """The peer's next handshake bytes; its end of the connection, named by how far the handshake got.

    Raises
    ------
    UnansweredError
        The peer closed (or reset) the connection before sending any byte.
    AuthenticationError
        The peer closed the connection during the handshake.
    """
    try:
        raw = sock.recv(_RECV)
    except ConnectionResetError:
        if received:
            raise
        raw = b""
    if raw:
        return raw
    if not received and server:
        raise UnansweredError(f"{me!r}: {where} closed the connection without sending anything")
    if not received:
        raise UnansweredError(
            f"{me!r}: {where} closed the connection before answering the TLS handshake "
            "(busy or over its limit of handshakes in flight; nothing was refused)"
        )
    raise AuthenticationError(
        f"{me!r}: authentication failed for {where}: the peer closed the connection during "
        "the TLS handshake (it probably refused our certificate)"
    )


def _handshake(
    sock: socket.socket,
    ctx: ssl.SSLContext | None,
    *,
    server: bool,
    expected: str | None,
    me: str,
    where: str,
    timeout: float,
    first_bytes: float | None = None,
) -> tuple[Stream, str | None]:
    """See :func:`handshake`."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if ctx is None:
        # A dialled socket would keep create_connection's timeout: a link idle that long would end.
        sock.settimeout(None)
        return Stream(sock), None
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_side=server)
    start = time.monotonic()
    deadline = start + timeout
    silent_until = start + first_bytes if first_bytes is not None else deadline
    received = False
    try:
        while True:
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                pass
            data = outgoing.read()
            if data:
                sock.sendall(data)
            remaining = (deadline if received else min(deadline, silent_until)) - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            sock.settimeout(remaining)
            raw = _handshake_bytes(sock, received=received, server=server, me=me, where=where)
            received = True
            incoming.write(raw)
        data = outgoing.read()
        if data:
            sock.sendall(data)
    except ssl.SSLError as exc:
        # Tell the peer why (an alert is pending in the BIO), then give up.
        with contextlib.suppress(OSError):
            sock.sendall(outgoing.read())
        raise AuthenticationError(
            f"{me!r}: authentication failed for {where}: TLS handshake error: {exc.reason or exc}"
        ) from None
    except TimeoutError:
        if not received and first_bytes is not None and time.monotonic() < deadline:
            raise PeerTimeoutError(
                f"{me!r}: {where} sent nothing within {first_bytes:g} s of connecting (no TLS handshake)"
            ) from None
        raise PeerTimeoutError(
            f"{me!r}: TLS handshake with {where} did not finish within {timeout:g} s"
        ) from None
    except OSError as exc:
        raise AuthenticationError(f"{me!r}: authentication failed for {where}: {exc}") from None
    sock.settimeout(None)
    cert = obj.getpeercert()
    if expected is not None:
        check_peer_name(cert, expected, me=me, where=where)
    names = certificate_names(cert or {})
    return TlsStream(sock, obj, incoming, outgoing), (names[0] if names else None)


__all__ = ["HEADER", "ClosedError", "Stream", "TlsStream", "UnansweredError", "handshake"]
