"""Run a user's role functions as OS processes or as one party per host, over TLS links.

Two calls, the same role functions as :func:`protocols.runtime.run_inprocess`:

:func:`run_party`
    This process is one party of a run whose other parties run elsewhere
    (one per organisation's host): join the rendezvous, connect one mutually
    authenticated TLS 1.3 link per peer, run the role, end cleanly or tell
    every peer why not.
:func:`run_processes`
    Every party of a run as its own local process, linked by TLS 1.3 with
    throw-away credentials made for the run (a CA and one certificate per
    party name, deleted afterwards); the launcher hosts the rendezvous on
    127.0.0.1 at a port the kernel picks.

Every data message a party accepts is bounded by a cap
(:attr:`LinkOptions.message_cap`, :data:`DEFAULT_MESSAGE_CAP` unless given),
so no party waits for a cap nobody set, and no peer can make it allocate more.
Outputs travel from a party process back to :func:`run_processes` in the wire
format of :mod:`protocols.transport.wire` (never pickled); the role functions
travel the other way, from the caller to its own children, so they must be
picklable: module-level functions or :func:`functools.partial` of them.
"""

from __future__ import annotations

import logging
import os
import pickle
import socket
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocols.errors import InputValidationError
from protocols.runtime.exits import run_or_exit
from protocols.runtime.network import DEFAULT_MESSAGE_CAP, Role, fail, open_links, run_role
from protocols.runtime.runner import PartyReport, RunResult, check_timeout
from protocols.transport.peers import PeerTable
from protocols.transport.ranks import check_ranks
from protocols.transport.rendezvous import WAITING_LOG_SECONDS
from protocols.transport.socket_channel import SocketChannel
from protocols.transport.tls import Credentials

log = logging.getLogger("mpc_pca.transport")


