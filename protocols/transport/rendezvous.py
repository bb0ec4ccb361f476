"""Rendezvous and link set-up for the socket transport (no torch needed).

Introduction
    One process (rank 0, or the local launcher) runs an :class:`Introducer`
    listening on the ``--master`` address (that interface only, never all of
    them). Every party opens a listening socket on port 0 of its own
    interface, connects to the introducer over mutually authenticated TLS and
    registers ``(name, rank, host, port)``; the introducer checks that the
    certificate names the party the protocol has at that rank and, once all
    parties are in, returns the address table. The introducer is only trusted
    to introduce: a wrong address just makes the link's own authentication
    fail, and nothing else it says is believed.

Addresses
    A party listens on a fixed ``HOST:PORT`` when given one (``--listen``;
    port 0 still lets the kernel pick) and registers the address the others
    must dial: its ``--advertise`` address when given (a NAT port forward, a
    firewall's public address), else the one it listens on. The advertised
    address is peer-supplied like everything in a registration: a host of at
    most :data:`MAX_NAME_CHARS` characters and a port in 1 .. 65535, else a
    :class:`~protocols.errors.ProtocolError` naming the sender.

Waiting room
    The introducer waits for everyone for its join window (seconds, hours if
    asked). Every ``log_interval`` seconds it logs at INFO who has joined and
    who is missing ("waiting room: joined [provider0, server]; missing
    [provider1, consumer] (3540 s left)") and sends the same status to every
    registered party, which logs it too. A registered party whose connection
    closes leaves the room (logged); a party that registers again under the
    same name before the table is sent replaces its earlier registration (the
    earlier connection is told so and closed). With TLS only the holder of
    the certificate that names a party can do so; at most
    :data:`MAX_REJOINS` re-registrations per name are accepted, so an insider
    cannot keep the room busy with its own. After the table is sent, a
    registration is refused for :data:`LATE_REFUSAL_SECONDS` more (or until
    the join window ends) with a message saying that the run has started.

Links
    Each pair of parties gets one connection: the lower rank dials the higher
    one, both ends check that the peer's certificate names the party expected
    at that rank (:func:`protocols.transport.tls.check_peer_name`), and the
    dialler then sends a ``HELLO`` frame with its name (which is all an
    ``--insecure`` link has to go by). Failed handshakes from anyone else are
    refused and reported if the run does not come together in time.

Schemas
    Every set-up message has a typed schema: the link ``HELLO``
    (:func:`parse_hello`), the registration (:func:`parse_registration`) and
    the introducer's reply with its address table (:func:`parse_reply`):
    exact keys, ``str`` names and hosts of at most :data:`MAX_NAME_CHARS`
    characters, integer ranks and ports in range. Any other shape is a
    :class:`~protocols.errors.ProtocolError` naming the sender, never a crash
    of the introducer or of a party's acceptor thread. A set-up frame that
    announces more than :data:`MAX_SETUP_BYTES` is refused before anything is
    allocated for it.

Handshakes
    The introducer and every party's acceptor run each accepted connection's
    handshake in its own thread under a :class:`HandshakeGate`: the first
    bytes must come within :data:`FIRST_BYTES_SECONDS`, the handshake and
    set-up message within :data:`HANDSHAKE_SECONDS`, and at most
    :data:`MAX_HANDSHAKES_PER_ADDRESS` handshakes per source address and
    :data:`MAX_HANDSHAKES` in all are in flight; a connection beyond a limit
    is closed at once, before any byte is sent, and an honest dialler
    (:func:`dial`) retries until its deadline. So idle or slow connections
    from an outsider delay no honest party on another address; from the
    honest parties' own address they delay the run by at most about
    :data:`FIRST_BYTES_SECONDS` per stage. What failed is counted, and a
    run that does not come together says so ("3 connections did not
    complete a handshake at the rendezvous; ... did not join"). An outsider
    that keeps opening connections from the parties' own address faster than
    they time out can still starve them: that needs a firewall, not this.
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
from collections.abc import Callable, Mapping
from typing import Any

from protocols.errors import (
    InputValidationError,
    PeerFailureError,
    PeerTimeoutError,
    ProtocolError,
    WireFormatError,
)
from protocols.transport.links import HEADER, ClosedError, Stream, UnansweredError, handshake
from protocols.transport.tls import AuthenticationError
from protocols.transport.wire import decode_message, encode_message

log = logging.getLogger("mpc_pca.transport")

#: Name the launcher's introducer has in its certificate.
INTRODUCER_NAME = "rendezvous"
#: Largest set-up frame (HELLO, registration, reply) read before allocating (bytes).
MAX_SETUP_BYTES = 64 << 10
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
_KIND_HELLO = 6
#: Longest party name or host a set-up message may carry (characters).
MAX_NAME_CHARS = 256
#: Longest refusal or error text in the introducer's reply (characters).
MAX_TEXT_CHARS = 16 << 10
#: Re-registrations per party name the introducer accepts before the table is sent.
MAX_REJOINS = 5
#: Default seconds between two waiting-room lines (and status messages to the parties).
WAITING_LOG_SECONDS = 30.0
#: Seconds after the table is sent during which a registration is refused with a message.
LATE_REFUSAL_SECONDS = 60.0
#: Most names a waiting-room status message may list.
MAX_WAITING_NAMES = 4096
_WATCH_SECONDS = 0.1


def parse_address(address: str) -> tuple[str, int]:
    """Split ``ADDR:PORT`` (``[v6addr]:PORT`` for IPv6) into host and port (port 0 allowed)."""
    host, sep, port_text = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host:
        raise InputValidationError(f"address {address!r} must look like ADDR:PORT")
    try:
        port = int(port_text)
    except ValueError:
        raise InputValidationError(f"port {port_text!r} in {address!r} is not an integer") from None
    if not 0 <= port < 65536:
        raise InputValidationError(f"port {port} in {address!r} is out of range 0 .. 65535")
    return host, port


def parse_endpoint(text: str, flag: str, *, port_required: bool) -> tuple[str, int]:
    """``HOST``, ``HOST:PORT`` or ``[v6addr]:PORT`` of an option such as ``--listen`` or ``--advertise``.

    Parameters
    ----------
    text : str
        The option's value. A bare IPv6 address (more than one ``:``, no
        brackets) is a host without a port.
    flag : str
        The option, for messages.
    port_required : bool
        Require a port in 1 .. 65535 (an advertised address); otherwise a
        missing port is 0 (the kernel picks) and 0 is allowed.

    Raises
    ------
    InputValidationError
        Naming the option and its value.
    """
    value = text.strip()
    bracketed = value.startswith("[")
    if not bracketed and value.count(":") != 1:
        host, port = value, None  # a host name, an IPv4 address or a bare IPv6 address
    elif bracketed and value.endswith("]"):
        host, port = value[1:-1], None
    else:
        try:
            host, port = parse_address(value)
        except InputValidationError as exc:
            raise InputValidationError(f"{flag} {text!r}: {exc}") from None
    if not host or any(c.isspace() for c in host) or len(host) > MAX_NAME_CHARS:
        raise InputValidationError(
            f"{flag} {text!r} is not HOST:PORT (the host is empty, too long or has spaces)"
        )
    if port is None:
        if port_required:
            raise InputValidationError(f"{flag} {text!r} has no port; give HOST:PORT (IPv6: [ADDR]:PORT)")
        port = 0
    if port_required and port == 0:
        raise InputValidationError(
            f"{flag} {text!r}: port 0 cannot be dialled; give the port the others reach"
        )
    return host, port


def local_address_towards(host: str) -> str:
    """The address of this host's interface that routes to ``host`` (no packet is sent)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((host, 9))
            return probe.getsockname()[0]
        except OSError:
            return host


