"""The fixed-point scaling of ``pppca-randomized``'s secure sums, and its error bound.

The secure sums run in ``Z_2^64`` with the backend codec's ``f`` fractional
bits (:mod:`protocols.encoding`): each of ``M`` summands must stay below
``2^(63 - f) / M``. Every value is scaled by an agreed power of two (exact in
float64), chosen from public values only, so that no sum can leave the ring:

1. **One exponent** ``E`` (public): each site announces the binary exponent
   ``e_s`` of its largest magnitude (``max |x| < 2^e_s``, :func:`site_exponent`);
   ``E = max_s e_s``. With ``y = x 2^-E`` every entry has ``|y| < 1``. One
   number per site, not one per column: the covariance's eigenvectors are the
   same for ``X`` and ``2^-E X``. A site refuses, before it announces
   anything, ``max |x| >= 2^MAX_EXPONENT`` (the covariance of such values
   would leave float64).
2. **The mean phase**: ``2^A [sum y, (sum y^2,) n_s]`` with PPPCA's
   ``A = 62 - f - ceil(log2 M) - ROW_BITS``
   (:func:`mpc_pca.pppca.scaling.sums_scale_exponent`): ``|sum y| <= n_s``
   and ``sum y^2 <= n_s < 2^ROW_BITS``. Unstandardized, the sum of squares is
   one number, the site's total ``sum y^2`` over all ``d`` columns times
   ``2^-T`` (:func:`total_shift`, ``T = ceil(log2 d)``), so it too is at most ``n_s``:
   it gives the server the trace of the covariance (the total variance), no more.
3. **Each product** ``Z_s^T (Z_s Q)`` (``Q`` orthonormal, ``d x b``; ``z`` the
   site's rows centred at the pooled mean, in ``y`` units, or standardized)
   is scaled by ``2^B`` with ``B = 62 - f - ceil(log2 M) - ceil(log2 L)``:
   entry ``(j, l)`` is ``sum_r z_rj (z_r . q_l)``, at most
   ``sqrt(sum_r z_rj^2) sqrt(sum_r |z_r|^2)`` (Cauchy-Schwarz). Without
   standardizing ``|z| < 2`` gives ``L = 4 N sqrt(d)``; standardized, the
   pooled ``sum_r z_rj^2 = N`` gives ``N sqrt(d)``, doubled
   (``L = 2 N sqrt(d)``) for the rounding of the pooled variances.

The decoded sum of ``M`` encodings is off by at most ``M 2^-(f+1)`` per
entry (:meth:`~protocols.backends.base.SecureSumBackend.sum_error_bound`),
so each product ``C Q`` the server decodes is off by at most
:func:`product_error_bound` in the Frobenius norm: ``sqrt(d b) M 2^-(f+1+B)``
times ``2^(2E) / (N - 1)`` (``1 / (N - 1)`` standardized). The total
fractional bits ``f + B`` do not depend on ``f``: the ring's 63 bits less the
headroom for ``M`` summands of magnitude up to ``L``. The mean phase's sums
are off by at most :func:`sums_error_bound` per entry (``M 2^-(f+1+A) 2^E``;
the sums of squares ``2^E`` times that), so the pooled mean by that over ``N``.

A secure run and the plaintext reference from the same start therefore make
the same iteration on a covariance operator perturbed by these roundings
only; each Ritz pair moves by about the perturbation over its eigengap
(Davis-Kahan), which the tests measure (``tests/wide/test_secure.py``:
``<= 1e-8``; 5e-12 at ``d = 2000``, ``k = 10``, 5 sites).
"""

from __future__ import annotations

import math

import numpy as np

from mpc_pca.pppca.scaling import ROW_BITS, sums_scale_exponent
from protocols.errors import InputValidationError

#: Bits of the signed 64-bit ring used (one kept against rounding), as PPPCA.
RING_BITS = 62
#: A site's values must stay below ``2^MAX_EXPONENT`` (about 3e144): ``2^(2 MAX_EXPONENT)``
#: times the product bound of any run (``N < 2^48``, ``d < 2^24``) stays within float64.
MAX_EXPONENT = 480
#: What a site whose values are all zero announces (it bounds nothing).
ZERO_EXPONENT = -1100


