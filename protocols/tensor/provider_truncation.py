"""Truncation pairs made by the providers, without a dealer.

:func:`protocols.tensor.ops.truncate` consumes shares of a uniform ``r`` in
``Z_2^64``, of ``r >> bits`` and of ``msb(r) 2^(64-bits)``. Here ``r`` is
built from 64 shared random bits ``b_0 .. b_63``:

    ``r = sum_t 2^t b_t``,  ``r >> bits = sum_(t >= bits) 2^(t-bits) b_t``,
    ``msb(r) 2^(64-bits) = 2^(64-bits) b_63``,

all linear in the bits, so each provider gets its three shares from its
shares of the bits with no further message. Bit ``b_t`` is the XOR of one
private random bit per provider, ``b_t = beta_(0,t) xor ... xor beta_(M-1,t)``,
computed on arithmetic shares with ``x xor y = x + y - 2 x y``: starting from
provider 0's bit (shared as itself at provider 0 and zero elsewhere), provider
``i`` folds in its bit with one
:func:`~protocols.ot.links.shared_times_private_bits` of the shared running
XOR by its private bit (``M - 1`` steps, two message rounds each). In that
product every other provider's share meets the owner's bit in one correlated
OT (Gilboa's multiplication on IKNP OT extension, :mod:`protocols.ot`), so a
bit costs ``(M - 1)^2`` OTs in all. Every ``b_t`` is uniform as long as one
provider's bit is, so ``r`` is uniform and unknown to any coalition short of
all providers; the messages are the OT extension's (``u`` masks the owner's
bits with keys the sender lacks, ``tau`` masks the sender's share with hashes
the owner cannot compute), which do not depend on any provider's bits.

Why not a cheaper route: the carries of ``sum_i r_i`` for locally drawn
``r_i`` (out of the low ``bits`` bits, out of bit 63 and out of bit 64) are
needed exactly, and computing them is a comparison of private values, which
costs about one bit decomposition too; dropping them would make ``truncate``
off by up to ``M - 1`` ulps and break its wrap detection.

Why OT and not the Paillier OLE of the triples: one OLE per bit costs a
Paillier encryption (about 7 ms), an OT about a microsecond; at d = 100,
k = 5, M = 3 the plan's pairs need 7.1e6 shared bits, a day by OLE and
seconds by OT (:mod:`protocols.tensor.offline_cost` has the measurement).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError
from protocols.ot.links import shared_times_private_bits
from protocols.tensor.provider_products import ProviderGroup, fresh_ring

_U = np.uint64
#: Bits of a ring word, and so shared random bits per truncation-pair element.
RING_BITS = 64


def shared_random_bits(group: ProviderGroup, shape: tuple[int, ...]) -> NDArray[np.uint64]:
    """This provider's arithmetic shares (mod ``2^64``) of uniform bits, shape ``shape``.

    Each bit is the XOR of one private bit per provider (drawn from a
    :mod:`secrets`-keyed stream), folded in provider by provider with OT
    products on the group's links (set up on first use).
    """
    mine = fresh_ring(tuple(shape)) & _U(1)
    links = group.ot_links()
    first = group.providers[0]
    acc = mine.copy() if group.me == first else np.zeros(shape, dtype=_U)
    bits = mine.astype(np.uint8)
    for owner in group.providers[1:]:
        mine_if_owner = bits if group.me == owner else None
        product = shared_times_private_bits(group.party, links, group.providers, owner, acc, mine_if_owner)
        if group.me == owner:
            acc += mine
        acc -= _U(2) * product
    return acc


def pair_from_bits(
    shared_bits: NDArray[np.uint64], bits: int
) -> tuple[NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64]]:
    """Shares of ``r``, ``r >> bits`` and ``msb(r) 2^(64-bits)`` from shares of ``r``'s 64 bits (last axis).

    Linear in the bits, so no message: ``r = sum_t 2^t b_t``,
    ``r >> bits = sum_(t >= bits) 2^(t-bits) b_t``, ``msb(r) 2^(64-bits) = 2^(64-bits) b_63``.
    """
    if not 1 <= bits < RING_BITS:
        raise InputValidationError(f"a truncation pair drops between 1 and 63 bits, got {bits}")
    if shared_bits.shape[-1:] != (RING_BITS,):
        raise InputValidationError(f"need {RING_BITS} shared bits per element, got shape {shared_bits.shape}")
    weights = np.array([1 << t for t in range(RING_BITS)], dtype=_U)
    shifted_weights = np.array([(1 << (t - bits)) if t >= bits else 0 for t in range(RING_BITS)], dtype=_U)
    r = (shared_bits * weights).sum(axis=-1, dtype=_U)
    r_shifted = (shared_bits * shifted_weights).sum(axis=-1, dtype=_U)
    msb_term = shared_bits[..., RING_BITS - 1] << _U(RING_BITS - bits)
    return r, r_shifted, msb_term


def provider_truncation_pair(
    group: ProviderGroup, shape: tuple[int, ...], bits: int
) -> tuple[NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64]]:
    """This provider's shares of ``r``, ``r >> bits`` and ``msb(r) 2^(64-bits)`` for uniform ``r``.

    Parameters
    ----------
    group : ProviderGroup
    shape : tuple of int
        Shape of the tensor to truncate.
    bits : int
        Bits ``truncate`` will drop, ``1 <= bits <= 63``.
    """
    if not 1 <= bits < RING_BITS:
        raise InputValidationError(f"a truncation pair drops between 1 and 63 bits, got {bits}")
    return pair_from_bits(shared_random_bits(group, (*tuple(shape), RING_BITS)), bits)
