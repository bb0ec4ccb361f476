"""PPPCA's one masked input in dropout mode: ``[s_i, n_i, G_i]`` in two fixed-point limbs.

With ``dropout_threshold`` (:mod:`protocols.backends.dropout`) a provider
must be left out of the model whenever it disappears before its last masked
contribution. Two sums (the paper's step 1, ``[s_i, n_i]``, then the
centred Gram matrix) cannot do that: a provider counted in the first and
dropped in the second would leave the server both totals with and without
it, so its column sums and row count by subtraction. Here every provider's
data goes into **one** dropout-tolerant sum (Liu et al., AAAI 2020, Alg. 2
steps 1 and 5-7 merged): its column sums ``s_i``, its row count ``n_i`` and its
Gram matrix about the origin ``G_i = Y_i^T Y_i`` (upper triangle) of the
column-scaled rows ``Y`` (:mod:`mpc_pca.pppca.scaling`, ``|y| < 1``). The
server centres: ``G - s s^T / N``.

The mean is not known when the provider encodes, so the Gram matrix cannot be
centred first (the two-round protocol's ``2^B`` needs ``N``). To keep the
resolution, each value ``v`` is sent as two ring elements: ``hi = floor(v
2^S1)``, an integer (exact), and ``lo = (v 2^S1 - hi) 2^S2`` in ``[0, 2^S2)``,
with ``S1 = 62 - f - ceil(log2 M) - ROW_BITS`` (``|v| < n_i <= 2^ROW_BITS``)
and ``S2 = 62 - f - ceil(log2 M)``: the sum is rebuilt as ``hi / 2^S1 + lo /
2^(S1 + S2)`` to ``M 2^-(f + 1 + S1 + S2)`` (below float64's own rounding).
What remains is the server's float64 subtraction ``G - s s^T / N``: an error
of at most about ``2^-51 G_jj^(1/2) G_kk^(1/2)`` per entry, i.e. for a column
whose mean is ``r`` times its standard deviation a relative error of about
``2^-51 (1 + r^2)`` in its variance (:func:`centring_error`). The payload is
twice ``d + 1 + d (d + 1) / 2`` ring elements.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.local_stats import LocalStatistics, add_rank_one
from mpc_pca.pppca.scaling import RING_BITS, ROW_BITS
from protocols.triangle import triangle_diagonal

#: Largest integer float64 holds exactly is ``2^53``: ``hi`` stays below it.
_EXACT_BITS = 53


def limb_exponents(n_parties: int, frac_bits: int) -> tuple[int, int]:
    """``(S1, S2)`` of the two limbs for ``M`` providers and ``f`` fractional bits (module notes)."""
    headroom = RING_BITS - frac_bits - max(0, math.ceil(math.log2(n_parties)))
    return min(headroom - ROW_BITS, _EXACT_BITS - ROW_BITS), headroom


def payload(stats: LocalStatistics, n_parties: int, frac_bits: int) -> NDArray[np.float64]:
    """This provider's masked input before encoding: ``[hi, lo]`` of ``[s_i, n_i, triu(G_i)]``."""
    gram = add_rank_one(stats.scatter_triangle.copy(), stats.local_mean, float(stats.n_rows))
    values = np.concatenate([stats.sums_and_count(), gram])
    del gram
    s1, s2 = limb_exponents(n_parties, frac_bits)
    scaled = np.ldexp(values, s1)
    hi = np.floor(scaled)
    lo = np.ldexp(scaled - hi, s2)
    return np.concatenate([hi, lo])


def opened(
    total: NDArray[np.float64], n_features: int, n_parties: int, frac_bits: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """From the decoded sum of the payloads: ``[s, N]``, the centred Gram triangle, and ``G``'s diagonal.

    Raises
    ------
    ValueError
        If ``total`` does not have the payload's length (the caller names the sender).
    """
    d = n_features
    length = d + 1 + d * (d + 1) // 2
    if total.shape != (2 * length,):
        raise ValueError(f"the dropout-mode sum has shape {total.shape}, expected ({2 * length},) for d={d}")
    s1, s2 = limb_exponents(n_parties, frac_bits)
    values = np.ldexp(total[:length], -s1) + np.ldexp(total[length:], -(s1 + s2))
    stats, gram = values[: d + 1], values[d + 1 :]
    diagonal = triangle_diagonal(gram, d).copy()
    n = float(np.round(stats[-1]))
    if n >= 1:
        add_rank_one(gram, stats[:d], -1.0 / n)
    return stats, gram, diagonal


def centring_error(
    diagonal: NDArray[np.float64], exponents: tuple[int, ...], n_parties: int, frac_bits: int
) -> NDArray[np.float64]:
    """``u`` with ``|error of the centred G_jk| <= u_j u_k`` in the data's units (module notes).

    The float64 subtraction ``G - s s^T / N`` rounds each term at most twice;
    both are at most ``sqrt(G_jj G_kk)`` (Cauchy-Schwarz), so that error is at
    most ``2^-51 sqrt(G_jj G_kk)`` (``G`` in the scaled units); the limbs' ring
    rounding adds at most ``c = M 2^-(f + 1 + S1 + S2)``, and
    ``sqrt(a_j + c) sqrt(a_k + c) >= sqrt(a_j a_k) + c``. Times ``2^(E_j + E_k)``.
    """
    s1, s2 = limb_exponents(n_parties, frac_bits)
    ring = n_parties * 2.0 ** -(frac_bits + 1 + s1 + s2)
    base = np.sqrt(np.ldexp(np.maximum(diagonal, 0.0), -51) + ring)
    return base * np.ldexp(1.0, np.asarray(exponents, dtype=np.int64))