def _bits(value: float) -> int:
    """``ceil(log2(value))`` for ``value >= 1``."""
    return max(0, math.ceil(math.log2(value)))


def site_exponent(peak: float, name: str = "the site") -> int:
    """``e`` with ``peak < 2^e`` (:data:`ZERO_EXPONENT` for 0), refusing values the protocol cannot carry.

    Raises
    ------
    InputValidationError
        If ``peak >= 2^MAX_EXPONENT``, naming the value and the limit.
    """
    if peak == 0.0:
        return ZERO_EXPONENT
    if not math.isfinite(peak) or peak >= 2.0**MAX_EXPONENT:
        raise InputValidationError(
            f"{name} holds a value of magnitude {peak:.6g}; pppca-randomized takes values below "
            f"2^{MAX_EXPONENT} = {2.0**MAX_EXPONENT:.6g} (their covariance would leave float64); rescale the data"
        )
    return int(np.frexp(peak)[1])


def check_rows(n_rows: int, name: str = "the site") -> None:
    """Refuse a site of more than ``2^ROW_BITS`` rows (the mean phase's headroom) or of none."""
    if n_rows < 1:
        raise InputValidationError(f"{name} holds no rows; every site needs at least one")
    if n_rows > 2**ROW_BITS:
        raise InputValidationError(
            f"{name} holds {n_rows} rows; a site may hold at most 2^{ROW_BITS} = {2**ROW_BITS} rows"
        )


def agreed_exponent(exponents: list[int]) -> int:
    """``E = max_s e_s`` (0 when every site's values are all zero)."""
    top = max(exponents)
    return 0 if top == ZERO_EXPONENT else int(top)


def sums_shift(n_sites: int, frac_bits: int) -> int:
    """``A`` of the mean phase (PPPCA's)."""
    return sums_scale_exponent(n_sites, frac_bits)


def sums_error_bound(n_sites: int, frac_bits: int, exponent: int) -> float:
    """Most a pooled column sum the server decodes is off from the exact sum, in the data's units."""
    return n_sites * 2.0 ** -(int(frac_bits) + 1 + sums_shift(n_sites, frac_bits)) * 2.0 ** int(exponent)


def total_shift(n_features: int) -> int:
    """``T = ceil(log2 d)``: a site's total ``sum y^2`` over all ``d`` columns times ``2^-T`` is at most ``n_s``."""
    return _bits(n_features)


def product_magnitude(n_samples: int, n_features: int, standardize: bool) -> float:
    """``L``: every entry of a site's scaled product, and of their sum, is below it (module notes)."""
    return (2.0 if standardize else 4.0) * n_samples * math.sqrt(n_features)


def product_shift(n_sites: int, frac_bits: int, n_samples: int, n_features: int, standardize: bool) -> int:
    """``B = 62 - f - ceil(log2 M) - ceil(log2 L)``: a product times ``2^B`` cannot leave the ring."""
    magnitude = product_magnitude(n_samples, n_features, standardize)
    return RING_BITS - int(frac_bits) - _bits(n_sites) - _bits(magnitude)


def product_units(exponent: int, standardize: bool) -> int:
    """The power of two from a product in ``y`` units to the data's units: ``2E``, 0 standardized."""
    return 0 if standardize else 2 * int(exponent)


def product_error_bound(
    n_sites: int,
    frac_bits: int,
    n_samples: int,
    n_features: int,
    width: int,
    exponent: int,
    standardize: bool,
) -> float:
    """Frobenius bound of the fixed-point error of one decoded ``C Q`` (module notes)."""
    shift = product_shift(n_sites, frac_bits, n_samples, n_features, standardize)
    entry = n_sites * 2.0 ** -(int(frac_bits) + 1 + shift)
    return (
        math.sqrt(n_features * width) * entry * 2.0 ** product_units(exponent, standardize) / (n_samples - 1)
    )


__all__ = [
    "MAX_EXPONENT",
    "RING_BITS",
    "ZERO_EXPONENT",
    "agreed_exponent",
    "check_rows",
    "product_error_bound",
    "product_magnitude",
    "product_shift",
    "product_units",
    "site_exponent",
    "sums_error_bound",
    "sums_shift",
    "total_shift",
]
