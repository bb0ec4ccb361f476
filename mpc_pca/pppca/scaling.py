"""Per-column power-of-two fixed-point scaling for PPPCA, agreed by every party.

The secure sums run in the ring Z_{2^64} with ``f`` fractional bits: an
absolute resolution of ``2^-f``. Data whose values are ~1e-8 would lose the
covariance to rounding, data whose values are ~1e8 would overflow the ring.
Liu et al. (AAAI 2020, Alg. 1 step 2 / Alg. 2 step 1) leave the encoding
open; here it is chosen so that the ring is used fully whatever the scale:

1. **Column exponents** (public, agreed before any data is sent). Each
   provider publishes, per column ``j``, the binary exponent ``e_ij`` of its
   largest magnitude (``max |x| < 2^e_ij``); every party takes
   ``E_j = max_i e_ij``. A provider whose column is all zeros publishes
   :data:`ZERO_COLUMN`, which bounds nothing (a one-row provider with a
   zero must not coarsen everyone's encoding of a small-valued column); a
   column that is zero at every provider gets ``E_j = 0``. Providers then
   work with ``Y = X diag(2^-E)``,
   whose entries lie in ``(-1, 1)``. Multiplying by a power of two is exact
   in float64, so nothing is lost.
2. **First round** (Alg. 2 steps 1-3): ``[sum Y, n_i]`` is multiplied by
   ``2^A`` with ``A = 62 - f - ceil(log2 M) - ROW_BITS``: M providers of at
   most ``2^ROW_BITS`` rows each cannot leave the ring.
3. **Second round** (steps 5-7): the centred Gram matrix of ``Y`` is
   multiplied by ``2^B`` with ``B = 62 - f - ceil(log2 M) - ceil(log2 N) - 2``
   (the server sends ``B`` with the mean; ``N`` is public after step 3):
   ``|y - mean| < 2``, so each provider's diagonal is below ``4 n_i <= 4 N``
   and, by Cauchy-Schwarz, so is every other entry.

The server undoes both scalings exactly (powers of two) and works in the
data's own units. What the parties learn in addition to the paper's
protocol: each provider's per-column binary order of magnitude ``e_ij``
(one small integer per column, published in the settings agreement) and,
for the providers, ``ceil(log2 N)`` through ``B``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.local_stats import LocalStatistics, column_peaks
from protocols.errors import InputValidationError
from protocols.triangle import row_groups, row_offsets

#: Each provider may hold at most ``2^ROW_BITS`` rows (first-round headroom).
ROW_BITS = 32
#: Bits of the signed 64-bit ring kept as headroom against rounding (63 - 1).
RING_BITS = 62
#: Published for a column that is all zeros at a provider: below every float64
#: exponent (``frexp`` gives -1073 at the smallest subnormal), so it never wins the maximum.
ZERO_COLUMN = -1100
#: ``frexp`` exponent of the largest finite float64 (``max |x| < 2^1024``).
MAX_EXPONENT = 1024
#: ``frexp`` exponent of the smallest positive subnormal float64.
MIN_EXPONENT = -1073


def column_exponents(data: NDArray[np.float64]) -> NDArray[np.int64]:
    """Agreed exponents of pooled rows: ``max |x_j| < 2^e_j``, and 0 for a column of zeros.

    Equal to :func:`agree_exponents` over any row split of ``data`` into
    providers' :func:`provider_exponents`. Non-finite data must be rejected before.

    Examples
    --------
    >>> column_exponents(np.array([[0.75, -3.0, 0.0], [0.1, 1.0, 0.0]])).tolist()
    [0, 2, 0]
    """
    return np.asarray(agree_exponents([provider_exponents(data).tolist()]), dtype=np.int64)


def provider_exponents(data: NDArray[np.float64]) -> NDArray[np.int64]:
    """What a provider publishes for its rows: :func:`exponents_of_peaks` of ``max |x_j|``.

    The peaks are read in blocks (:func:`~mpc_pca.pppca.local_stats.column_peaks`, no
    ``n x d`` temporary); a provider that has its :class:`LocalStatistics` already
    uses their ``column_peaks`` instead (:func:`statistics_exponents`).

    Examples
    --------
    >>> provider_exponents(np.array([[0.75, -3.0, 0.0]])).tolist()
    [0, 2, -1100]
    """
    return exponents_of_peaks(column_peaks(data))


def statistics_exponents(stats: LocalStatistics) -> NDArray[np.int64]:
    """What a provider publishes, from the peaks its statistics pass read (no further pass).

    Raises
    ------
    InputValidationError
        If ``stats`` carries no peaks (statistics built without :meth:`LocalStatistics.of`).
    """
    if stats.column_peaks is None:
        raise InputValidationError(
            "these statistics carry no column peaks; compute them with LocalStatistics.of"
        )
    return exponents_of_peaks(stats.column_peaks)


def exponents_of_peaks(peaks: NDArray[np.float64]) -> NDArray[np.int64]:
    """``e_j`` with ``peaks_j < 2^e_j``, and :data:`ZERO_COLUMN` for a zero peak."""
    peaks = np.asarray(peaks, dtype=np.float64)
    exponents = np.frexp(peaks)[1].astype(np.int64)
    return np.where(peaks == 0.0, np.int64(ZERO_COLUMN), exponents)


def agree_exponents(per_provider: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The agreed column exponents: the elementwise maximum over providers.

    :data:`ZERO_COLUMN` (a provider's all-zero column) bounds nothing; a
    column that every provider published as :data:`ZERO_COLUMN` gets 0.

    Raises
    ------
    InputValidationError
        If the providers published exponent lists of different lengths, or
        values that are not integers in ``{ZERO_COLUMN} U [-1073, 1024]``.
    """
    lengths = {f"provider{i}": len(e) for i, e in enumerate(per_provider)}
    if len(set(lengths.values())) != 1:
        raise InputValidationError(
            f"the providers published column exponents of different lengths: {lengths}"
        )
    for i, exps in enumerate(per_provider):
        if not all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in exps):
            raise InputValidationError(f"provider{i} published non-integer column exponents {list(exps)!r}")
        bad = [int(e) for e in exps if int(e) != ZERO_COLUMN and not MIN_EXPONENT <= int(e) <= MAX_EXPONENT]
        if bad:
            raise InputValidationError(
                f"provider{i} published column exponents {bad} outside [{MIN_EXPONENT}, {MAX_EXPONENT}] "
                f"(or {ZERO_COLUMN} for a zero column)"
            )
    agreed = np.max(np.asarray(per_provider, dtype=np.int64), axis=0)
    return tuple(0 if v == ZERO_COLUMN else int(v) for v in agreed)


