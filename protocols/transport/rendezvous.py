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
    of the introducer or of a party's acceptor thread. Not yet: handshakes
    are still done one at a time, so idle connections can delay a run.
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

from protocols.errors import InputValidationError, PeerTimeoutError, ProtocolError, WireFormatError
from protocols.transport.links import HEADER, ClosedError, Stream, handshake
from protocols.transport.tls import AuthenticationError
from protocols.transport.wire import decode_message, encode_message

log = logging.getLogger("mpc_pca.transport")

#: Name the launcher's introducer has in its certificate.
INTRODUCER_NAME = "rendezvous"
_HELLO_CAP = 64 << 10
_KIND_HELLO = 6
#: Longest party name or host a set-up message may carry (characters).
MAX_NAME_CHARS = 256
#: Longest refusal or error text in the introducer's reply (characters).
MAX_TEXT_CHARS = 16 << 10


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
        raise InputValidationError(f"cannot listen on {host}:{port}: {exc}") from None
    sock.listen(64)
    return sock


def send_message(stream: Stream, obj: Any, kind: int = _KIND_HELLO) -> None:
    payload = encode_message(obj)
    stream.send_parts([HEADER.pack(kind, len(payload)), payload])


def read_message(stream: Stream, who: str, kind: int = _KIND_HELLO) -> dict[str, Any]:
    """One small frame of ``kind`` holding a dict; anything else is a ProtocolError naming ``who``."""
    try:
        got, size = HEADER.unpack(stream.read_exact(HEADER.size))
        if got != kind or size > _HELLO_CAP:
            raise ProtocolError(f"{who} sent an unexpected frame (kind {got}, {size} bytes) during set-up")
        value = decode_message(stream.read_exact(size))
    except ClosedError as exc:
        raise ProtocolError(f"{who} closed the connection during set-up ({exc})") from None
    except WireFormatError as exc:
        raise ProtocolError(f"{who} sent a malformed set-up message: {exc}") from None
    except OSError as exc:  # includes the socket timeout
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


def parse_reply(where: str, msg: dict[str, Any]) -> tuple[str, Any]:
    """The introducer's reply: ``("refused" | "error", str)`` or ``("table", {name: (host, port)})``.

    Raises
    ------
    ProtocolError
        Naming ``where``, for any other shape (other keys, a name or host
        that is not a str, an address that is not ``[host, port]``, a port
        out of range, oversize strings).
    """
    what = "reply"
    if len(msg) != 1 or next(iter(msg)) not in ("refused", "error", "table"):
        raise ProtocolError(
            f"{where} sent a malformed {what}: its keys are {sorted(msg)[:8]!r}, expected one of "
            "'refused', 'error' or 'table'"
        )
    key, value = next(iter(msg.items()))
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


