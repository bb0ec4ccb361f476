"""Packing a symmetric matrix as its upper triangle (diagonal included), row by row.

Summing symmetric matrices only needs ``d(d+1)/2`` of their ``d^2`` entries,
which nearly halves the shares, masks or ciphertexts of every secure sum of a
Gram or covariance matrix.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError


def upper_triangle(matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """The ``d(d+1)/2`` entries on and above the diagonal of a square matrix, row by row."""
    arr = np.asarray(matrix)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise InputValidationError(f"expected a square matrix, got shape {arr.shape}")
    rows, cols = np.triu_indices(arr.shape[0])
    return arr[rows, cols]


def triangle_side(length: int) -> int:
    """The ``d`` with ``d(d+1)/2 == length``; raises if there is none."""
    d = int((np.sqrt(8 * length + 1) - 1) // 2)
    if d * (d + 1) // 2 != length:
        raise InputValidationError(f"{length} entries are not d(d+1)/2 for any whole d")
    return d


def from_upper_triangle(packed: NDArray[np.float64], d: int | None = None) -> NDArray[np.float64]:
    """Rebuild the symmetric matrix from :func:`upper_triangle`'s output.

    Parameters
    ----------
    packed : ndarray of shape (d(d+1)/2,)
    d : int, optional
        Expected side; inferred from the length when omitted.
    """
    packed = np.asarray(packed, dtype=np.float64)
    if packed.ndim != 1:
        raise InputValidationError(f"a packed triangle is 1-D, got shape {packed.shape}")
    side = triangle_side(packed.shape[0])
    if d is not None and side != d:
        raise InputValidationError(
            f"packed triangle has {packed.shape[0]} entries, expected {d * (d + 1) // 2} for d={d}"
        )
    out = np.zeros((side, side), dtype=np.float64)
    rows, cols = np.triu_indices(side)
    out[rows, cols] = packed
    out[cols, rows] = packed
    return out
