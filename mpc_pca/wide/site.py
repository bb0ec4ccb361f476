"""What one site computes from its own rows, one chunk at a time: sums, its block product, its scores.

A site's rows are an ``(n_s, d)`` array or a
:class:`~mpc_pca.pppca.chunked.ChunkedPart` (a file read in chunks). Every
function here reads them chunk by chunk (:func:`row_chunks`) and holds at most
one chunk, its ``(c, b)`` product with the block and ``O(d b)`` numbers: no
``d x d`` array and no centred copy of the rows. Centring at a mean ``mu``
is applied to the chunk's product, exactly:

    (X_c - 1 mu^T)^T ((X_c - 1 mu^T) W) = X_c^T T - mu (1^T T),  T = X_c W - 1 (mu^T W).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.chunked import ChunkedPart
from protocols.encoding import check_finite
from protocols.errors import InputValidationError

#: Rows per chunk of an array when the caller does not say: 8 MiB of rows at ``d = 1024``.
DEFAULT_CHUNK_ROWS = 1024

#: A site's rows: an array or a part read in chunks.
Rows = NDArray[np.float64] | ChunkedPart


def row_chunks(rows: Rows, chunk_rows: int | None = None) -> Iterator[NDArray[np.float64]]:
    """The rows as blocks of at most ``chunk_rows`` rows (a ChunkedPart's own chunks; views of an array)."""
    if isinstance(rows, ChunkedPart):
        yield from rows.chunks()
        return
    step = DEFAULT_CHUNK_ROWS if chunk_rows is None else int(chunk_rows)
    if step < 1:
        raise InputValidationError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
    for start in range(0, rows.shape[0], step):
        yield rows[start : start + step]


def n_features_of(rows: Rows) -> int:
    """``d`` of a site's rows."""
    return int(rows.n_features if isinstance(rows, ChunkedPart) else rows.shape[1])


@dataclass(frozen=True)
class SiteSums:
    """One site's row count, column sums, column sums of squares and largest magnitude.

    ``O(d)`` numbers from one pass over the chunks (:func:`site_sums`).
    """

    n_rows: int
    sums: NDArray[np.float64]
    squares: NDArray[np.float64]
    peak: float


def site_sums(rows: Rows, chunk_rows: int | None = None, name: str = "the site") -> SiteSums:
    """One pass over the chunks: count, sums, sums of squares and ``max |x|``, every chunk checked finite.

    Raises
    ------
    InputValidationError
        Naming the site and the row of a NaN or infinite entry, a chunk of the
        wrong width, or a site with no rows.
    """
    d = n_features_of(rows)
    sums, squares = np.zeros(d), np.zeros(d)
    peak, n = 0.0, 0
    for chunk in row_chunks(rows, chunk_rows):
        if chunk.ndim != 2 or chunk.shape[1] != d:
            raise InputValidationError(f"{name} gave a block of shape {chunk.shape}, expected (c, {d})")
        if chunk.shape[0] == 0:
            continue
        high, low = float(np.max(chunk)), float(np.min(chunk))
        if not (np.isfinite(high) and np.isfinite(low)):
            check_finite(chunk, f"{name}'s rows {n}..{n + chunk.shape[0] - 1}")
        peak = max(peak, high, -low)
        sums += np.add.reduce(chunk, axis=0)
        squares += np.einsum("ij,ij->j", chunk, chunk)
        n += chunk.shape[0]
    if n == 0:
        raise InputValidationError(f"{name} holds no rows; every site needs at least one")
    return SiteSums(n, sums, squares, peak)


def site_product(
    rows: Rows,
    block: NDArray[np.float64],
    mean: NDArray[np.float64] | None = None,
    chunk_rows: int | None = None,
    peak: float | None = None,
) -> NDArray[np.float64]:
    """``(X_s - mu)^T ((X_s - mu) W)`` (``X_s^T X_s W`` without ``mean``), a chunk at a time (module notes).

    Parameters
    ----------
    rows : ndarray of shape (n_s, d) or ChunkedPart
    block : ndarray of shape (d, b)
    mean : ndarray of shape (d,), optional
    chunk_rows : int, optional
        Rows per chunk of an array (a ChunkedPart keeps its own).
    peak : float, optional
        Refuse a chunk with an entry of magnitude ``>= peak`` (the agreed
        bound the fixed-point scaling relies on; a file that changed after
        its announcement).

    Raises
    ------
    InputValidationError
        For a chunk with a non-finite entry, the wrong width, or an entry above ``peak``.
    """
    d, b = block.shape
    out = np.zeros((d, b))
    shift = None if mean is None else mean @ block
    start = 0
    for chunk in row_chunks(rows, chunk_rows):
        if chunk.ndim != 2 or chunk.shape[1] != d:
            raise InputValidationError(f"a block of rows has shape {chunk.shape}, expected (c, {d})")
        if peak is not None and chunk.size and max(float(np.max(chunk)), -float(np.min(chunk))) >= peak:
            check_finite(chunk, f"rows {start}..{start + chunk.shape[0] - 1}")
            raise InputValidationError(
                f"rows {start}..{start + chunk.shape[0] - 1} hold an entry of magnitude "
                f"{max(float(np.max(chunk)), -float(np.min(chunk))):.6g}, not below the agreed bound {peak:.6g} "
                "(the rows changed since they were announced)"
            )
        image = chunk @ block
        if shift is not None:
            image -= shift
            out -= np.outer(mean, image.sum(axis=0))  # type: ignore[arg-type]
        out += chunk.T @ image
        start += chunk.shape[0]
    if not np.all(np.isfinite(out)):
        raise InputValidationError("the site's block product is not finite (NaN, infinite or huge rows)")
    return out


def site_scores(
    rows: Rows,
    mean: NDArray[np.float64],
    scale: NDArray[np.float64],
    components: NDArray[np.float64],
    chunk_rows: int | None = None,
) -> NDArray[np.float64]:
    """The site's PC scores ``((X_s - mu) / D) V^T``, a chunk at a time (``components``: ``(k, d)``)."""
    weights = np.ascontiguousarray(components.T / scale[:, None])
    shift = mean @ weights
    blocks = [chunk @ weights - shift for chunk in row_chunks(rows, chunk_rows)]
    return np.vstack(blocks) if blocks else np.empty((0, components.shape[0]))


__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "Rows",
    "SiteSums",
    "n_features_of",
    "row_chunks",
    "site_product",
    "site_scores",
    "site_sums",
]
