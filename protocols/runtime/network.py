"""Run one party of a protocol in this process over the socket transport (TLS by default).

The steps, each with its own deadline: open a listening socket, register at
the rendezvous (rank 0 hosts it unless a launcher does; none with a static
address table, :mod:`protocols.transport.peers`), connect one
authenticated link per peer (:mod:`protocols.transport.mesh`), agree on the
run's settings over those links (:func:`agree`), run the role, then end
with the final confirmation round (``BYE`` to and from every peer,
:mod:`protocols.transport.confirmation`): a party returns its output only
once every party confirmed it finished. On any failure the reason is sent to
every peer over the authenticated links and the exception re-raised; the
caller should end the process.

Nothing here imports torch.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Mapping
from typing import Any

from protocols.errors import InputValidationError, ProtocolError
from protocols.identity import exchange_identity
from protocols.party import Party
from protocols.runtime.runner import PartyReport, make_report
from protocols.transport.base import now
from protocols.transport.mesh import connect_mesh
from protocols.transport.peers import PeerTable
from protocols.transport.ranks import check_ranks
from protocols.transport.rendezvous import (
    INTRODUCER_NAME,
    WAITING_LOG_SECONDS,
    Introducer,
    listen,
    local_address_towards,
    parse_address,
    register,
)
from protocols.transport.socket_channel import SocketChannel
from protocols.transport.tls import Credentials, client_context, server_context

log = logging.getLogger("mpc_pca.transport")

Role = Callable[[Party], Any]

#: Largest data message a party accepts when the caller states no cap: large
#: enough for a d x d float64 matrix at d = 5000, small enough that no peer can
#: make a party allocate more than this for one frame.
DEFAULT_MESSAGE_CAP = 256 << 20


def open_links(
    name: str,
    ranks: Mapping[str, int],
    master: str,
    *,
    credentials: Credentials | None,
    listen_host: str | None = None,
    timeout: float = 600.0,
    connect_timeout: float = 60.0,
    host_rendezvous: bool | None = None,
    listen_at: tuple[str, int] | None = None,
    advertise: tuple[str, int] | None = None,
    join_window: float | None = None,
    waiting_log_interval: float = WAITING_LOG_SECONDS,
    relay: str | None = None,
    announce: Mapping[str, Any] | None = None,
    peers: PeerTable | None = None,
    listener: socket.socket | None = None,
) -> SocketChannel:
    """Join the run and connect to every peer; return this party's channel.

    Parameters
    ----------
    name : str
        This party's name; ``ranks[name]`` is its rank.
    ranks : mapping of str to int
        Every party's rank ``0 .. W-1``.
    master : str
        ``HOST:PORT`` of the rendezvous. Rank 0 listens there (on that
        interface only) unless ``host_rendezvous=False``.
    credentials : Credentials or None
        This party's CA, certificate and key; ``None`` means ``insecure=True``
        (plain TCP, nothing authenticated).
    listen_host : str, optional
        Interface for this party's own listening socket (port 0); defaults to
        the local address that routes to the master host.
    timeout : float
        Phase deadline of the channel (seconds without progress).
    connect_timeout : float
        Seconds for connecting the links once the address table is known
        (and for the rendezvous unless ``join_window`` is given).
    host_rendezvous : bool, optional
        Host the rendezvous here; defaults to ``True`` at rank 0.
    listen_at : (str, int), optional
        ``(host, port)`` of this party's listening socket (the ``listen``
        setting; port 0: the kernel picks). A wildcard host (``0.0.0.0``,
        ``::``) listens on every interface. Overrides ``listen_host``.
    advertise : (str, int), optional
        The address the rendezvous gives the others to dial: a NAT port forward or a firewall's public address. Default: the
        listening address (with a wildcard host, the local address that
        routes to the master). Without ``listen_at``, the party listens on
        the advertised port of the interface that routes to the master.
    join_window : float, optional
        Seconds the rendezvous (and this party) wait for every party to
        register; default: ``connect_timeout``.
    waiting_log_interval : float
        Seconds between two waiting-room lines of the rendezvous.
    relay : str, optional
        ``HOST:PORT`` of a relay (:mod:`protocols.transport.relay`): this
        party only dials out, to the relay, which hosts the rendezvous and
        forwards each pair's end-to-end TLS session; ``master`` and the
        listening options are then unused. Needs ``credentials``.
    announce : mapping, optional
        This party's public settings, sent to every peer in the same round
        as its identity key, so that :func:`agree` costs no round of its
        own (it then only receives); give :func:`agree` the same mapping.
    peers : PeerTable, optional
        A static address table (a peers file,
        :func:`protocols.transport.peers.read_peers`): no rendezvous (``master`` is
        unused); this party listens on its own entry's address (or on
        ``listen_at``; port 0 there means the entry's port) and dials every
        higher rank, retrying while a peer is not listening yet, until
        ``connect_timeout``.
    listener : socket.socket, optional
        With ``peers``: an already-listening socket to accept on (a local
        launcher binds every party's port before the table is written).
    """
    if peers is not None:
        return _open_static(
            name, ranks, peers, credentials, timeout, connect_timeout, listen_at, listener, announce
        )
    if relay is not None:
        return _open_relayed(name, ranks, relay, credentials, timeout, connect_timeout, join_window, announce)
    table = check_ranks(ranks)
    rank = _rank_of(name, table)
    master_host, master_port = parse_address(master)
    hosting = rank == 0 if host_rendezvous is None else bool(host_rendezvous)
    if hosting and master_port == 0:
        raise InputValidationError(f"the rendezvous host needs an explicit port, got master={master!r}")
    client_ctx, server_ctx = _contexts(credentials)
    window = connect_timeout if join_window is None else join_window
    start = now()
    introducer = (
        Introducer(master, table, server_ctx, window, log_interval=waiting_log_interval) if hosting else None
    )
    host, port = _listening_address(listen_at, listen_host, advertise, master_host)
    try:
        listener = listen(host, port)
    except InputValidationError as exc:
        if introducer is not None:
            introducer.close()
        raise InputValidationError(f"{name!r} {exc}") from None
    bound = (host, listener.getsockname()[1])
    address = _advertised_address(advertise, bound, master_host)
    log.info(
        "%s: rank %d listening on %s:%d%s (%s)", name, rank, *bound,
        "" if address == bound else f", advertising {address[0]}:{address[1]}",
        "TLS 1.3" if credentials else "INSECURE",
    )  # fmt: skip
    introducer_name, hosted_by = _introduction(table, host_rendezvous, hosting)
    try:
        addresses = register(
            master, name, rank, address, client_ctx, introducer_name, window, hosted_by=hosted_by
        )
        streams = connect_mesh(
            name,
            table,
            addresses,
            listener,
            client_ctx=client_ctx,
            server_ctx=server_ctx,
            timeout=connect_timeout,
        )
    except BaseException:
        listener.close()
        raise
    finally:
        if introducer is not None:
            introducer.join(window)
    log.info("%s: connected to %d peers in %.2f s", name, len(streams), now() - start)
    return _channel(name, table, streams, timeout, connect_timeout, announce)


def _rank_of(name: str, table: Mapping[str, int]) -> int:
    """``table[name]``, or the error that ``name`` has no rank."""
    if name not in table:
        raise InputValidationError(f"party {name!r} has no rank; ranks are {table}")
    return table[name]


def _contexts(credentials: Credentials | None) -> tuple[Any, Any]:
    """The client and server TLS contexts of ``credentials`` (both ``None`` for plain TCP)."""
    if credentials is None:
        return None, None
    return client_context(credentials), server_context(credentials)


def _listening_address(
    listen_at: tuple[str, int] | None,
    listen_host: str | None,
    advertise: tuple[str, int] | None,
    master_host: str,
) -> tuple[str, int]:
    """Where this party listens.

    ``listen_at`` if given, else ``listen_host`` (default: the local address
    that routes to the master) at the advertised port (default: 0, the kernel
    picks).
    """
    if listen_at is not None:
        return listen_at
    return listen_host or local_address_towards(master_host), 0 if advertise is None else advertise[1]


def _advertised_address(
    advertise: tuple[str, int] | None, bound: tuple[str, int], master_host: str
) -> tuple[str, int]:
    """The address the rendezvous gives the other parties to dial.

    ``advertise`` if given, else the bound address, a wildcard host replaced
    by the local address that routes to the master.
    """
    if advertise is not None:
        return advertise
    if bound[0] in ("0.0.0.0", "::", ""):
        return local_address_towards(master_host), bound[1]
    return bound


def _introduction(
    table: Mapping[str, int], host_rendezvous: bool | None, hosting: bool
) -> tuple[str, str | None]:
    """The rendezvous host's name and ``hosted_by`` that :func:`register` expects of this party.

    The name is rank 0's, or :data:`INTRODUCER_NAME` when ``host_rendezvous``
    is ``False`` (a launcher hosts the rendezvous). ``hosted_by`` is rank 0's
    name when, by default, rank 0 hosts the rendezvous for this party, else
    ``None``.
    """
    rank0 = next(n for n, r in table.items() if r == 0)
    introducer_name = rank0 if host_rendezvous is None or hosting else INTRODUCER_NAME
    return introducer_name, rank0 if host_rendezvous is None and not hosting else None


def _open_static(
    name: str,
    ranks: Mapping[str, int],
    peers: PeerTable,
    credentials: Credentials | None,
    timeout: float,
    connect_timeout: float,
    listen_at: tuple[str, int] | None,
    listener: socket.socket | None,
    announce: Mapping[str, Any] | None,
) -> SocketChannel:
    """:func:`open_links` over a static address table: listen, dial the higher ranks, accept the lower ones."""
    table = check_ranks(ranks)
    peers.check_ranks(table)
    _rank_of(name, table)
    own = peers.addresses[name]
    client_ctx, server_ctx = _contexts(credentials)
    start = now()
    if listener is None:
        host, port = own if listen_at is None else (listen_at[0], listen_at[1] or own[1])
        try:
            listener = listen(host, port)
        except InputValidationError as exc:
            raise InputValidationError(f"{name!r} {exc}") from None
    log.info(
        "%s: rank %d listening on %s:%d, peers from a static table (%s)", name, table[name],
        *listener.getsockname()[:2], "TLS 1.3" if credentials else "INSECURE",
    )  # fmt: skip
    try:
        streams = connect_mesh(
            name, table, peers.addresses, listener, client_ctx=client_ctx, server_ctx=server_ctx,
            timeout=connect_timeout, retry_unreachable=True,
        )  # fmt: skip
    except BaseException:
        listener.close()
        raise
    log.info("%s: connected to %d peers in %.2f s", name, len(streams), now() - start)
    return _channel(name, table, streams, timeout, connect_timeout, announce)


def _open_relayed(
    name: str,
    ranks: Mapping[str, int],
    relay: str,
    credentials: Credentials | None,
    timeout: float,
    connect_timeout: float,
    join_window: float | None,
    announce: Mapping[str, Any] | None = None,
) -> SocketChannel:
    """:func:`open_links` through a relay: one outbound connection, one TLS session per peer inside it."""
    from protocols.transport.relay import connect_relay

    table = check_ranks(ranks)
    _rank_of(name, table)
    if credentials is None:
        raise InputValidationError(
            f"{name!r}: a relay needs TLS credentials: the pairs' sessions through it are what keeps the relay "
            "from reading or altering the frames (insecure=True cannot be used with a relay)"
        )
    start = now()
    streams = connect_relay(
        name,
        table,
        relay,
        client_ctx=client_context(credentials),
        server_ctx=server_context(credentials),
        join_window=connect_timeout if join_window is None else join_window,
        timeout=connect_timeout,
        send_timeout=timeout,
    )
    log.info(
        "%s: connected to %d peers through the relay at %s in %.2f s",
        name,
        len(streams),
        relay,
        now() - start,
    )
    return _channel(name, table, streams, timeout, connect_timeout, announce)


def _channel(
    name: str,
    table: Mapping[str, int],
    streams: Mapping[str, Any],
    timeout: float,
    connect_timeout: float,
    announce: Mapping[str, Any] | None = None,
) -> SocketChannel:
    """The channel over connected streams, with the per-run identities exchanged over them.

    With ``announce``, this party's public settings leave in the same round
    as its identity key (:func:`agree` then only receives the peers').
    """
    channel = SocketChannel(name, table, streams, timeout)

    def send_announcement() -> None:
        if announce is not None:
            _announce(channel, announce)

    try:
        channel.identity = exchange_identity(
            name,
            channel.peers,
            channel.send_control,
            lambda peer: channel.recv_control(peer, connect_timeout),
            after_send=send_announcement,
        )
    except BaseException as exc:
        fail(channel, exc)
        raise
    return channel


def _announce(channel: SocketChannel, public: Mapping[str, Any]) -> None:
    """Send this party's public settings to every peer (once: :attr:`SocketChannel.announced`)."""
    mine = dict(public)
    for peer in channel.peers:
        channel.send_control(peer, mine)
    channel.announced = mine


def agree(channel: SocketChannel, public: Mapping[str, Any], timeout: float) -> dict[str, dict[str, Any]]:
    """Send this party's public settings to every peer over the links; return everybody's.

    Only data every party may know belongs here (protocol settings, array
    sizes). The messages are not metered.
    """
    mine = dict(public)
    if channel.announced != mine:  # not sent with the identity keys (open_links' announce)
        _announce(channel, mine)
    views = {channel.me: mine}
    for peer in channel.peers:
        value = channel.recv_control(peer, timeout)
        if not isinstance(value, dict):
            raise ProtocolError(f"{peer!r} sent settings that are not a mapping")
        views[peer] = value
    return views


def check_agreement(views: Mapping[str, Mapping[str, Any]], keys: tuple[str, ...]) -> None:
    """Raise :class:`InputValidationError` naming every party's value of the first key they disagree on."""
    for key in keys:
        values = {name: view.get(key) for name, view in views.items()}
        if len({json.dumps(v, sort_keys=True) for v in values.values()}) != 1:
            raise InputValidationError(f"the parties disagree on {key}: {values}")


def run_role(channel: SocketChannel, role: Role) -> tuple[Any, PartyReport]:
    """Run ``role`` over ``channel``, then the confirmation round; on failure tell every peer why and re-raise.

    The output is returned only once every peer that is not excused
    confirmed that it finished (:meth:`SocketChannel.close`); a peer that
    failed or disappeared before that makes this raise, naming it, so the
    caller writes nothing.

    A channel whose message cap was not set gets :data:`DEFAULT_MESSAGE_CAP`,
    so that no data frame waits for a cap that never comes.
    """
    if channel.max_message_bytes is None:
        channel.set_message_cap(DEFAULT_MESSAGE_CAP)
    party = Party(channel.me, channel)
    start = now()
    try:
        output = role(party)
        seconds = now() - start
        report = make_report(party, seconds)
        channel.close()  # raises if a peer sent data that was never read
    except BaseException as exc:
        fail(channel, exc)
        raise
    cost = channel.confirmation
    log.info(
        "%s: done in %.2f s; every party confirmed it finished %.3f s later (%d confirmations sent, %d received)",
        channel.me, seconds, cost.seconds, cost.sent, cost.received,
    )  # fmt: skip
    return output, report


def fail(channel: SocketChannel, exc: BaseException) -> None:
    """Send the failure to every peer and close the links."""
    channel.abort(f"party {channel.me!r} failed: {type(exc).__name__}: {exc}")
    channel.shutdown()


__all__ = ["DEFAULT_MESSAGE_CAP", "agree", "check_agreement", "check_ranks", "fail", "open_links", "run_role"]
