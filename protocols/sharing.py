"""n-out-of-n additive secret sharing over Z_{2^64}.

A secret ``s`` is split into ``n`` shares ``r_1, ..., r_{n-1}`` uniform and
``r_n = s - sum(r_i) mod 2^64`` (Liu et al., AAAI 2020, §"Secret sharing").
Any ``n - 1`` shares are jointly uniform and independent of ``s``; all ``n``
reconstruct it by summation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError
from protocols.prg import RingPRG


def split(secret: NDArray[np.uint64], n_shares: int, prg: RingPRG | None = None) -> list[NDArray[np.uint64]]:
    """Split ring elements into ``n_shares`` additive shares.

    Parameters
    ----------
    secret : ndarray of uint64
        Encoded secret (see :class:`protocols.encoding.FixedPointCodec`).
    n_shares : int
        Number of shares, at least 1.
    prg : RingPRG, optional
        Source of the random shares; a freshly keyed one by default.

    Returns
    -------
    list of ndarray of uint64
        ``n_shares`` arrays whose sum modulo 2^64 equals ``secret``.
    """
    secret = np.asarray(secret)
    if secret.dtype != np.uint64:
        raise InputValidationError(f"secret must have dtype uint64, got {secret.dtype}")
    if n_shares < 1:
        raise InputValidationError(f"n_shares must be at least 1, got {n_shares}")
    prg = RingPRG() if prg is None else prg
    shares = [prg.ring_elements(secret.shape) for _ in range(n_shares - 1)]
    last = secret.copy()
    for share in shares:
        last -= share
    shares.append(last)
    return shares


def reconstruct(shares: Sequence[NDArray[np.uint64]]) -> NDArray[np.uint64]:
    """Sum shares modulo 2^64."""
    if len(shares) == 0:
        raise InputValidationError("reconstruct needs at least one share")
    total = np.array(shares[0], dtype=np.uint64, copy=True)
    for share in shares[1:]:
        if share.shape != total.shape:
            raise InputValidationError(f"share shapes differ: {share.shape} vs {total.shape}")
        total += share
    return total
