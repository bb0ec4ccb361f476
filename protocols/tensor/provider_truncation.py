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
``i`` folds in its bit with one :func:`~protocols.tensor.provider_products.private_product`
of the shared running XOR by its private bit (``M - 1`` steps, two message
rounds each). Every ``b_t`` is uniform as long as one provider's bit is, so
``r`` is uniform and unknown to any coalition short of all providers; the
messages are those of :func:`private_product` (ciphertexts and
statistically masked slots), which do not depend on any provider's bits.

Why not a cheaper route: the carries of ``sum_i r_i`` for locally drawn
``r_i`` (out of the low ``bits`` bits, out of bit 63 and out of bit 64) are
needed exactly, and computing them is a comparison of private values, which
costs about one bit decomposition too; dropping them would make ``truncate``
off by up to ``M - 1`` ulps and break its wrap detection. The bit route costs
``64 (M - 1)`` elementwise OLEs per element; see
:mod:`protocols.tensor.offline_cost` for what that means at d = 100.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError
from protocols.tensor.provider_products import ProviderGroup, fresh_ring, private_product

_U = np.uint64
_BITS = 64


def shared_random_bits(group: ProviderGroup, shape: tuple[int, ...]) -> NDArray[np.uint64]:
    """This provider's arithmetic shares (mod ``2^64``) of uniform bits, shape ``shape``.

    Each bit is the XOR of one private bit per provider (drawn from a
    :mod:`secrets`-keyed stream), folded in provider by provider.
    """
    mine = fresh_ring(tuple(shape)) & _U(1)
    first = group.providers[0]
    acc = mine.copy() if group.me == first else np.zeros(shape, dtype=_U)
    for owner in group.providers[1:]:
        product = private_product(group, owner, acc, mine if group.me == owner else None)
        if group.me == owner:
            acc += mine
        acc -= _U(2) * product
    return acc


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
    if not 1 <= bits < _BITS:
        raise InputValidationError(f"a truncation pair drops between 1 and 63 bits, got {bits}")
    shape = tuple(shape)
    b = shared_random_bits(group, (*shape, _BITS))
    weights = np.array([1 << t for t in range(_BITS)], dtype=_U)
    shifted_weights = np.array([(1 << (t - bits)) if t >= bits else 0 for t in range(_BITS)], dtype=_U)
    r = (b * weights).sum(axis=-1, dtype=_U)
    r_shifted = (b * shifted_weights).sum(axis=-1, dtype=_U)
    msb_term = b[..., _BITS - 1] << _U(_BITS - bits)
    return r, r_shifted, msb_term
