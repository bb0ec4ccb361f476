"""The rendezvous' server side: the :class:`Introducer` and its waiting room.

One process (rank 0, or the local launcher) runs an :class:`Introducer`
listening on the ``master`` address. Every party registers ``(name, rank,
host, port)`` over mutually authenticated TLS; the introducer checks that
the certificate names the party the protocol has at that rank and, once all
parties are in, returns the address table. While parties are missing it is
a waiting room (see :mod:`protocols.transport.rendezvous`): status lines and
messages every ``log_interval`` seconds, departures noticed, at most
:data:`MAX_REJOINS` re-registrations per name, and late registrations
refused with a message for :data:`LATE_REFUSAL_SECONDS`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any

from protocols.errors import PeerTimeoutError, ProtocolError
from protocols.transport.links import ClosedError, Stream, handshake
from protocols.transport.rendezvous.addresses import listen, parse_address
from protocols.transport.rendezvous.gate import (
    FIRST_BYTES_SECONDS,
    HANDSHAKE_SECONDS,
    HandshakeGate,
    Wakeup,
    handshake_limits,
)
from protocols.transport.rendezvous.messages import (
    INTRODUCER_NAME,
    WAITING_LOG_SECONDS,
    parse_registration,
    read_message,
    send_message,
    waiting_line,
)
from protocols.transport.tls import AuthenticationError

log = logging.getLogger("mpc_pca.transport")

#: Re-registrations per party name the introducer accepts before the table is sent.
MAX_REJOINS = 5
#: Seconds after the table is sent during which a registration is refused with a message.
LATE_REFUSAL_SECONDS = 60.0
_WATCH_SECONDS = 0.1


class Introducer:
    """Collects every party's advertised address and hands out the table (runs in a thread).

    Registrations are handled concurrently and bounded by a
    :class:`HandshakeGate`: a connection must send its first bytes within
    :data:`FIRST_BYTES_SECONDS` and finish its handshake and registration
    within :data:`HANDSHAKE_SECONDS`. While parties are missing, the
    introducer is a waiting room (see the module's documentation): it logs
    who has joined and who is missing every ``log_interval`` seconds, notices
    a registered party whose connection closed, and lets a party register
    again (at most :data:`MAX_REJOINS` times) until the table is sent.

    Parameters
    ----------
    address : str
        ``HOST:PORT`` to listen on (port 0: the kernel picks; see :attr:`port`).
    ranks : mapping of str to int
        Every party's rank.
    context : ssl.SSLContext or None
        Server context (``None``: ``insecure=True``, names are taken on trust).
    timeout : float
        The join window: seconds to wait for every party.
    log_interval : float
        Seconds between two waiting-room lines and status messages.
    max_rejoins : int
        Re-registrations accepted per party name before the table is sent.
    """

    def __init__(
        self,
        address: str,
        ranks: Mapping[str, int],
        context: ssl.SSLContext | None,
        timeout: float,
        *,
        log_interval: float = WAITING_LOG_SECONDS,
        max_rejoins: int = MAX_REJOINS,
    ):
        host, port = parse_address(address)
        self.ranks = dict(ranks)
        self._by_rank = {r: n for n, r in self.ranks.items()}
        self._ctx = context
        self._timeout = timeout
        self._log_interval = log_interval
        self.max_rejoins = max_rejoins
        self._sock = listen(host, port)
        self.port = self._sock.getsockname()[1]
        # Every party may register from one address (one host, a NAT) at once: admit that many.
        self.gate = HandshakeGate("the rendezvous", *handshake_limits(len(self.ranks)))
        #: Refuses registrations that come after the table was sent.
        self._late_gate = HandshakeGate("the rendezvous (after the table was sent)")
        self.error: str | None = None
        self._lock = threading.Lock()
        self._joined: dict[str, tuple[Stream, list[Any]]] = {}
        #: Re-registrations accepted so far, per party name.
        self.rejoins: dict[str, int] = {}
        self._finished = False
        self._table_sent = False
        self._complete = threading.Event()
        self._wake = Wakeup()  # every party joined, or close(): wakes the accept loop at once
        self._answered = threading.Event()
        self._closed = threading.Event()
        self._deadline = time.monotonic() + timeout
        self._thread = threading.Thread(target=self._serve, name="introducer", daemon=True)
        self._thread.start()
        threading.Thread(target=self._watch, name="waiting-room", daemon=True).start()

    @property
    def refused(self) -> list[str]:
        """Reasons of the refused registrations (the first few)."""
        return self.gate.refused

    def _ordered(self, names: Any) -> list[str]:
        return sorted(names, key=lambda n: self.ranks[n])

    def _serve(self) -> None:
        try:
            self.gate.serve(self._sock, self._deadline, self._admit, self._wake)
            with self._lock:
                self._finished = True
                joined = dict(self._joined)
            self.gate.stop()
            if not joined or len(joined) < len(self.ranks):
                missing = [f"{n!r} (rank {r})" for n, r in self.ranks.items() if n not in joined]
                waited = "was closed" if self._closed.is_set() else f"waited {self._timeout:g} s"
                absent = f"{', '.join(missing)} did not join" if missing else "no party registered"
                self.error = f"the rendezvous {waited}, but {absent}{self.gate.summary()}"
            else:
                log.info("waiting room: all %d parties joined; sending the address table", len(joined))
            reply = {"error": self.error} if self.error else {"table": {n: a for n, (_, a) in joined.items()}}
            for stream, _ in joined.values():
                with contextlib.suppress(OSError, ValueError, ProtocolError):
                    send_message(stream, reply)
            with self._lock:
                self._table_sent = self.error is None
            self._hand_over({name: stream for name, (stream, _) in joined.items()})
            self._answered.set()
            if self._table_sent:  # refuse late registrations with a message, for a while
                late = min(self._deadline, time.monotonic() + LATE_REFUSAL_SECONDS)
                self._late_gate.serve(self._sock, late, self._admit, self._closed)
        finally:
            with self._lock:
                self._finished = True
            self._answered.set()
            self.gate.stop()
            self._late_gate.stop()
            self._sock.close()
            self._wake.close()

    def _hand_over(self, streams: dict[str, Stream]) -> None:
        """What becomes of the registered parties' connections once the reply is sent: closed here.

        A subclass that keeps them (the relay forwards frames over them)
        overrides this; it is called once, after every party was sent the
        table (or the error), with ``{name: stream}``.
        """
        for stream in streams.values():
            stream.close()

    def _reached(self, host: str, port: int) -> str:
        """How the others reach a party that registered ``host:port``, for the log."""
        return f"advertising {host}:{port}"

    def _registration(self, who: str, msg: dict[str, Any]) -> tuple[str, int, str, int]:
        """``(name, rank, host, port)`` of a registration (:func:`parse_registration`); a subclass may learn more."""
        return parse_registration(who, msg)

    def _certified(self, who: str, name: str) -> None:
        """Hook: ``who``'s registration as ``name`` passed the certificate check; a subclass may refuse it."""

    def _status(self) -> tuple[list[str], list[str], float, list[Stream]] | None:
        """Who has joined, who is missing, seconds left, the joined streams; ``None`` once all are in."""
        with self._lock:
            if self._complete.is_set() or self._finished:
                return None
            joined = self._ordered(self._joined)
            streams = [stream for stream, _ in self._joined.values()]
        missing = self._ordered(n for n in self.ranks if n not in joined)
        return joined, missing, self._deadline - time.monotonic(), streams

    def _watch(self) -> None:
        """The waiting room: drop parties whose connection closed; log and send the status every interval."""
        next_line = time.monotonic() + self._log_interval
        while not self._wake.wait(_WATCH_SECONDS) and not self._answered.is_set():
            now = time.monotonic()
            if now >= self._deadline:
                return
            self._drop_departed()
            if now >= next_line:
                next_line = now + self._log_interval
                self._announce()

    def _announce(self, to: Stream | None = None) -> None:
        """Log the waiting room's status and send it to every registered party (or only to ``to``)."""
        status = self._status()
        if status is None:
            return
        joined, missing, left, streams = status
        if to is None:
            log.info("%s", waiting_line(joined, missing, left))
        else:
            streams = [to]
        message = {"waiting": {"joined": joined, "missing": missing, "seconds_left": max(0, math.ceil(left))}}
        for stream in streams:
            with contextlib.suppress(OSError, ValueError, ProtocolError):
                send_message(stream, message)

    def _drop_departed(self) -> None:
        """A registered party sends nothing until the table comes: a readable connection has closed."""
        with self._lock:
            streams = {name: stream for name, (stream, _) in self._joined.items()}
        if not streams:
            return
        with selectors.DefaultSelector() as selector:
            for name, stream in streams.items():
                with contextlib.suppress(OSError, ValueError):
                    selector.register(stream.sock, selectors.EVENT_READ, name)
            ready = [key.data for key, _ in selector.select(0)]
        for name in ready:
            with self._lock:
                if self._complete.is_set() or self._joined.get(name, (None,))[0] is not streams[name]:
                    continue
                del self._joined[name]
            streams[name].close()
            log.warning(
                "waiting room: %r (rank %d) left: its connection closed; it can register again",
                name, self.ranks[name],
            )  # fmt: skip

    def _admit(self, conn: socket.socket, who: str) -> None:
        timeout = max(0.1, min(self._deadline - time.monotonic(), HANDSHAKE_SECONDS))
        stream, cert_name = handshake(
            conn, self._ctx, server=True, expected=None, me=INTRODUCER_NAME, where=who, timeout=timeout,
            first_bytes=FIRST_BYTES_SECONDS,
        )  # fmt: skip
        try:
            conn.settimeout(FIRST_BYTES_SECONDS if self._ctx is None else timeout)
            name, rank, host, port = self._registration(who, read_message(stream, who))
            if self._by_rank.get(rank) != name:
                raise AuthenticationError(
                    f"{who} claimed to be {name!r} at rank {rank!r}, which is not in the layout"
                )
            if self._ctx is not None and cert_name != name:
                raise AuthenticationError(
                    f"authentication failed for {who} claiming to be {name!r} (rank {rank}): its certificate "
                    f"is issued to {cert_name!r}"
                )
            self._certified(who, name)
            conn.settimeout(HANDSHAKE_SECONDS)  # bounds a status or table send to a party that reads nothing
            replaced = None
            with self._lock:
                if self._table_sent:
                    raise ProtocolError(
                        f"{who} registered {name!r} after the rendezvous had sent the address table: the run "
                        "has started without this registration; to join, every party must start a new run"
                    )
                if self._finished:
                    raise PeerTimeoutError(f"{who} registered {name!r} after the rendezvous had finished")
                if name in self.rejoins or name in self._joined:
                    if self.rejoins.get(name, 0) >= self.max_rejoins:
                        raise ProtocolError(
                            f"{who} registered {name!r} again, but {name!r} has already registered again "
                            f"{self.max_rejoins} times, the most the rendezvous accepts before a run starts"
                        )
                    self.rejoins[name] = self.rejoins.get(name, 0) + 1
                    if name in self._joined:
                        replaced = self._joined.pop(name)
                else:
                    self.rejoins[name] = 0
                self.gate.keep(conn)
                self._joined[name] = (stream, [host, port])
                count = len(self._joined)
                if count == len(self.ranks):
                    self._complete.set()
                    self._wake.set()
            if replaced is not None:
                old, old_address = replaced
                log.warning(
                    "waiting room: %r (rank %d) registered again from %s (advertising %s:%d); its earlier "
                    "registration (advertising %s:%d) is replaced and that connection closed",
                    name, rank, who.removeprefix("a connection from "), host, port, *old_address,
                )  # fmt: skip
                with contextlib.suppress(OSError, ValueError, ProtocolError):
                    send_message(
                        old,
                        {"refused": f"{name!r} registered again from {who}; this registration is replaced"},
                    )
                old.close()
            else:
                log.info(
                    "waiting room: %r (rank %d) joined from %s, %s (%d of %d)",
                    name, rank, who.removeprefix("a connection from "), self._reached(host, port), count,
                    len(self.ranks),
                )  # fmt: skip
            self._announce(stream)
        except (PeerTimeoutError, ClosedError):
            stream.close()
            raise
        except ProtocolError as exc:  # authenticated, but not as what it claimed: say why
            with contextlib.suppress(OSError, ValueError, ProtocolError):
                send_message(stream, {"refused": str(exc)})
            stream.close()
            raise

    def join(self, timeout: float | None = None) -> None:
        """Wait until the table or the error has been sent to every registered party."""
        self._answered.wait(timeout)

    def close(self) -> None:
        """Stop now: give up waiting (the parties registered so far are told), or stop refusing late ones."""
        self._closed.set()
        self._wake.set()


__all__ = ["LATE_REFUSAL_SECONDS", "MAX_REJOINS", "Introducer"]
