"""The accepting end's handshakes: concurrent, bounded per source address and in all, counted.

The introducer and every party's acceptor run each accepted connection's
handshake in its own thread under a :class:`HandshakeGate`: the first bytes
must come within :data:`FIRST_BYTES_SECONDS`, the handshake and set-up
message within :data:`HANDSHAKE_SECONDS`, and at most
:data:`MAX_HANDSHAKES_PER_ADDRESS` handshakes per source address and
:data:`MAX_HANDSHAKES` in all are in flight (:func:`handshake_limits` raises
both for a run whose parties may all dial from one address). A
:class:`Wakeup` lets the accept loop wait on its listening socket and on the
end of the set-up step together, without polling.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable

from protocols.errors import PeerTimeoutError, ProtocolError
from protocols.transport.links import ClosedError, UnansweredError

log = logging.getLogger("mpc_pca.transport")

#: Seconds an accepting end waits for a connection's first bytes.
FIRST_BYTES_SECONDS = 3.0
#: Seconds an accepting end gives one connection for its handshake and set-up message.
HANDSHAKE_SECONDS = 10.0
#: Handshakes in flight per source address at an accepting end.
MAX_HANDSHAKES_PER_ADDRESS = 8
#: Handshakes in flight in all at an accepting end.
MAX_HANDSHAKES = 64
_KEEP_REASONS = 8
_POLL_SECONDS = 0.1


class Wakeup(threading.Event):
    """An event an accept loop can wait on together with its listening socket (no polling).

    :meth:`set` also writes one byte to a socket pair, so
    :meth:`HandshakeGate.serve` sees it in the same ``select`` as a new
    connection: a set-up step that ends when every party has connected
    (the rendezvous sending its table, an acceptor's last link) continues at
    once, not at the next tick of a poll. :meth:`close` releases the pair.
    """

    def __init__(self) -> None:
        super().__init__()
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._writer.setblocking(False)

    def set(self) -> None:
        super().set()
        with contextlib.suppress(OSError):
            self._writer.send(b"\0")

    def fileno(self) -> int:
        """The socket that becomes readable once the event is set."""
        return self._reader.fileno()

    def close(self) -> None:
        for sock in (self._reader, self._writer):
            sock.close()


class HandshakeGate:
    """Runs an accepting end's handshakes concurrently, bounded, and counts the ones that failed.

    Each accepted connection gets its own thread, so an idle or slow
    connection delays no other. At most ``per_address`` handshakes from one
    source address and ``total`` in all are in flight; a connection beyond
    either limit is closed at once, before any byte is sent (an honest dialler
    sees :class:`~protocols.transport.links.UnansweredError` and retries).

    Parameters
    ----------
    where : str
        The accepting end, for messages ("the rendezvous", "'a1'").
    per_address : int
        Handshakes in flight per source address.
    total : int
        Handshakes in flight in all.
    """

    def __init__(
        self, where: str, per_address: int = MAX_HANDSHAKES_PER_ADDRESS, total: int = MAX_HANDSHAKES
    ) -> None:
        self.where = where
        self.per_address = per_address
        self.total = total
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}
        self._conns: set[socket.socket] = set()
        self._abandoned: set[socket.socket] = set()
        self._stopped = False
        #: Connections that sent nothing in time, closed early or stalled mid-handshake.
        self.incomplete = 0
        #: Connections closed at once because a limit was reached.
        self.over_limit = 0
        #: Connections refused for what they sent (first :data:`_KEEP_REASONS` reasons).
        self.refused: list[str] = []
        self.refused_count = 0

    def serve(
        self,
        listener: socket.socket,
        deadline: float,
        handle: Callable[[socket.socket, str], None],
        stop: threading.Event,
    ) -> None:
        """Accept until ``stop`` is set or ``deadline`` (monotonic) passes; ``handle(conn, who)`` in a thread each.

        ``handle`` raises :class:`~protocols.errors.ProtocolError` to refuse a
        connection (it is then closed and counted); it calls :meth:`keep` on
        a connection it admits, before anyone can see it admitted.
        """
        if listener.fileno() < 0:  # closed: the owner gave up
            return
        with selectors.DefaultSelector() as selector:
            selector.register(listener, selectors.EVENT_READ)
            wake = stop.fileno() if isinstance(stop, Wakeup) else -1
            wakeable = wake >= 0
            if wakeable:
                selector.register(wake, selectors.EVENT_READ)
            listener.setblocking(False)
            self._accept_until(listener, deadline, handle, stop, selector, wakeable)

    def _accept_until(
        self,
        listener: socket.socket,
        deadline: float,
        handle: Callable[[socket.socket, str], None],
        stop: threading.Event,
        selector: selectors.BaseSelector,
        wakeable: bool,
    ) -> None:
        """:meth:`serve`'s loop: wait for a connection or ``stop`` (polled only if it is no :class:`Wakeup`)."""
        while not stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            try:
                selector.select(remaining if wakeable else min(remaining, _POLL_SECONDS))
            except (OSError, ValueError):  # the listener was closed: the owner gave up
                return
            if stop.is_set():
                return
            try:
                conn, addr = listener.accept()
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                if listener.fileno() < 0:  # closed: the owner gave up
                    return
                continue
            conn.setblocking(True)
            who = f"a connection from {addr[0]}:{addr[1]}"
            if not self._enter(conn, addr[0]):
                log.warning("%s closed %s: over the limit of handshakes in flight", self.where, who)
                with contextlib.suppress(OSError):
                    conn.close()
                continue
            threading.Thread(
                target=self._run, args=(conn, addr[0], who, handle), name="handshake", daemon=True
            ).start()

    def _enter(self, conn: socket.socket, host: str) -> bool:
        with self._lock:
            busy = self._in_flight.get(host, 0)
            if self._stopped or busy >= self.per_address or len(self._conns) >= self.total:
                self.over_limit += 1
                return False
            self._in_flight[host] = busy + 1
            self._conns.add(conn)
            return True

    def _run(
        self, conn: socket.socket, host: str, who: str, handle: Callable[[socket.socket, str], None]
    ) -> None:
        try:
            handle(conn, who)
        except (PeerTimeoutError, UnansweredError, ClosedError) as exc:
            with self._lock:
                if conn not in self._abandoned:
                    self.incomplete += 1
            log.info("%s: %s", self.where, exc)
            with contextlib.suppress(OSError):
                conn.close()
        except ProtocolError as exc:
            with self._lock:
                if conn in self._abandoned:  # shut down by stop(), already counted
                    return
                self.refused_count += 1
                if len(self.refused) < _KEEP_REASONS:
                    self.refused.append(str(exc))
            log.warning("%s refused %s", self.where, exc)
            with contextlib.suppress(OSError):
                conn.close()
        except Exception as exc:  # never let a connection end the acceptor silently
            with self._lock:
                self.refused_count += 1
                if len(self.refused) < _KEEP_REASONS:
                    self.refused.append(f"{who}: {type(exc).__name__}: {exc}")
            log.exception("%s: unexpected error with %s", self.where, who)
            with contextlib.suppress(OSError):
                conn.close()
        finally:
            with contextlib.suppress(OSError):
                if conn in self._abandoned:
                    conn.close()
            with self._lock:
                self._conns.discard(conn)
                self._abandoned.discard(conn)
                left = self._in_flight[host] - 1
                if left:
                    self._in_flight[host] = left
                else:
                    del self._in_flight[host]

    def keep(self, conn: socket.socket) -> None:
        """``conn`` is admitted: :meth:`stop` must leave it open."""
        with self._lock:
            self._conns.discard(conn)

    def stop(self) -> None:
        """Admit no more connections and close those still in a handshake (counted as incomplete)."""
        with self._lock:
            self._stopped = True
            conns = list(self._conns)
            self.incomplete += len(conns)
            self._abandoned.update(conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def summary(self, first_bytes: float = FIRST_BYTES_SECONDS) -> str:
        """What failed, for a timeout message ("; 3 connections did not complete a handshake at ...")."""
        with self._lock:
            parts = []
            if self.incomplete:
                parts.append(
                    f"{plural(self.incomplete, 'connection')} did not complete a handshake at {self.where} "
                    f"(nothing sent within {first_bytes:g} s, stalled or closed mid-handshake, or still in one at the end)"
                )
            if self.over_limit:
                parts.append(
                    f"{plural(self.over_limit, 'connection')} {'was' if self.over_limit == 1 else 'were'} "
                    f"closed at once, over the limit of {self.per_address} handshakes in flight per address "
                    f"or {self.total} in all"
                )
            if self.refused_count:
                more = self.refused_count - len(self.refused)
                parts.append(
                    f"refused: {'; '.join(self.refused)}" + (f"; and {more} more" if more > 0 else "")
                )
        return "".join(f"; {part}" for part in parts)


def handshake_limits(expected: int) -> tuple[int, int]:
    """``(per_address, total)`` handshakes in flight at an end that ``expected`` honest parties dial at once.

    :data:`MAX_HANDSHAKES_PER_ADDRESS` and :data:`MAX_HANDSHAKES`, raised to
    ``expected`` when more parties than that may dial at the same time (all
    parties of a run dial in parallel, and several may share one source
    address: one host, or one NAT), so that no honest dialler is turned away
    and made to retry. An outsider on one address still holds at most that
    many handshakes, fewer than the total, so it cannot lock out the others.
    """
    per_address = max(MAX_HANDSHAKES_PER_ADDRESS, expected)
    return per_address, max(MAX_HANDSHAKES, per_address + MAX_HANDSHAKES_PER_ADDRESS)


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


__all__ = [
    "FIRST_BYTES_SECONDS",
    "HANDSHAKE_SECONDS",
    "MAX_HANDSHAKES",
    "MAX_HANDSHAKES_PER_ADDRESS",
    "HandshakeGate",
    "Wakeup",
    "handshake_limits",
    "plural",
]
