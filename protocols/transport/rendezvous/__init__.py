"""Rendezvous and link set-up for the socket transport (no torch needed).

Introduction
    One process (rank 0, or the local launcher) runs an :class:`Introducer`
    listening on the ``master`` address (that interface only, never all of
    them). Every party opens a listening socket on port 0 of its own
    interface, connects to the introducer over mutually authenticated TLS and
    registers ``(name, rank, host, port)``; the introducer checks that the
    certificate names the party the protocol has at that rank and, once all
    parties are in, returns the address table. The introducer is only trusted
    to introduce: a wrong address just makes the link's own authentication
    fail, and nothing else it says is believed.

Addresses
    A party listens on a fixed ``HOST:PORT`` when given one (``listen``;
    port 0 still lets the kernel pick) and registers the address the others
    must dial: its ``advertise`` address when given (a NAT port forward, a
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
    insecure link, ``insecure=True``, has to go by). Failed handshakes from anyone else are
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

Modules
    :mod:`~protocols.transport.rendezvous.messages` (the set-up messages and
    their schemas), :mod:`~protocols.transport.rendezvous.addresses`
    (``HOST:PORT`` options, listening sockets),
    :mod:`~protocols.transport.rendezvous.gate` (the bounded handshakes of
    an accepting end), :mod:`~protocols.transport.rendezvous.introducer`
    (the server side: the waiting room) and
    :mod:`~protocols.transport.rendezvous.joining` (the client side: dial,
    register, wait for the table). This package re-exports their public
    names.
"""

from protocols.transport.rendezvous.addresses import (
    listen,
    local_address_towards,
    parse_address,
    parse_endpoint,
)
from protocols.transport.rendezvous.gate import (
    FIRST_BYTES_SECONDS,
    HANDSHAKE_SECONDS,
    MAX_HANDSHAKES,
    MAX_HANDSHAKES_PER_ADDRESS,
    HandshakeGate,
    Wakeup,
    handshake_limits,
)
from protocols.transport.rendezvous.introducer import LATE_REFUSAL_SECONDS, MAX_REJOINS, Introducer
from protocols.transport.rendezvous.joining import await_table, dial, register
from protocols.transport.rendezvous.messages import (
    INTRODUCER_NAME,
    MAX_NAME_CHARS,
    MAX_SETUP_BYTES,
    MAX_TEXT_CHARS,
    MAX_WAITING_NAMES,
    WAITING_LOG_SECONDS,
    parse_hello,
    parse_registration,
    parse_reply,
    read_message,
    send_message,
    waiting_line,
)

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
