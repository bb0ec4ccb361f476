"""The rendezvous' set-up messages: framing, typed schemas and their bounds.

Every set-up message has a typed schema: the link ``HELLO``
(:func:`parse_hello`), the registration (:func:`parse_registration`) and
the introducer's reply with its address table or a waiting-room status
(:func:`parse_reply`): exact keys, ``str`` names and hosts of at most
:data:`MAX_NAME_CHARS` characters, integer ranks and ports in range. Any
other shape is a :class:`~protocols.errors.ProtocolError` naming the sender,
never a crash of the introducer or of a party's acceptor thread. A set-up
frame that announces more than :data:`MAX_SETUP_BYTES` is refused before
anything is allocated for it (:func:`read_message`).
"""

from __future__ import annotations

import math
from typing import Any

from protocols.errors import PeerTimeoutError, ProtocolError, WireFormatError
from protocols.transport.links import HEADER, ClosedError, Stream
from protocols.transport.wire import decode_message, encode_message

#: Name the launcher's introducer has in its certificate.
INTRODUCER_NAME = "rendezvous"
#: Largest set-up frame (HELLO, registration, reply) read before allocating (bytes).
MAX_SETUP_BYTES = 64 << 10
_KIND_HELLO = 6
#: Longest party name or host a set-up message may carry (characters).
MAX_NAME_CHARS = 256
#: Longest refusal or error text in the introducer's reply (characters).
MAX_TEXT_CHARS = 16 << 10
#: Default seconds between two waiting-room lines (and status messages to the parties).
WAITING_LOG_SECONDS = 30.0
#: Most names a waiting-room status message may list.
MAX_WAITING_NAMES = 4096


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


__all__ = [
    "INTRODUCER_NAME",
    "MAX_NAME_CHARS",
    "MAX_SETUP_BYTES",
    "MAX_TEXT_CHARS",
    "MAX_WAITING_NAMES",
    "WAITING_LOG_SECONDS",
    "Waiting",
    "parse_hello",
    "parse_registration",
    "parse_reply",
    "read_message",
    "send_message",
    "waiting_line",
]
