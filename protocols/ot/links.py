"""Every provider's OT-extension links to every other provider, and Gilboa's bit product on them.

:func:`setup_links` runs the base OTs (:mod:`protocols.ot.base`) with every
peer once; afterwards each provider holds, per peer, an
:class:`~protocols.ot.extension.ExtensionSender` and an
:class:`~protocols.ot.extension.ExtensionReceiver`, and any number of
correlated OTs runs on them without public-key operations.

:func:`shared_times_private_bits` is the one product the offline phase needs
from OT: shares of ``X * beta`` for a ring tensor ``X`` additively shared
among the providers and bits ``beta`` known to one provider (the owner).
The owner's own term is local; every other provider's share ``x_j`` meets
``beta`` in one batch of correlated OTs with ``j`` as sender (Gilboa's
multiplication with a one-bit multiplier), so each element costs ``M - 1``
OTs and the product two message rounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError
from protocols.ot.base import base_ots
from protocols.ot.extension import ExtensionReceiver, ExtensionSender
from protocols.party import Party

_U = np.uint64


@dataclass
class OtLinks:
    """This provider's two link ends toward every other provider."""

    senders: dict[str, ExtensionSender]
    receivers: dict[str, ExtensionReceiver]


def setup_links(party: Party, peers: Sequence[str]) -> OtLinks:
    """Run the base OTs with every peer, both directions (two rounds); return the links."""
    offered, chosen = base_ots(party, list(peers))
    return OtLinks(
        senders={peer: ExtensionSender.from_base(chosen[peer]) for peer in peers},
        receivers={peer: ExtensionReceiver.from_base(offered[peer]) for peer in peers},
    )


def shared_times_private_bits(
    party: Party,
    links: OtLinks,
    providers: Sequence[str],
    owner: str,
    share: NDArray[np.uint64],
    bits: NDArray[np.uint8] | None,
) -> NDArray[np.uint64]:
    """This provider's share of ``X * beta`` (elementwise, mod ``2^64``); two rounds.

    Parameters
    ----------
    party : Party
    links : OtLinks
        From :func:`setup_links` among ``providers``.
    providers : sequence of str
        Every provider holding a share of ``X``.
    owner : str
        The provider that knows ``beta``.
    share : ndarray of uint64
        This provider's share of ``X``.
    bits : ndarray of uint8 or None
        ``beta`` (0 or 1, shape of ``share``) at the owner; ignored elsewhere.
    """
    if owner not in providers:
        raise InputValidationError(f"{owner!r} is not a provider")
    share = np.asarray(share, dtype=_U)
    if party.name != owner:
        return links.senders[owner].send_correlated(party, share)
    if bits is None or np.shape(bits) != share.shape:
        got = None if bits is None else np.shape(bits)
        raise InputValidationError(
            f"the owner's bits must have the shape of its share {share.shape}, got {got}"
        )
    others = [p for p in providers if p != owner]
    pending = {peer: links.receivers[peer].start(party, bits) for peer in others}
    out = share * np.asarray(bits, dtype=_U)
    for peer in others:
        out += links.receivers[peer].finish(party, pending[peer])
    return out