@dataclass(frozen=True)
class LinkOptions:
    """How one party reaches its peers.

    Attributes
    ----------
    master : str
        ``HOST:PORT`` of the rendezvous. Rank 0 hosts it there unless
        ``host_rendezvous=False`` (e.g. a launcher hosts it).
    credentials : Credentials or None
        This party's CA, certificate and key; required unless ``insecure``.
    insecure : bool
        Plain TCP links: nothing encrypted or authenticated.
    listen_host : str, optional
        Interface of this party's own listening socket (port 0); default: the
        local address that routes to the master.
    timeout : float
        Phase deadline: seconds a party waits while no party makes progress.
    connect_timeout : float
        Seconds for the rendezvous and for connecting the links.
    host_rendezvous : bool, optional
        Host the rendezvous in this party; default: at rank 0.
    message_cap : int
        Largest data message (bytes) this party accepts from a peer.
    listen : (str, int), optional
        ``(host, port)`` of this party's listening socket: a fixed port to
        open in a firewall (0: the kernel picks; a wildcard host listens on
        every interface). Give it or ``listen_host``, not both.
    advertise : (str, int), optional
        The address the rendezvous gives the other parties to dial, e.g. a
        NAT port forward; default: the listening address. Without ``listen`` the party listens on the
        advertised port of the interface that routes to the master.
    join_window : float, optional
        Seconds the rendezvous (and this party) wait for every party to join
        (the waiting room); default: ``connect_timeout``.
    waiting_log_interval : float
        Seconds between two waiting-room lines of the rendezvous.
    relay : str, optional
        ``HOST:PORT`` of a relay: the party only dials out, to the relay,
        which hosts the rendezvous (``master`` is unused). Needs
        TLS credentials; ``listen``, ``listen_host``, ``advertise`` and
        ``host_rendezvous`` do not apply.
    peers : PeerTable, optional
        A static address table (a peers file,
        :func:`protocols.transport.peers.read_peers`): no rendezvous,
        ``master`` is unused; ``listen`` may override this party's own entry (e.g.
        ``0.0.0.0`` behind NAT). ``relay``, ``advertise``, ``listen_host``,
        ``host_rendezvous`` and ``join_window`` do not apply.
    listener : socket.socket, optional
        With ``peers``: a socket already listening on this party's port (a
        local launcher binds them all before it writes the table).
    """

    master: str
    credentials: Credentials | None = None
    insecure: bool = False
    listen_host: str | None = None
    timeout: float = 600.0
    connect_timeout: float = 60.0
    host_rendezvous: bool | None = None
    message_cap: int = DEFAULT_MESSAGE_CAP
    listen: tuple[str, int] | None = None
    advertise: tuple[str, int] | None = None
    join_window: float | None = None
    waiting_log_interval: float = WAITING_LOG_SECONDS
    relay: str | None = None
    peers: PeerTable | None = None
    listener: socket.socket | None = None

    def check(self, name: str) -> None:
        """Refuse, before anything is sent, options that cannot make a run.

        Raises
        ------
        InputValidationError
            Naming the party and the value: no credentials without
            ``insecure``, a non-positive deadline, join window, log interval
            or message cap, a listening or advertised address that is not
            ``(host, port)`` with a port in range, ``listen`` with ``listen_host``.
        """
        check_timeout(self.timeout)
        check_timeout(self.connect_timeout)
        for field in ("join_window", "waiting_log_interval"):
            _check_seconds(name, field, getattr(self, field))
        for field, address, lowest in (("listen", self.listen, 0), ("advertise", self.advertise, 1)):
            _check_address(name, field, address, lowest)
        if self.listen is not None and self.listen_host is not None:
            raise InputValidationError(
                f"{name}: give listen=(host, port) or listen_host, not both ({self.listen!r}, {self.listen_host!r})"
            )
        _check_message_cap(self.message_cap)
        if self.relay is not None:
            self._check_relay(name)
        if self.peers is not None or self.listener is not None:
            self._check_peers(name)
        if self.credentials is None and not self.insecure:
            raise InputValidationError(
                f"{name} has no TLS credentials: pass credentials (a CA, certificate and key, e.g. read from a "
                "tls_dir), or insecure=True to run with links that are neither encrypted nor authenticated"
            )

    def _check_peers(self, name: str) -> None:
        if self.peers is None:
            raise InputValidationError(f"{name}: listener={self.listener!r} needs a static table (peers)")
        given = [
            option
            for option, value in (
                ("relay", self.relay),
                ("advertise", self.advertise),
                ("listen_host", self.listen_host),
                ("host_rendezvous", self.host_rendezvous),
                ("join_window", self.join_window),
            )
            if value is not None
        ]
        if given:
            raise InputValidationError(
                f"{name}: {', '.join(given)} do not apply with a static address table (peers): there is no "
                "rendezvous, every party listens at its own entry's address"
            )

    def _check_relay(self, name: str) -> None:
        from protocols.transport.rendezvous import parse_address

        parse_address(self.relay or "")
        if self.insecure:
            raise InputValidationError(
                f"{name}: a relay needs TLS (the pairs' end-to-end sessions are what keep the relay from reading "
                f"or altering frames); insecure=True cannot be used with relay={self.relay!r}"
            )
        given = [
            option
            for option, value in (
                ("listen", self.listen),
                ("listen_host", self.listen_host),
                ("advertise", self.advertise),
                ("host_rendezvous", self.host_rendezvous),
            )
            if value is not None
        ]
        if given:
            raise InputValidationError(
                f"{name}: {', '.join(given)} do not apply with a relay (the party only dials out to the relay, "
                "which hosts the rendezvous)"
            )


