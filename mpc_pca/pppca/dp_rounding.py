"""The fewest fractional bits pppca-dp's row rounding allows (issue 35).

pppca-dp (:mod:`mpc_pca.pppca.dp_sum`, step 1) rounds every entry of a row of
norm ``<= 1`` to ``r = frac_bits / 2`` fractional bits, which moves the row by
at most ``sqrt(d) 2^-(r+1)`` in norm; the rounded row's norm bound
``B = 2^r + sqrt(d) / 2`` (in units of ``2^-r``) sets the sensitivity, hence
the noise. :data:`MAX_ROUNDING_SHIFT` caps that move at 1/16 of the clipping
bound: the rounded rows keep the data's directions (with ``epsilon = inf``
the top-2 components of standardized wine are 0.018 off at the minimum, 10 bits,
against 0.99 at ``frac_bits = 0``) and the noise ``B^2`` calls for grows by
at most ``(17/16)^2``, i.e. 13 %, over unrounded rows.
"""

from __future__ import annotations

import math

from protocols.errors import InputValidationError

#: Most a row of norm <= 1 may move by rounding, as a fraction of that norm bound.
MAX_ROUNDING_SHIFT = 1.0 / 16.0


def min_frac_bits(n_features: int) -> int:
    """The fewest even ``frac_bits`` with ``sqrt(d) 2^-(frac_bits/2 + 1) <= MAX_ROUNDING_SHIFT``.

    Examples
    --------
    >>> min_frac_bits(13), min_frac_bits(1000), min_frac_bits(10_000)
    (10, 16, 20)
    """
    half_bits = max(0, math.ceil(math.log2(math.sqrt(n_features) / MAX_ROUNDING_SHIFT)) - 1)
    return 2 * half_bits


def check_row_rounding(frac_bits: int, n_features: int) -> None:
    """Refuse a ``frac_bits`` whose row rounding would swamp the rows (named with the minimum).

    Raises
    ------
    InputValidationError
        If ``frac_bits < min_frac_bits(n_features)``.
    """
    lowest = min_frac_bits(n_features)
    if frac_bits < lowest:
        shift = math.sqrt(n_features) * 2.0 ** -(frac_bits // 2 + 1)
        raise InputValidationError(
            f"frac_bits={frac_bits} is too few for pppca-dp with d={n_features} features: rounding each entry to "
            f"{frac_bits // 2} fractional bits moves a row of norm <= 1 by up to {shift:.3g}; frac_bits must be "
            f">= {lowest} (a move of at most 1/16)"
        )