def listen(host: str, port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host:port`` (that interface only)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise InputValidationError(f"cannot listen on {host}:{port}: {reason}") from None
    sock.listen(64)
    return sock


def send_message(stream: Stream, obj: Any, kind: int = _KIND_HELLO) -> None:
    payload = encode_message(obj)
    stream.send_parts([HEADER.pack(kind, len(payload)), payload])


def read_message(stream: Stream, who: str, kind: int = _KIND_HELLO) -> dict[str, Any]:
    """One small frame of ``kind`` holding a dict; anything else is a ProtocolError naming ``who``."""
    try:
        got, size = HEADER.unpack(stream.read_exact(HEADER.size))
        if got != kind:
            raise ProtocolError(f"{who} sent an unexpected frame (kind {got}, {size} bytes) during set-up")
        if size > MAX_SETUP_BYTES:
            raise ProtocolError(
                f"{who} announced a set-up message of {size} bytes, over the limit of {MAX_SETUP_BYTES} bytes"
            )
        value = decode_message(stream.read_exact(size))
    except ClosedError as exc:
        raise ProtocolError(f"{who} closed the connection during set-up ({exc})") from None
    except WireFormatError as exc:
        raise ProtocolError(f"{who} sent a malformed set-up message: {exc}") from None
    except TimeoutError:
        raise PeerTimeoutError(f"{who} did not send its set-up message in time") from None
    except OSError as exc:
        raise ProtocolError(f"{who} did not complete the set-up: {exc or type(exc).__name__}") from None
    if not isinstance(value, dict):
        raise ProtocolError(f"{who} sent a malformed set-up message")
    return value


def _exact_keys(who: str, what: str, msg: dict[str, Any], keys: set[str]) -> None:
    if set(msg) != keys:
        raise ProtocolError(
            f"{who} sent a malformed {what}: its keys are {sorted(msg)[:8]!r}, expected {sorted(keys)}"
        )


def _short_str(who: str, what: str, key: str, value: Any, limit: int = MAX_NAME_CHARS) -> str:
    if not isinstance(value, str):
        raise ProtocolError(f"{who} sent a malformed {what}: {key} is a {type(value).__name__}, not a str")
    if len(value) > limit:
        raise ProtocolError(
            f"{who} sent a malformed {what}: {key} has {len(value)} characters, at most {limit} are allowed"
        )
    return value


def _port(who: str, what: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 65536:
        raise ProtocolError(
            f"{who} sent a malformed {what}: port {value!r:.40} is not an integer in 1 .. 65535"
        )
    return value


def parse_hello(who: str, msg: dict[str, Any]) -> str:
    """The dialler's name from a link's ``HELLO`` (``{"name": str}``); any other shape is a ProtocolError."""
    _exact_keys(who, "hello", msg, {"name"})
    return _short_str(who, "hello", "name", msg["name"])


def parse_registration(who: str, msg: dict[str, Any]) -> tuple[str, int, str, int]:
    """``(name, rank, host, port)`` from a registration at the introducer; any other shape is a ProtocolError."""
    what = "registration"
    _exact_keys(who, what, msg, {"name", "rank", "host", "port"})
    name = _short_str(who, what, "name", msg["name"])
    rank = msg["rank"]
    if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
        raise ProtocolError(f"{who} sent a malformed {what}: rank {rank!r:.40} is not a non-negative integer")
    return name, rank, _short_str(who, what, "host", msg["host"]), _port(who, what, msg["port"])


#: What a waiting-room status carries: ``(joined, missing, seconds_left)``.
Waiting = tuple[list[str], list[str], int]


def parse_reply(where: str, msg: dict[str, Any]) -> tuple[str, Any]:
    """The introducer's reply: ``("refused" | "error", str)``, ``("waiting", Waiting)`` or ``("table", {name: (host, port)})``.

    ``waiting`` is a waiting-room status, ``{"joined": [names], "missing":
    [names], "seconds_left": int}``; the table or a refusal follows it.

    Raises
    ------
    ProtocolError
        Naming ``where``, for any other shape (other keys, a name or host
        that is not a str, an address that is not ``[host, port]``, a port
        out of range, oversize strings or lists).
    """
    what = "reply"
    if len(msg) != 1 or next(iter(msg)) not in ("refused", "error", "table", "waiting"):
        raise ProtocolError(
            f"{where} sent a malformed {what}: its keys are {sorted(msg)[:8]!r}, expected one of "
            "'refused', 'error', 'waiting' or 'table'"
        )
    key, value = next(iter(msg.items()))
    if key == "waiting":
        return key, _parse_waiting(where, value)
    if key != "table":
        return key, _short_str(where, what, key, value, MAX_TEXT_CHARS)
    what = "address table"
    if not isinstance(value, dict):
        raise ProtocolError(f"{where} sent a malformed {what}: a {type(value).__name__}, not a mapping")
    table: dict[str, tuple[str, int]] = {}
    for name, address in value.items():
        _short_str(where, what, "a name", name)
        if not isinstance(address, list) or len(address) != 2:
            raise ProtocolError(
                f"{where} sent a malformed {what}: the address of {name!r} is not [host, port]"
            )
        table[name] = (
            _short_str(where, what, f"the host of {name!r}", address[0]),
            _port(where, what, address[1]),
        )
    return key, table


def _parse_waiting(where: str, value: Any) -> Waiting:
    what = "waiting-room status"
    if not isinstance(value, dict):
        raise ProtocolError(f"{where} sent a malformed {what}: a {type(value).__name__}, not a mapping")
    _exact_keys(where, what, value, {"joined", "missing", "seconds_left"})
    lists = []
    for key in ("joined", "missing"):
        names = value[key]
        if not isinstance(names, list) or len(names) > MAX_WAITING_NAMES:
            raise ProtocolError(
                f"{where} sent a malformed {what}: {key} is not a list of at most {MAX_WAITING_NAMES} names"
            )
        lists.append([_short_str(where, what, f"a name in {key}", name) for name in names])
    left = value["seconds_left"]
    if not isinstance(left, int) or isinstance(left, bool) or not 0 <= left < 1 << 40:
        raise ProtocolError(
            f"{where} sent a malformed {what}: seconds_left {left!r:.40} is not a non-negative integer"
        )
    return lists[0], lists[1], left


def waiting_line(joined: list[str], missing: list[str], seconds_left: float) -> str:
    """``waiting room: joined [a, b]; missing [c] (120 s left)``."""
    return (
        f"waiting room: joined [{', '.join(joined)}]; missing [{', '.join(missing)}] "
        f"({max(0, math.ceil(seconds_left))} s left)"
    )


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
                    f"{_plural(self.incomplete, 'connection')} did not complete a handshake at {self.where} "
                    f"(nothing sent within {first_bytes:g} s, stalled or closed mid-handshake, or still in one at the end)"
                )
            if self.over_limit:
                parts.append(
                    f"{_plural(self.over_limit, 'connection')} {'was' if self.over_limit == 1 else 'were'} "
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


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


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
        Server context (``None``: ``--insecure``, names are taken on trust).
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


def dial(
    address: tuple[str, int],
    context: ssl.SSLContext | None,
    *,
    expected: str,
    me: str,
    where: str,
    deadline: float,
    retry_unreachable: bool,
    what: str,
    unreachable: str | None = None,
) -> Stream:
    """Connect to ``address`` and run the handshake, retrying while the acceptor is busy.

    An acceptor over its limit of handshakes in flight closes a connection
    before answering (:class:`~protocols.transport.links.UnansweredError`);
    that refuses nothing, so the dialler tries again until ``deadline``
    (monotonic). With ``retry_unreachable``, so does a refused TCP connection
    (the rendezvous may not be listening yet). ``unreachable`` (e.g. which
    party hosts the rendezvous and which option names it) is logged as a
    warning after the first attempt that cannot reach ``address`` and ends
    the error if none can until ``deadline``.

    Raises
    ------
    PeerTimeoutError
        ``deadline`` passed, naming what went wrong on the last attempt and how
        many attempts the acceptor left unanswered.
    AuthenticationError
        The handshake failed (see :func:`~protocols.transport.links.handshake`).
    """
    unanswered = 0
    pause = 0.05
    next_line = time.monotonic()
    warned = False
    while True:
        remaining = deadline - time.monotonic()
        try:
            sock = socket.create_connection(address, timeout=max(0.1, remaining))
        except OSError as exc:
            hint = "" if unreachable is None else f"; {unreachable}"
            if not retry_unreachable or time.monotonic() >= deadline:
                raise PeerTimeoutError(f"{what} could not reach {where} in time: {exc}{hint}") from None
            if unreachable is not None and not warned:
                warned = True
                log.warning("%s cannot reach %s (%s)%s; retrying for %d s", what, where, exc, hint, remaining)
            elif time.monotonic() >= next_line:
                next_line = time.monotonic() + WAITING_LOG_SECONDS
                log.info("%s cannot reach %s yet (%s); retrying for %d s", what, where, exc, remaining)
            time.sleep(0.1)
            continue
        try:
            stream, _ = handshake(
                sock, context, server=False, expected=expected, me=me, where=where,
                timeout=max(0.1, deadline - time.monotonic()),
            )  # fmt: skip
            return stream
        except UnansweredError as exc:
            unanswered += 1
            if time.monotonic() + pause >= deadline:
                raise PeerTimeoutError(
                    f"{exc}; it left {_plural(unanswered, 'attempt')} unanswered before the deadline"
                ) from None
            time.sleep(pause)
            pause = min(0.5, pause * 2)


def register(
    master: str,
    name: str,
    rank: int,
    my_address: tuple[str, int],
    context: ssl.SSLContext | None,
    introducer_name: str,
    timeout: float,
    hosted_by: str | None = None,
) -> dict[str, tuple[str, int]]:
    """Register ``my_address`` (the advertised one) at the introducer and wait for the address table.

    While others are missing, the introducer sends waiting-room statuses;
    each is logged at INFO ("'provider1': waiting room: joined [...]; missing
    [...] (N s left)"). ``timeout`` is this party's join window.
    ``hosted_by`` names the party that hosts the rendezvous (rank 0), if
    one does: an unreachable rendezvous, or one that hangs up, is then
    reported as that party's host being down (a warning at the first refused
    attempt, the error when the window ends).
    """
    host, port = parse_address(master)
    deadline = time.monotonic() + timeout
    where = f"the rendezvous at {master}"
    if hosted_by is not None:
        where += f" (hosted by {hosted_by!r}, rank 0)"
        down = (
            f"the rendezvous host {hosted_by!r} (rank 0, --master {master}) is unreachable: its process is down "
            "or has not started, or --master names the wrong address"
        )
    else:
        down = (
            f"the rendezvous at {master} (--master) is unreachable: it is not running or the address is wrong"
        )
    stream = dial(
        (host, port), context, expected=introducer_name, me=name, where=where, deadline=deadline,
        retry_unreachable=True, what=f"{name!r} (rank {rank})", unreachable=down,
    )  # fmt: skip
    send_message(stream, {"name": name, "rank": rank, "host": my_address[0], "port": my_address[1]})
    log.info("%r: registered at %s, advertising %s:%d", name, where, *my_address)
    try:
        return await_table(stream, name, where, deadline, timeout)
    except ProtocolError as exc:  # closed or reset (read_message): the host's process ended
        gone = any(words in str(exc) for words in ("closed the connection", "did not complete the set-up"))
        if hosted_by is None or isinstance(exc, AuthenticationError) or not gone:
            raise
        raise PeerFailureError(
            f"{name!r}: {exc}: the rendezvous host {hosted_by!r} (rank 0) went down"
        ) from None
    finally:
        stream.close()


def await_table(
    stream: Stream, name: str, where: str, deadline: float, timeout: float
) -> dict[str, tuple[str, int]]:
    """Read the introducer's replies on ``stream`` until the address table; log the waiting-room statuses.

    Raises
    ------
    AuthenticationError
        The introducer refused this party (the reason is quoted).
    PeerTimeoutError
        No table by ``deadline`` (monotonic) plus 5 s, or the introducer gave up.
    """
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= -5.0:
            raise PeerTimeoutError(f"{name!r} got no address table from {where} within {timeout:g} s")
        stream.sock.settimeout(max(0.1, remaining + 5.0))
        try:
            reply = read_message(stream, where)
        except PeerTimeoutError:
            raise PeerTimeoutError(
                f"{name!r} got no address table from {where} within {timeout:g} s"
            ) from None
        key, value = parse_reply(where, reply)
        if key != "waiting":
            break
        log.info("%r: %s", name, waiting_line(*value))
    if key == "refused":
        raise AuthenticationError(f"{name!r}: the rendezvous refused this party: {value}")
    if key == "error":
        raise PeerTimeoutError(f"{name!r} could not start: {value}")
    return dict(value)


__all__ = [
    "FIRST_BYTES_SECONDS",
    "HANDSHAKE_SECONDS",
    "INTRODUCER_NAME",
    "LATE_REFUSAL_SECONDS",
    "MAX_HANDSHAKES",
    "MAX_HANDSHAKES_PER_ADDRESS",
    "MAX_NAME_CHARS",
    "MAX_REJOINS",
    "MAX_SETUP_BYTES",
    "MAX_TEXT_CHARS",
    "MAX_WAITING_NAMES",
    "WAITING_LOG_SECONDS",
    "HandshakeGate",
    "Introducer",
    "Wakeup",
    "await_table",
    "dial",
    "handshake_limits",
    "listen",
    "local_address_towards",
    "parse_address",
    "parse_endpoint",
    "parse_hello",
    "parse_registration",
    "parse_reply",
    "read_message",
    "register",
    "send_message",
    "waiting_line",
]
