"""n-out-of-n additive secret sharing over Z_{2^64}.

A secret ``s`` is split into ``n`` shares ``r_1, ..., r_{n-1}`` drawn from a
PRG and ``r_n = s - sum(r_i) mod 2^64`` (Liu et al., AAAI 2020, §"Secret
sharing"). Any ``n - 1`` shares are jointly pseudo-random and independent of
``s``; all ``n`` reconstruct it by summation. Since ``r_i`` is the ChaCha20
expansion of a 256-bit seed, a dealer hands out the seed instead of the array.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError
from protocols.prg import KEY_BYTES, RingPRG


def expand_share(seed: bytes, shape: tuple[int, ...]) -> NDArray[np.uint64]:
    """The share a 32-byte seed stands for: ChaCha20 output read as ring elements."""
    if not isinstance(seed, bytes) or len(seed) != KEY_BYTES:
        raise InputValidationError(f"a share seed must be {KEY_BYTES} bytes")
    return RingPRG(seed).ring_elements(shape)


def split_seeded(
    secret: NDArray[np.uint64], n_shares: int, *, overwrite: bool = False
) -> tuple[NDArray[np.uint64], list[bytes]]:
    """Split into ``n_shares`` additive shares, all but one given as PRG seeds.

    The ``n_shares - 1`` shares ``r_i = PRG(seed_i)`` are pseudo-random (the
    paper's PRG shares) and travel as their 32-byte seeds from :mod:`secrets`;
    the kept share is ``secret - sum(r_i) mod 2^64``. With ``overwrite=True``
    it is computed in ``secret``'s own (C-contiguous) buffer.

    Returns
    -------
    kept : ndarray of uint64
        The share the dealer keeps.
    seeds : list of bytes
        One seed per other share; :func:`expand_share` turns a seed into its share.
    """
    secret = np.asarray(secret)
    if secret.dtype != np.uint64:
        raise InputValidationError(f"secret must have dtype uint64, got {secret.dtype}")
    if n_shares < 1:
        raise InputValidationError(f"n_shares must be at least 1, got {n_shares}")
    seeds = [secrets.token_bytes(KEY_BYTES) for _ in range(n_shares - 1)]
    if overwrite and secret.flags.c_contiguous and secret.flags.writeable:
        kept = secret
    else:
        kept = np.array(secret, copy=True, order="C")
    for seed in seeds:
        RingPRG(seed).accumulate(kept, subtract=True)  # kept -= expand_share(seed), chunk by chunk
    return kept, seeds


def split(secret: NDArray[np.uint64], n_shares: int) -> list[NDArray[np.uint64]]:
    """Split ring elements into ``n_shares`` additive shares (expanded form of :func:`split_seeded`).

    Returns
    -------
    list of ndarray of uint64
        ``n_shares`` arrays whose sum modulo 2^64 equals ``secret``; the last is
        the dealer's kept share.
    """
    kept, seeds = split_seeded(secret, n_shares)
    return [*(expand_share(seed, kept.shape) for seed in seeds), kept]


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