class Introducer:
    """Collects every party's listening address and hands out the table (runs in a thread).

    Parameters
    ----------
    address : str
        ``HOST:PORT`` to listen on (port 0: the kernel picks; see :attr:`port`).
    ranks : mapping of str to int
        Every party's rank.
    context : ssl.SSLContext or None
        Server context (``None``: ``--insecure``, names are taken on trust).
    timeout : float
        Seconds to wait for every party.
    """

    def __init__(
        self, address: str, ranks: Mapping[str, int], context: ssl.SSLContext | None, timeout: float
    ):
        host, port = parse_address(address)
        self.ranks = dict(ranks)
        self._by_rank = {r: n for n, r in self.ranks.items()}
        self._ctx = context
        self._timeout = timeout
        self._sock = listen(host, port)
        self.port = self._sock.getsockname()[1]
        self.refused: list[str] = []
        self.error: str | None = None
        self._thread = threading.Thread(target=self._serve, name="introducer", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        deadline = time.monotonic() + self._timeout
        joined: dict[str, tuple[Stream, list[Any]]] = {}
        while len(joined) < len(self.ranks):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                missing = [f"{n!r} (rank {r})" for n, r in self.ranks.items() if n not in joined]
                refused = f"; refused: {'; '.join(self.refused)}" if self.refused else ""
                self.error = f"the rendezvous waited {self._timeout:g} s, but {', '.join(missing)} did not join{refused}"
                break
            self._sock.settimeout(remaining)
            try:
                conn, addr = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            with contextlib.suppress(ProtocolError, OSError):
                self._admit(conn, addr, joined, min(remaining, 10.0))
        reply = {"error": self.error} if self.error else {"table": {n: a for n, (_, a) in joined.items()}}
        for stream, _ in joined.values():
            with contextlib.suppress(OSError, ValueError, ProtocolError):
                send_message(stream, reply)
        for stream, _ in joined.values():
            stream.close()
        self._sock.close()

    def _admit(self, conn: socket.socket, addr: Any, joined: dict, timeout: float) -> None:
        who = f"a connection from {addr[0]}:{addr[1]}"
        stream = None
        try:
            stream, cert_name = handshake(
                conn, self._ctx, server=True, expected=None, me=INTRODUCER_NAME, where=who, timeout=timeout
            )
            conn.settimeout(timeout)
            name, rank, host, port = parse_registration(who, read_message(stream, who))
            if self._by_rank.get(rank) != name:
                raise AuthenticationError(
                    f"{who} claimed to be {name!r} at rank {rank!r}, which is not in the layout"
                )
            if self._ctx is not None and cert_name != name:
                raise AuthenticationError(
                    f"authentication failed for {who} claiming to be {name!r} (rank {rank}): its certificate "
                    f"is issued to {cert_name!r}"
                )
            if name in joined:
                raise AuthenticationError(f"{who} registered {name!r} a second time")
            conn.settimeout(None)
            joined[name] = (stream, [host, port])
        except ProtocolError as exc:
            self.refused.append(str(exc))
            log.warning("rendezvous refused %s", exc)
            if stream is not None:  # authenticated, but not as what it claimed: say why
                with contextlib.suppress(OSError, ValueError, ProtocolError):
                    send_message(stream, {"refused": str(exc)})
            with contextlib.suppress(OSError):
                conn.close()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)


def register(
    master: str,
    name: str,
    rank: int,
    my_address: tuple[str, int],
    context: ssl.SSLContext | None,
    introducer_name: str,
    timeout: float,
) -> dict[str, tuple[str, int]]:
    """Register at the introducer and wait for the address table."""
    host, port = parse_address(master)
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic()))
            break
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise PeerTimeoutError(
                    f"{name!r} (rank {rank}) could not reach the rendezvous at {master} within {timeout:g} s: {exc}"
                ) from None
            time.sleep(0.1)
    where = f"the rendezvous at {master}"
    stream, _ = handshake(
        sock, context, server=False, expected=introducer_name, me=name, where=where, timeout=timeout
    )
    send_message(stream, {"name": name, "rank": rank, "host": my_address[0], "port": my_address[1]})
    sock.settimeout(max(0.1, deadline - time.monotonic()) + 5.0)
    try:
        reply = read_message(stream, where)
    except (TimeoutError, OSError):
        raise PeerTimeoutError(f"{name!r} got no address table from {where} within {timeout:g} s") from None
    finally:
        stream.close()
    key, value = parse_reply(where, reply)
    if key == "refused":
        raise AuthenticationError(f"{name!r}: the rendezvous refused this party: {value}")
    if key == "error":
        raise PeerTimeoutError(f"{name!r} could not start: {value}")
    return dict(value)


__all__ = [
    "INTRODUCER_NAME",
    "MAX_NAME_CHARS",
    "MAX_TEXT_CHARS",
    "Introducer",
    "listen",
    "local_address_towards",
    "parse_address",
    "parse_hello",
    "parse_registration",
    "parse_reply",
    "register",
]