def _check_seconds(name: str, field: str, value: Any) -> None:
    """Refuse a ``join_window`` or ``waiting_log_interval`` that is not a positive, finite number (``None`` passes)."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf")
    ):
        raise InputValidationError(
            f"{name}: {field}={value!r} is invalid; it must be a positive, finite number of seconds"
        )


def _check_address(name: str, field: str, address: Any, lowest: int) -> None:
    """Refuse a ``listen`` or ``advertise`` that is not ``(host, port)`` with ``lowest <= port < 65536``."""
    if address is None:
        return
    host, port = address if isinstance(address, tuple) and len(address) == 2 else (None, None)
    if (
        not isinstance(host, str) or not host or isinstance(port, bool) or not isinstance(port, int)
        or not lowest <= port < 65536
    ):  # fmt: skip
        raise InputValidationError(
            f"{name}: {field}={address!r} is invalid; it must be (host, port) with a port in "
            f"{lowest} .. 65535"
        )


def _check_message_cap(cap: Any) -> None:
    """Refuse a message cap that is not a positive number of bytes."""
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise InputValidationError(f"message_cap={cap!r} is invalid; it must be a positive number of bytes")


def connect(
    name: str, ranks: Mapping[str, int], links: LinkOptions, announce: Mapping[str, Any] | None = None
) -> SocketChannel:
    """Open this party's links (:func:`protocols.runtime.network.open_links`) with ``links``' options.

    ``announce``: this party's public settings, sent with its identity key (see ``open_links``).
    """
    links.check(name)
    if links.insecure:
        log.warning("%s: insecure: the links are neither encrypted nor authenticated", name)
    channel = open_links(
        name,
        ranks,
        links.master,
        credentials=None if links.insecure else links.credentials,
        listen_host=links.listen_host,
        timeout=links.timeout,
        connect_timeout=links.connect_timeout,
        host_rendezvous=links.host_rendezvous,
        listen_at=links.listen,
        advertise=links.advertise,
        join_window=links.join_window,
        waiting_log_interval=links.waiting_log_interval,
        relay=links.relay,
        announce=announce,
        peers=links.peers,
        listener=links.listener,
    )
    channel.set_message_cap(links.message_cap)
    return channel


def run_party(
    name: str,
    role: Role,
    *,
    ranks: Mapping[str, int],
    links: LinkOptions,
    setup: Callable[[SocketChannel], None] | None = None,
) -> tuple[Any, PartyReport]:
    """Run ``role`` as party ``name`` of a run whose other parties run elsewhere.

    Parameters
    ----------
    name : str
        This party's name; ``ranks[name]`` is its rank. With TLS, its
        certificate must name it.
    role : callable
        ``role(party) -> output``, the same function :func:`run_inprocess` runs.
    ranks : mapping of str to int
        Every party's rank ``0 .. W-1`` (the same map at every party).
    links : LinkOptions
        Rendezvous address, credentials, deadlines and message cap.
    setup : callable, optional
        ``setup(channel)`` runs once the links are up and before the role,
        e.g. to agree settings (:func:`protocols.runtime.network.agree`) or to
        set a tighter cap; a failure there is told to every peer.

    Returns
    -------
    output : object
        What ``role`` returned.
    report : PartyReport
        This party's bytes, messages, rounds and seconds.

    Raises
    ------
    InputValidationError
        Before anything is sent, for a party without a rank or credentials.
    ProtocolError
        If this or any other party failed; the message names the root cause.
    """
    table = check_ranks(ranks)
    if name not in table:
        raise InputValidationError(f"party {name!r} has no rank; ranks are {table}")
    channel = connect(name, table, links)
    if setup is not None:
        try:
            setup(channel)
        except BaseException as exc:
            fail(channel, exc)
            raise
    return run_role(channel, role)


def _party_process(name: str, role: Role, ranks: dict[str, int], links: LinkOptions, out: str) -> int:
    """Body of one party process of :func:`run_processes`: run, write the output in the wire format.

    A failure ends the process at once (:func:`protocols.runtime.exits.run_or_exit`).
    """
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(message)s")
    run_or_exit(lambda: _run_and_write(name, role, ranks, links, out))
    return 0


def _run_and_write(name: str, role: Role, ranks: dict[str, int], links: LinkOptions, out: str) -> None:
    from protocols.transport.wire import encode_message

    output, report = run_party(name, role, ranks=ranks, links=links)
    try:
        payload = encode_message({"output": output, "report": report.as_dict()})
    except TypeError as exc:
        raise InputValidationError(
            f"party {name!r}'s output cannot be sent back in the wire format ({exc}); return None, "
            "numbers, strings, bytes, numeric arrays, lists or str-keyed dicts"
        ) from None
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(payload)


def host_introducer(
    ranks: Mapping[str, int], workdir: Path, *, insecure: bool, timeout: float, link_profile: Any = None
) -> Any:
    """Host a local run's rendezvous on 127.0.0.1 at a port the kernel picks; return it (keep it alive).

    Without ``insecure``, first writes throw-away credentials for every party
    and the rendezvous under ``workdir / "tls"`` (:func:`local_links` reads them).
    With a ``link_profile`` (:class:`protocols.testing.wan_emulator.LinkProfile`), the
    rendezvous is a :class:`protocols.testing.wan_emulator.ForwardingIntroducer`: every
    party's listener is reached through an emulated WAN link.
    """
    from protocols.transport.rendezvous import INTRODUCER_NAME, Introducer
    from protocols.transport.tls import server_context

    context = None
    if not insecure:
        from protocols.transport.certs import write_credentials

        write_credentials([*ranks, INTRODUCER_NAME], workdir / "tls", days=1)
        context = server_context(Credentials.from_dir(workdir / "tls", INTRODUCER_NAME))
    if link_profile is not None:
        from protocols.testing.wan_emulator import ForwardingIntroducer

        return ForwardingIntroducer("127.0.0.1:0", ranks, context, timeout, profile=link_profile)
    return Introducer("127.0.0.1:0", ranks, context, timeout)


def local_links(
    name: str,
    port: int,
    workdir: Path,
    *,
    insecure: bool,
    timeout: float,
    connect_timeout: float,
    message_cap: int = DEFAULT_MESSAGE_CAP,
) -> LinkOptions:
    """Party ``name``'s links in a local run hosted by :func:`host_introducer` on ``port``."""
    return LinkOptions(
        f"127.0.0.1:{port}",
        None if insecure else Credentials.from_dir(workdir / "tls", name),
        insecure,
        listen_host="127.0.0.1",
        timeout=timeout,
        connect_timeout=connect_timeout,
        host_rendezvous=False,
        message_cap=message_cap,
    )


