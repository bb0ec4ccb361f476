"""The rendezvous at the relay: the run's layout is the operator's, never a registrant's (issue 35).

The relay (:mod:`protocols.transport.relay`) hosts the waiting room of one
run. Which parties make up that run (names and ranks: the *layout*) is fixed
when the relay starts, by its operator (the ``parties`` of ``mpc-pca
relay``). A registration is accepted only if its certificate names a party
of that layout at the rank it claims (the checks of
:class:`~protocols.transport.rendezvous.Introducer`) and the layout it sends
is the operator's. Any other registration is refused, naming the certified
party and both layouts; the refusal is kept for the error every registered
party gets if the run cannot start (the waiting room's summary), so the
honest parties learn who was refused. A registrant therefore cannot shrink,
grow or reorder the run, nor end the relay for the others: before issue 35
the first registration set the layout, and a certified party that
registered first with a one-party layout started (and ended) a run of its
own, leaving every honest party to find the relay gone.

This module moves bytes only; it never imports :mod:`protocols.runtime`.
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Mapping
from typing import Any

from protocols.errors import InputValidationError, ProtocolError
from protocols.transport.links import Stream
from protocols.transport.ranks import check_ranks
from protocols.transport.rendezvous import MAX_NAME_CHARS, Introducer, parse_address

log = logging.getLogger("mpc_pca.transport")

#: Most parties a relayed run may have (a layout is refused beyond).
MAX_PARTIES = 4096


def check_layout(layout: Mapping[str, int], relay_name: str) -> dict[str, int]:
    """The operator's layout, checked: ranks ``0 .. W-1``, 1 .. :data:`MAX_PARTIES` short names, no ``relay_name``.

    Raises
    ------
    InputValidationError
        Naming the offending value and the limit.
    """
    table = check_ranks(layout)
    if len(table) > MAX_PARTIES:
        raise InputValidationError(
            f"the relay's layout has {len(table)} parties; at most {MAX_PARTIES} are allowed"
        )
    for name in table:
        if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_CHARS:
            raise InputValidationError(
                f"the party name {str(name)[:40]!r} in the relay's layout is not a str of 1 .. {MAX_NAME_CHARS} characters"
            )
        if name == relay_name:
            raise InputValidationError(f"the relay's layout names {name!r}, the relay's own name, as a party")
    return table


def parse_relay_registration(who: str, msg: dict[str, Any]) -> tuple[str, int, dict[str, int]]:
    """``(name, rank, layout)`` of a registration at the relay; any other shape is a ProtocolError naming ``who``."""
    what = "registration"
    if not isinstance(msg, dict) or set(msg) != {"name", "rank", "layout"}:
        keys = sorted(msg)[:8] if isinstance(msg, dict) else type(msg).__name__
        raise ProtocolError(
            f"{who} sent a malformed {what}: its keys are {keys!r}, expected layout, name, rank"
        )
    name, rank, layout = msg["name"], msg["rank"], msg["layout"]
    if not isinstance(name, str) or len(name) > MAX_NAME_CHARS:
        raise ProtocolError(
            f"{who} sent a malformed {what}: the name is not a str of at most {MAX_NAME_CHARS}"
        )
    if not isinstance(layout, dict) or not 0 < len(layout) <= MAX_PARTIES:
        raise ProtocolError(
            f"{who} sent a malformed {what}: the layout is not a mapping of 1 .. {MAX_PARTIES} parties"
        )
    for key, value in layout.items():
        if not isinstance(key, str) or len(key) > MAX_NAME_CHARS:
            raise ProtocolError(
                f"{who} sent a malformed {what}: a party name in the layout is not a short str"
            )
        if not isinstance(value, int) or isinstance(value, bool):
            raise ProtocolError(f"{who} sent a malformed {what}: the rank of {key!r} is not an integer")
    try:
        table = check_ranks(layout)
    except InputValidationError as exc:
        raise ProtocolError(f"{who} sent a malformed {what}: {exc}") from None
    if table.get(name) != rank:
        raise ProtocolError(f"{who} sent a malformed {what}: {name!r} is not at rank {rank!r} in its layout")
    return name, rank, table


class RelayRendezvous(Introducer):
    """The rendezvous at the relay, for the operator's ``layout``; keeps the connections for forwarding.

    A registration must carry exactly ``layout`` (checked once its
    certificate has been checked, so the refusal names a certified party).
    Once every party has joined and got the table, :meth:`_hand_over` passes
    the connections to ``on_ready``.

    Parameters
    ----------
    address : str
        ``HOST:PORT`` to listen on.
    layout : mapping of str to int
        The run's parties and ranks, as the operator fixed them.
    context : ssl.SSLContext
        The relay's server context.
    timeout : float
        The join window (seconds).
    on_ready : callable
        ``on_ready(ranks, {name: stream})`` once every party got the table.
    """

    def __init__(
        self,
        address: str,
        layout: Mapping[str, int],
        context: ssl.SSLContext,
        timeout: float,
        on_ready: Any,
        **kwargs: Any,
    ):
        self._on_ready = on_ready
        self._relay_host = parse_address(address)[0]
        self._relay_port = 1
        self._sent = threading.local()  # the layout a connection's handler thread read, until it is certified
        super().__init__(address, layout, context, timeout, **kwargs)
        self._relay_port = self.port  # the "address" of every party: reached through the relay

    def _registration(self, who: str, msg: dict[str, Any]) -> tuple[str, int, str, int]:
        name, rank, layout = parse_relay_registration(who, msg)
        self._sent.layout = layout
        if layout != self.ranks:  # refused by _certified once the certificate is checked, naming both layouts
            rank = self.ranks.get(name, rank)
        return name, rank, self._relay_host, self._relay_port

    def _certified(self, who: str, name: str) -> None:
        layout = getattr(self._sent, "layout", None)
        self._sent.layout = None
        if layout != self.ranks:
            raise ProtocolError(
                f"{name!r} (certified; {who}) registered the layout {layout}, but the relay's operator fixed "
                f"the run's layout as {self.ranks}: refused"
            )

    def _reached(self, host: str, port: int) -> str:
        return "reached through the relay"

    def _hand_over(self, streams: dict[str, Stream]) -> None:
        if self.error is not None:
            super()._hand_over(streams)
            return
        self._on_ready(dict(self.ranks), streams)


__all__ = ["MAX_PARTIES", "RelayRendezvous", "check_layout", "parse_relay_registration"]
