"""Packing a symmetric matrix as its upper triangle (diagonal included), row by row.

Summing symmetric matrices only needs ``d(d+1)/2`` of their ``d^2`` entries,
which nearly halves the shares, masks or ciphertexts of every secure sum of a
Gram or covariance matrix.

Packing, rank-one updates and products work on groups of rows
(:func:`row_groups`: a contiguous segment of the packed vector and a
cache-sized mask), using the cached offsets of the rows in the packed vector
(``d + 1`` integers per ``d``, in a bounded cache) instead of
``np.triu_indices``' two ``d(d+1)/2``-long index arrays: at ``d = 5000`` those
would be 200 MB, more than the matrix itself. A group replaces up to hundreds
of per-row numpy calls, which dominated a provider's check at M = 64.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError


@functools.lru_cache(maxsize=16)
def row_offsets(d: int) -> NDArray[np.int64]:
    """Start of each row of the packed upper triangle of a ``d x d`` matrix, and its length.

    ``offsets[i]`` is where row ``i`` (entries ``i..d-1``) starts and
    ``offsets[d] = d(d+1)/2``. Cached (read-only) per ``d``.

    Examples
    --------
    >>> row_offsets(3).tolist()
    [0, 3, 5, 6]
    """
    if d < 0:
        raise InputValidationError(f"a matrix side must be non-negative, got {d}")
    lengths = np.arange(d, 0, -1, dtype=np.int64)
    offsets = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    offsets.setflags(write=False)
    return offsets


#: Entries of the ``rows x d`` block :func:`row_groups` hands out at a time (512 KiB of float64):
#: one group for ``d`` up to 256, about ``d / 13`` groups at ``d = 5000`` instead of ``d`` rows.
_GROUP_ENTRIES = 1 << 16


def row_groups(d: int) -> list[tuple[int, int, NDArray[np.bool_]]]:
    """Consecutive row ranges ``[a, b)`` of a ``d x d`` matrix, with where their upper triangle is.

    The packed entries of rows ``a..b-1`` are the contiguous segment
    ``packed[offsets[a]:offsets[b]]`` (:func:`row_offsets`), and they are the
    entries of the block ``M[a:b, :]`` where ``mask`` (shape ``(b - a, d)``) is
    true, in row-major order. Each block holds about :data:`_GROUP_ENTRIES`
    entries (at least one row), so a per-row loop of ``d`` numpy calls
    becomes a few block operations on the same entries, in the same order.
    Cached (read-only masks) per ``d``.

    Examples
    --------
    >>> [(a, b, mask.astype(int).tolist()) for a, b, mask in row_groups(2)]
    [(0, 2, [[1, 1], [0, 1]])]
    """
    return _row_groups(int(d))


@functools.lru_cache(maxsize=16)
def _row_groups(d: int) -> list[tuple[int, int, NDArray[np.bool_]]]:
    if d < 0:
        raise InputValidationError(f"a matrix side must be non-negative, got {d}")
    step = max(1, _GROUP_ENTRIES // max(d, 1))
    groups = []
    columns = np.arange(d)
    for start in range(0, d, step):
        stop = min(d, start + step)
        mask = columns[None, :] >= np.arange(start, stop)[:, None]
        mask.setflags(write=False)
        groups.append((start, stop, mask))
    return groups


def upper_triangle(matrix: NDArray[np.float64], out: NDArray | None = None) -> NDArray[np.float64]:
    """The ``d(d+1)/2`` entries on and above the diagonal of a square matrix, row by row.

    Parameters
    ----------
    matrix : ndarray of shape (d, d)
    out : ndarray of shape (d(d+1)/2,), optional
        Where to write them (a fresh array of ``matrix``'s dtype otherwise).
    """
    arr = np.asarray(matrix)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise InputValidationError(f"expected a square matrix, got shape {arr.shape}")
    d = arr.shape[0]
    offsets = row_offsets(d)
    if out is None:
        out = np.empty(int(offsets[-1]), dtype=arr.dtype)
    elif out.shape != (int(offsets[-1]),):
        raise InputValidationError(f"out has shape {out.shape}, expected ({int(offsets[-1])},)")
    for start, stop, mask in row_groups(d):
        out[offsets[start] : offsets[stop]] = arr[start:stop][mask]
    return out


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
    out = np.empty((side, side), dtype=np.float64)
    offsets = row_offsets(side)
    for i in range(side):
        row = packed[offsets[i] : offsets[i + 1]]
        out[i, i:] = row
        out[i:, i] = row
    return out


def triangle_diagonal(packed: NDArray[np.float64], d: int) -> NDArray[np.float64]:
    """The diagonal of the matrix a packed triangle stands for (a copy)."""
    return np.asarray(packed)[row_offsets(d)[:-1]]


def packed_matvec(packed: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``S x`` for the symmetric ``S`` whose upper triangle is ``packed``, without unpacking it whole.

    What BLAS ``dspmv`` computes, in numpy (no SciPy import, no ``d x d``
    array): for each group of rows of :func:`row_groups`, its upper-triangle
    block ``U`` (zeros below the diagonal, at most a cache-sized array) gives
    ``U x`` to those rows and, being the same entries below the diagonal,
    ``U^T x`` to every row; the diagonal, counted twice, is taken off once.
    ``O(d^2)`` work in a few matrix-vector products.

    Examples
    --------
    >>> packed_matvec(np.array([1.0, 2.0, 3.0]), np.array([1.0, -1.0])).tolist()  # [[1, 2], [2, 3]]
    [-1.0, -1.0]
    """
    d = x.shape[0]
    offsets = row_offsets(d)
    if packed.shape != (int(offsets[-1]),):
        raise InputValidationError(
            f"a packed triangle of side {d} has {int(offsets[-1])} entries, got {packed.shape}"
        )
    out = np.zeros(d)
    for start, stop, mask in row_groups(d):
        block = np.zeros(mask.shape)
        block[mask] = packed[offsets[start] : offsets[stop]]
        out[start:stop] += block @ x
        out += x[start:stop] @ block
        out[start:stop] -= np.diagonal(block, offset=start) * x[start:stop]
    return out