def run_processes(
    roles: Mapping[str, Role],
    *,
    timeout: float = 120.0,
    connect_timeout: float = 60.0,
    insecure: bool = False,
    message_cap: int = DEFAULT_MESSAGE_CAP,
    env: Mapping[str, str] | None = None,
    preload: tuple[str, ...] = (),
) -> RunResult:
    """Run each role in its own local process over TLS links; collect outputs and reports.

    Parameters
    ----------
    roles : mapping of str to callable
        Party name to role function ``f(party) -> output`` (ranks follow the
        mapping's order). Each must be picklable (a module-level function or
        a :func:`functools.partial` of one), and its output wire-encodable.
    timeout : float, default=120
        Phase deadline of every party, in seconds.
    connect_timeout : float, default=60
        Seconds for the rendezvous and the links.
    insecure : bool, default=False
        Plain TCP links instead of TLS 1.3 with throw-away certificates.
    message_cap : int
        Largest data message (bytes) a party accepts.
    env : mapping, optional
        The parties' environment (default: this process's).
    preload : tuple of str
        Modules the fork server imports once, if this call starts it.

    Returns
    -------
    RunResult
        ``outputs`` and ``reports`` by party name, as :func:`run_inprocess` returns them.

    Raises
    ------
    InputValidationError
        Before any process starts, for invalid names, deadlines or cap.
    ProtocolError
        If any party failed, naming the first failure and how each failed party ended.
    """
    from protocols.runtime.launcher import PythonCall, launch, raise_on_failure
    from protocols.transport.wire import decode_message

    ranks = check_ranks({name: rank for rank, name in enumerate(roles)})
    for name, role in roles.items():
        if not callable(role):
            raise InputValidationError(f"the role of {name!r} is not callable: {role!r}")
        try:
            pickle.dumps(role)  # only to refuse, before any process starts, a role no child can receive
        except Exception as exc:
            raise InputValidationError(
                f"the role of {name!r} cannot be handed to a process ({type(exc).__name__}: {exc}); use a "
                "module-level function or a functools.partial of one, not a lambda or a nested function"
            ) from None
    LinkOptions("127.0.0.1:0", None, True, timeout=timeout, connect_timeout=connect_timeout,
                message_cap=message_cap).check("every party")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="mpc-pca-processes-") as tmp:
        workdir = Path(tmp)
        introducer = host_introducer(ranks, workdir, insecure=insecure, timeout=connect_timeout + 3)
        outputs = {name: workdir / f"{name}.out" for name in ranks}
        commands = {}
        for name in ranks:
            links = local_links(
                name,
                introducer.port,
                workdir,
                insecure=insecure,
                timeout=timeout,
                connect_timeout=connect_timeout,
                message_cap=message_cap,
            )
            commands[name] = PythonCall(_party_process, (name, roles[name], ranks, links, str(outputs[name])))
        outcomes = launch(commands, timeout=timeout, env=env, workdir=workdir, preload=preload)
        raise_on_failure(outcomes)
        decoded = {name: decode_message(path.read_bytes()) for name, path in outputs.items()}
    return RunResult(
        outputs={name: value["output"] for name, value in decoded.items()},
        reports={name: PartyReport(name=name, **value["report"]) for name, value in decoded.items()},
    )


__all__ = [
    "DEFAULT_MESSAGE_CAP",
    "LinkOptions",
    "connect",
    "host_introducer",
    "local_links",
    "run_party",
    "run_processes",
]