def _bits(value: int) -> int:
    """``ceil(log2(value))`` for a positive integer."""
    return max(0, math.ceil(math.log2(value)))


def sums_scale_exponent(n_parties: int, frac_bits: int) -> int:
    """``A``: the first payload ``[sum Y, n_i]`` is multiplied by ``2^A``."""
    return RING_BITS - frac_bits - _bits(n_parties) - ROW_BITS


def gram_scale_exponent(n_parties: int, frac_bits: int, n_samples: int) -> int:
    """``B``: the centred Gram matrix of ``Y`` is multiplied by ``2^B``."""
    return RING_BITS - frac_bits - _bits(n_parties) - _bits(n_samples) - 2


def normalized(stats: LocalStatistics, exponents: Sequence[int]) -> LocalStatistics:
    """The statistics of ``Y = X diag(2^-E)`` from those of ``X`` (exact: powers of two).

    The packed scatter triangle is scaled a group of rows at a time
    (:func:`protocols.triangle.row_groups`: entry ``(i, j)`` times
    ``2^-E_i 2^-E_j``, no ``d x d`` temporary).
    """
    exps = np.asarray(exponents, dtype=np.int64)
    if not np.any(exps):
        return stats
    factor = np.ldexp(1.0, -exps)
    scatter = stats.scatter_triangle.copy()
    offsets = row_offsets(factor.shape[0])
    for start, stop, mask in row_groups(factor.shape[0]):
        segment = scatter[offsets[start] : offsets[stop]]
        segment *= np.multiply.outer(factor[start:stop], factor)[mask]
    peaks = None if stats.column_peaks is None else stats.column_peaks * factor
    return LocalStatistics(stats.n_rows, stats.column_sums * factor, scatter, peaks)


def unscale_gram(gram: NDArray[np.float64], exponents: Sequence[int]) -> NDArray[np.float64]:
    """``diag(2^E) G_Y diag(2^E)``: the Gram matrix back in the data's own units."""
    factor = np.ldexp(1.0, np.asarray(exponents, dtype=np.int64))
    return gram * np.outer(factor, factor)


def unscale_vector(values: NDArray[np.float64], exponents: Sequence[int]) -> NDArray[np.float64]:
    """``v * 2^E`` entrywise (the mean back in the data's units)."""
    return np.ldexp(values, np.asarray(exponents, dtype=np.int64))
