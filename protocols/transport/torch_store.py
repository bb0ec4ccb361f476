"""Parties over ``torch.distributed`` (gloo): the TCPStore rendezvous (:mod:`protocols.runtime.gloo` runs a party on it).

Only the ``crypten`` backend runs this way, and only with ``insecure=True``
(see :mod:`protocols.transport.torch_channel`); nothing here is
authenticated, so nothing read from the store is believed beyond "the run
failed": failure records only decorate error messages.

Rendezvous (env:// style, explicit)
    A ``torch.distributed.TCPStore`` listens at ``MASTER_ADDR:MASTER_PORT``;
    rank 0 hosts it unless a launcher already does. Every party connects,
    announces itself under ``mpc/joined/<rank>`` and waits for all the others,
    so a party that never connects is *named* in the error every other party
    raises after ``connect_timeout``. Then the gloo process group is created on
    the same store (keys under ``gloo/``). Set ``GLOO_SOCKET_IFNAME`` to choose
    the network interface gloo binds (needed on multi-homed hosts and in
    network namespaces).

Failures
    gloo closes a link after a timeout, and a process that dies closes all of
    its links, so any party waiting on it gets an error at once; parties that
    then fail close theirs in turn. A failing party also records its reason
    under ``mpc/abort`` in the store (first writer wins), and a party that
    loses a link quotes that reason, so every survivor's error names the root
    cause. No party ever waits longer than its timeout for one message.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch.distributed as dist

from protocols.errors import InputValidationError, PeerFailureError, PeerTimeoutError, WireFormatError
from protocols.transport.base import now
from protocols.transport.ranks import check_ranks

_ABORT_KEY = "mpc/abort"
_ABORT_COUNT_KEY = "mpc/abort-count"
_STORE_POLL_SECONDS = 0.05


def parse_master(master: str) -> tuple[str, int]:
    """Split ``ADDR:PORT`` (``[v6addr]:PORT`` for IPv6) into host and port."""
    host, sep, port_text = master.rpartition(":")
    host = host.strip("[]")
    if not sep or not host:
        raise InputValidationError(f"master address {master!r} must look like ADDR:PORT")
    try:
        port = int(port_text)
    except ValueError:
        raise InputValidationError(f"master port {port_text!r} in {master!r} is not an integer") from None
    if not 0 < port < 65536:
        raise InputValidationError(f"master port {port} is out of range; it must be between 1 and 65535")
    return host, port


# -- the store: rendezvous and failure reasons -------------------------------------


@dataclass
class Rendezvous:
    """This party's connection to the run's key-value store.

    Attributes
    ----------
    store : torch.distributed.Store
        The TCPStore (client, or server if this party hosts it).
    name : str
        This party's name.
    ranks : dict of str to int
        Every party's rank.
    hosts_store : bool
        Whether this process is the store server.
    """

    store: Any
    name: str
    ranks: dict[str, int]
    hosts_store: bool

    def record_failure(self, reason: str) -> None:
        """Record why the run failed; only the first reason recorded is kept."""
        try:
            if self.store.add(_ABORT_COUNT_KEY, 1) == 1:
                self.store.set(_ABORT_KEY, reason)
        except (RuntimeError, OSError):
            pass  # the store is gone; peers still see our links close

    def failure_reason(self, wait: float = 0.0) -> str | None:
        """The first recorded failure reason, waiting up to ``wait`` seconds for one."""
        deadline = now() + wait
        try:
            while True:
                if self.store.check([_ABORT_KEY]):
                    return self.store.get(_ABORT_KEY).decode("utf-8", "replace")
                if now() >= deadline:
                    return None
                threading.Event().wait(_STORE_POLL_SECONDS)
        except (RuntimeError, OSError):
            return None

    def exchange_public(self, mine: Mapping[str, Any], timeout: float) -> dict[str, dict[str, Any]]:
        """Publish this party's public parameters (JSON) and read everybody's.

        Only data every party may know belongs here (protocol settings, array
        sizes). Values are parsed with :func:`json.loads`, never unpickled.
        """
        self.store.set(f"mpc/public/{self.name}", json.dumps(dict(mine)))
        keys = {name: f"mpc/public/{name}" for name in self.ranks}
        _wait_for_keys(self, keys, timeout, "publish its parameters")
        views = {}
        for name, key in keys.items():
            try:
                value = json.loads(self.store.get(key).decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise WireFormatError(f"{name!r} published parameters that are not JSON: {exc}") from None
            if not isinstance(value, dict):
                raise WireFormatError(f"{name!r} published {type(value).__name__}, expected an object")
            views[name] = value
        return views

    def mark_done(self) -> None:
        """Tell the store host that this party is finished with the store."""
        with contextlib.suppress(RuntimeError, OSError):
            self.store.set(f"mpc/done/{self.name}", "1")

    def await_done(self, timeout: float) -> None:
        """The final confirmation round over the store: return once every party marked itself done.

        The gloo path's counterpart of :mod:`protocols.transport.confirmation`:
        a party keeps its output only if every party's role ended without
        error (:meth:`mark_done`). The deadline is ``timeout`` seconds after
        the start or after the last party that confirmed. On success this
        party records that it saw every confirmation (the store host keeps
        the store up until all have, :meth:`linger`).

        Raises
        ------
        PeerFailureError
            A party recorded a failure (quoted), or the store went away.
        PeerTimeoutError
            Naming every party that did not confirm in time (e.g. a killed one).
        """
        head = f"{self.name!r} writes no result: the run did not finish at every party"
        progress, confirmed = now(), 0
        try:
            while True:
                missing = [n for n in self.ranks if not self.store.check([f"mpc/done/{n}"])]
                if not missing:
                    self.store.set(f"mpc/seen/{self.name}", "1")
                    return
                reason = self.failure_reason()
                if reason is not None:
                    raise PeerFailureError(f"{head}: {reason}")
                if len(self.ranks) - len(missing) != confirmed:
                    progress, confirmed = now(), len(self.ranks) - len(missing)
                if now() >= progress + timeout:
                    named = ", ".join(f"{n!r} (rank {self.ranks[n]})" for n in missing)
                    raise PeerTimeoutError(
                        f"{head}: no confirmation that it finished came within {timeout:g} s from {named}"
                    )
                threading.Event().wait(_STORE_POLL_SECONDS)
        except (RuntimeError, OSError) as exc:
            raise PeerFailureError(
                f"{head}: the rendezvous store went away before every party confirmed ({exc})"
            ) from None

    def linger(self, timeout: float) -> None:
        """As the store host, keep the store up until every party saw every confirmation, or one failed."""
        if not self.hosts_store:
            return
        deadline = now() + timeout
        keys = [f"mpc/seen/{name}" for name in self.ranks]
        while now() < deadline:
            if self.store.check(keys) or self.store.check([_ABORT_KEY]):
                return
            threading.Event().wait(_STORE_POLL_SECONDS)


def _wait_for_keys(rdv: Rendezvous, keys: Mapping[str, str], timeout: float, what: str) -> None:
    """Wait until every key exists; on timeout name the parties that did not write theirs."""
    deadline = now() + timeout
    while True:
        missing = [name for name, key in keys.items() if not rdv.store.check([key])]
        if not missing:
            return
        reason = rdv.failure_reason()
        if reason is not None:
            raise PeerFailureError(f"{rdv.name!r} stopped before the run started: {reason}")
        if now() >= deadline:
            described = ", ".join(f"{name!r} (rank {rdv.ranks[name]})" for name in missing)
            raise PeerTimeoutError(
                f"{rdv.name!r} waited {timeout:g} s at the rendezvous, but {described} did not "
                f"{what}; check that every party was started with the same rendezvous address (master) and world size"
            )
        threading.Event().wait(_STORE_POLL_SECONDS)


def store_server(host: str, port: int, world_size: int, timeout: float) -> Any:
    """A TCPStore server listening on ``host:port`` only (``port`` 0: the kernel picks).

    TCPStore on its own binds every interface; handing it a socket bound to
    the ``master`` interface keeps the store off the others.
    """
    from protocols.transport.rendezvous import listen

    sock = listen(host, port)
    bound = sock.getsockname()[1]
    fd = sock.detach()  # the store owns the descriptor from now on
    return dist.TCPStore(
        host, bound, world_size, True, timedelta(seconds=timeout),
        wait_for_workers=False, master_listen_fd=fd, use_libuv=False,
    )  # fmt: skip


def connect(
    name: str,
    ranks: Mapping[str, int],
    master: str,
    *,
    connect_timeout: float = 60.0,
    timeout: float = 120.0,
    host_store: bool | None = None,
) -> Rendezvous:
    """Join the run: connect to (or host) the store, wait for every party, create the gloo group.

    Parameters
    ----------
    name : str
        This party's name; ``ranks[name]`` is its rank.
    ranks : mapping of str to int
        Every party's rank, ``0 .. W-1``.
    master : str
        ``ADDR:PORT`` of the store.
    connect_timeout : float
        Seconds to wait for the store and for every other party.
    timeout : float
        Default timeout of the gloo process group's collectives, in seconds.
    host_store : bool, optional
        Host the store here; defaults to ``True`` at rank 0. Pass ``False``
        when a launcher hosts it.

    Raises
    ------
    PeerTimeoutError
        If the store is unreachable or some party did not join in time.
    """
    table = check_ranks(ranks)
    if name not in table:
        raise InputValidationError(f"party {name!r} has no rank; ranks are {table}")
    rank = table[name]
    world = len(table)
    host, port = parse_master(master)
    hosting = rank == 0 if host_store is None else bool(host_store)
    try:
        if hosting:
            store = store_server(host, port, world, connect_timeout)
        else:
            store = dist.TCPStore(host, port, None, False, timedelta(seconds=connect_timeout))
    except (RuntimeError, OSError) as exc:
        role = "host" if hosting else "reach"
        raise PeerTimeoutError(
            f"{name!r} (rank {rank}) could not {role} the rendezvous store at {host}:{port} "
            f"within {connect_timeout:g} s: {_first_line(exc)}"
        ) from None
    rdv = Rendezvous(store, name, table, hosting)
    store.set(f"mpc/joined/{rank}", name)
    _wait_for_keys(rdv, {n: f"mpc/joined/{r}" for n, r in table.items()}, connect_timeout, "join")
    for other, r in table.items():
        announced = store.get(f"mpc/joined/{r}").decode("utf-8", "replace")
        if announced != other:
            raise InputValidationError(
                f"rank {r} joined as {announced!r} but {name!r} expects {other!r} there; "
                "every party must use the same role layout"
            )
    try:
        dist.init_process_group(
            "gloo",
            store=dist.PrefixStore("gloo", store),
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=max(timeout, connect_timeout)),
        )
    except (RuntimeError, OSError) as exc:
        raise PeerFailureError(f"{name!r} could not connect to its peers: {_first_line(exc)}") from None
    return rdv


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def loopback_interface() -> str | None:
    """Name of the loopback interface (``lo`` on Linux), for ``GLOO_SOCKET_IFNAME``."""
    for _, ifname in socket.if_nameindex():
        if ifname in ("lo", "lo0"):
            return ifname
    return None


__all__ = ["Rendezvous", "check_ranks", "connect", "loopback_interface", "parse_master", "store_server"]
