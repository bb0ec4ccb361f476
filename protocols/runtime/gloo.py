"""Run one party over ``torch.distributed`` (gloo) after the TCPStore rendezvous.

Only runs of the ``crypten`` backend (``insecure=True``) go this way; the rendezvous, the
failure records and what they are believed for are in
:mod:`protocols.transport.torch_store`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch.distributed as dist

from protocols.identity import exchange_identity
from protocols.party import Party
from protocols.runtime.runner import PartyReport, make_report
from protocols.transport.base import now
from protocols.transport.torch_store import Rendezvous, connect

Role = Callable[[Party], Any]


def run_role(rdv: Rendezvous, role: Role, *, timeout: float) -> tuple[Any, PartyReport]:
    """Run ``role`` as this party over the process group joined by :func:`connect`.

    On failure the reason is recorded for the other parties and the exception
    re-raised; the caller should then end the process (which closes its links).
    """
    from protocols.transport.torch_channel import TorchChannel

    channel = TorchChannel(rdv.name, rdv.ranks, timeout, rendezvous=rdv)
    channel.identity = exchange_identity(
        rdv.name, channel.peers, channel._send_bytes, lambda peer: bytes(channel._recv_bytes(peer, timeout))
    )  # over the gloo links, unmetered; as unauthenticated as everything on this path
    party = Party(rdv.name, channel)
    start = now()
    try:
        output = role(party)
        channel.close()
    except BaseException as exc:
        channel.abort(f"party {rdv.name!r} failed: {type(exc).__name__}: {exc}")
        raise
    seconds = now() - start
    return output, make_report(party, seconds)


def shutdown(rdv: Rendezvous, *, timeout: float) -> None:
    """Leave the run after success: the confirmation round over the store, then release it.

    Returns only once every party confirmed that its role ended without
    error (:meth:`~protocols.transport.torch_store.Rendezvous.await_done`);
    otherwise it records the failure for the others and raises, so the caller
    writes nothing. The store host then waits for the others to see it.
    """
    rdv.mark_done()
    try:
        rdv.await_done(timeout)
    except BaseException as exc:
        rdv.record_failure(f"party {rdv.name!r} failed: {type(exc).__name__}: {exc}")
        raise
    rdv.linger(timeout)
    if dist.is_initialized():
        dist.destroy_process_group()


def run_torch_party(
    role: Role,
    name: str,
    ranks: Mapping[str, int],
    master: str,
    *,
    timeout: float = 120.0,
    connect_timeout: float = 60.0,
    host_store: bool | None = None,
) -> tuple[Any, PartyReport]:
    """Run one party of a protocol in this process, over torch.distributed (gloo).

    Parameters
    ----------
    role : callable
        The role function ``f(party) -> output``, the same one the in-process
        runtime runs.
    name : str
        This party's name.
    ranks : mapping of str to int
        Every party's rank ``0 .. W-1``; all parties must pass the same map.
    master : str
        ``ADDR:PORT`` of the rendezvous store (hosted by rank 0 by default).
    timeout : float
        Seconds any single receive (or a send's delivery) may take.
    connect_timeout : float
        Seconds to wait for every other party at the rendezvous.
    host_store : bool, optional
        See :func:`connect`.

    Returns
    -------
    output : object
        What the role returned.
    report : PartyReport
        Bytes, messages and rounds this party sent/received, and its wall time.

    Raises
    ------
    ProtocolError
        :class:`PeerTimeoutError` if a peer never joined or went silent,
        :class:`PeerFailureError` if a peer failed (the message quotes the
        first failure recorded), or the role's own error. After an error the
        process should exit so its peers see its links close.
    """
    rdv = connect(
        name, ranks, master, connect_timeout=connect_timeout, timeout=timeout, host_store=host_store
    )
    output, report = run_role(rdv, role, timeout=timeout)
    shutdown(rdv, timeout=timeout)
    return output, report


__all__ = ["run_role", "run_torch_party", "shutdown"]
