"""Base OTs between every pair of providers, both directions, in two rounds.

The protocol is Chou and Orlandi's "simplest OT" (LATINCRYPT 2015, Fig. 1),
run semi-honestly in the order-``q`` subgroup of :mod:`protocols.ot.group`:

1. the OT sender draws ``a`` and sends ``A = g^a``;
2. for OT ``i`` with choice ``c_i`` the receiver draws ``b_i`` and sends
   ``B_i = g^(b_i)`` if ``c_i = 0``, ``A g^(b_i)`` if ``c_i = 1``; its key is
   ``H(i, A, B_i, A^(b_i))``;
3. the sender's two keys are ``H(i, A, B_i, B_i^a)`` and
   ``H(i, A, B_i, (B_i / A)^a)``, the latter computed as ``B_i^a / A^a``
   (one exponentiation per OT, ``A^a`` once).

``B_i`` is a uniform group element whatever ``c_i`` is, so the sender learns
nothing of the choices; the receiver lacks ``(B_i / A)^a`` for the other key
(computational Diffie-Hellman, ``H`` a random oracle: SHA-256 with a domain
label, cut to 16 bytes, the AES-128 seeds of :mod:`protocols.ot.extension`).

In IKNP the extension's receiver is the base OTs' sender and vice versa, so
:func:`base_ots` runs both directions with every peer at once: round 1 sends
this provider's ``A`` to every peer, round 2 its ``B_i`` (choices: its secret
``Delta`` toward that peer). Every received element is checked
(:func:`protocols.ot.group.element_from_bytes`) before use.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

import gmpy2
import numpy as np
from gmpy2 import mpz
from numpy.typing import NDArray

from protocols.errors import ProtocolError
from protocols.ot.group import G, P, element_from_bytes, element_to_bytes, power, random_exponent
from protocols.party import Party

#: Base OTs per ordered pair: the IKNP security parameter (columns of the extension matrix).
BASE_OTS = 128
#: Bytes of every base-OT key (an AES-128 key).
KEY_BYTES = 16


@dataclass(frozen=True)
class OfferedKeys:
    """The two keys of each base OT this provider offered to ``peer`` (IKNP's seed pairs)."""

    peer: str
    keys0: tuple[bytes, ...]
    keys1: tuple[bytes, ...]


@dataclass(frozen=True)
class ChosenKeys:
    """The key this provider chose in each base OT from ``peer``, and its secret choice bits."""

    peer: str
    choices: NDArray[np.uint8]
    keys: tuple[bytes, ...]


def _key(index: int, a: mpz, b: mpz, point: mpz) -> bytes:
    digest = hashlib.sha256(b"mpc-pca base-ot v1")
    for part in (index.to_bytes(4, "big"), element_to_bytes(a), element_to_bytes(b), element_to_bytes(point)):
        digest.update(part)
    return digest.digest()[:KEY_BYTES]


def _choose(a_peer: mpz, choices: NDArray[np.uint8]) -> tuple[list[bytes], tuple[bytes, ...]]:
    """Round 2 as the receiver: the ``B_i`` to send and the chosen keys."""
    sent, keys = [], []
    for i, choice in enumerate(choices):
        b = random_exponent()
        big_b = power(G, b)
        if choice:
            big_b = big_b * a_peer % P
        sent.append(element_to_bytes(big_b))
        keys.append(_key(i, a_peer, big_b, power(a_peer, b)))
    return sent, tuple(keys)


def _offer(
    a: mpz, big_a: mpz, received: object, *, sender: str
) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """Round 2 as the sender: both keys of every OT from the receiver's ``B_i``."""
    if not isinstance(received, list) or len(received) != BASE_OTS:
        got = f"{len(received)} answers" if isinstance(received, list) else f"a {type(received).__name__}"
        raise ProtocolError(f"{sender!r} sent {got} for its base OTs, expected {BASE_OTS} group elements")
    divisor = gmpy2.invert(power(big_a, a), P)
    keys0, keys1 = [], []
    for i, raw in enumerate(received):
        big_b = element_from_bytes(raw, sender=sender)
        shared = power(big_b, a)
        keys0.append(_key(i, big_a, big_b, shared))
        keys1.append(_key(i, big_a, big_b, shared * divisor % P))
    return tuple(keys0), tuple(keys1)


def base_ots(party: Party, peers: Sequence[str]) -> tuple[dict[str, OfferedKeys], dict[str, ChosenKeys]]:
    """Run :data:`BASE_OTS` base OTs with every peer in both directions (two rounds).

    Parameters
    ----------
    party : Party
    peers : sequence of str
        The other providers; each runs this call with ``party.name`` among its peers.

    Returns
    -------
    offered : dict of str to OfferedKeys
        Per peer, the key pairs this provider offered (it will be the
        extension's receiver toward that peer).
    chosen : dict of str to ChosenKeys
        Per peer, the keys this provider chose with its secret choice bits
        (it will be the extension's sender toward that peer, ``Delta`` being
        those bits).
    """
    exponents = {peer: random_exponent() for peer in peers}
    mine = {peer: power(G, exponents[peer]) for peer in peers}
    for peer in peers:
        party.send(peer, element_to_bytes(mine[peer]))
    theirs = {peer: element_from_bytes(party.recv(peer), sender=peer) for peer in peers}
    chosen: dict[str, ChosenKeys] = {}
    for peer in peers:
        choices = np.unpackbits(np.frombuffer(secrets.token_bytes(BASE_OTS // 8), dtype=np.uint8))
        sent, keys = _choose(theirs[peer], choices)
        party.send(peer, sent)
        chosen[peer] = ChosenKeys(peer, choices, keys)
    offered: dict[str, OfferedKeys] = {}
    for peer in peers:
        keys0, keys1 = _offer(exponents[peer], mine[peer], party.recv(peer), sender=peer)
        offered[peer] = OfferedKeys(peer, keys0, keys1)
    return offered, chosen
