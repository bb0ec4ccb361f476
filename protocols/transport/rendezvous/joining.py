"""The rendezvous' client side: dial an accepting end, register, wait for the address table.

:func:`register` dials the introducer (:func:`dial` retries while it is
busy or, before the join window ends, unreachable), registers this party's
advertised address and reads the replies until the address table
(:func:`await_table`), logging the waiting-room statuses on the way.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time

from protocols.errors import PeerFailureError, PeerTimeoutError, ProtocolError
from protocols.transport.links import Stream, UnansweredError, handshake
from protocols.transport.rendezvous.addresses import parse_address
from protocols.transport.rendezvous.gate import plural
from protocols.transport.rendezvous.messages import (
    WAITING_LOG_SECONDS,
    parse_reply,
    read_message,
    send_message,
    waiting_line,
)
from protocols.transport.tls import AuthenticationError

log = logging.getLogger("mpc_pca.transport")
#: Seconds one TCP connection attempt may take. A host that drops the attempt (a firewall, a dead
#: machine) is then reported after this long, not at the end of the join window; the next attempt
#: sends a fresh SYN.
CONNECT_ATTEMPT_SECONDS = 2.0


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
            sock = socket.create_connection(
                address, timeout=max(0.1, min(remaining, CONNECT_ATTEMPT_SECONDS))
            )
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
                    f"{exc}; it left {plural(unanswered, 'attempt')} unanswered before the deadline"
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
            f"the rendezvous host {hosted_by!r} (rank 0, master={master}) is unreachable: its process is down "
            "or has not started, or that address is the wrong one"
        )
    else:
        down = f"the rendezvous at master={master} is unreachable: it is not running or the address is wrong"
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


__all__ = ["await_table", "dial", "register"]
