"""What one site computes from its own rows, one chunk at a time: sums, its block product, its scores.

A site's rows are an ``(n_s, d)`` array or a
:class:`~mpc_pca.pppca.chunked.ChunkedPart` (a file read in chunks). Every
function here is one reduction over the chunks (:func:`reduce_rows`) and holds
at most one chunk, its ``(c, b)`` product with the block and ``O(d b)``
numbers: no ``d x d`` array and no centred copy of the rows. A
:class:`~mpc_pca.pppca.chunked.DaskPart` (a site larger than one machine) runs
the same per-chunk functions where its blocks live, on its own cluster, and
only their ``O(d b)`` results come back to the site. Centring at a mean ``mu``
is applied to the chunk's product, exactly:

    (X_c - 1 mu^T)^T ((X_c - 1 mu^T) W) = X_c^T T - mu (1^T T),  T = X_c W - 1 (mu^T W).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.chunked import BlockFunction, ChunkedPart, reduce_chunks
from protocols.encoding import check_finite
from protocols.errors import InputValidationError

#: Rows per chunk of an array when the caller does not say: 8 MiB of rows at ``d = 1024``.
DEFAULT_CHUNK_ROWS = 1024

#: A site's rows: an array or a part read in chunks.
Rows = NDArray[np.float64] | ChunkedPart
T = TypeVar("T")


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


def reduce_rows(
    rows: Rows, fn: BlockFunction[T], merge: Callable[[T, T], T], chunk_rows: int | None = None
) -> T | None:
    """``merge`` of ``fn(chunk, first_row)`` over the rows' chunks in row order (``None`` for no rows).

    A :class:`~mpc_pca.pppca.chunked.ChunkedPart` reduces its own blocks
    (:meth:`~mpc_pca.pppca.chunked.ChunkedPart.reduce_blocks`: a Dask part on
    its cluster); an array is cut into ``chunk_rows`` rows.
    """
    if isinstance(rows, ChunkedPart):
        return rows.reduce_blocks(fn, merge)
    return reduce_chunks(row_chunks(rows, chunk_rows), fn, merge)


def _rows_label(first_row: int | None, chunk: NDArray[np.float64]) -> str:
    if first_row is None:
        return f"a block of {chunk.shape[0]} rows"
    return f"rows {first_row}..{first_row + chunk.shape[0] - 1}"


def _check_width(chunk: NDArray[np.float64], d: int, name: str) -> None:
    if chunk.ndim != 2 or chunk.shape[1] != d:
        raise InputValidationError(f"{name} gave a block of shape {chunk.shape}, expected (c, {d})")


def _chunk_sums(chunk: NDArray[np.float64], first_row: int | None, d: int, name: str) -> SiteSums:
    """One chunk's count, sums, sums of squares and peak, the chunk checked finite (naming its rows)."""
    _check_width(chunk, d, name)
    if chunk.shape[0] == 0:
        return SiteSums(0, np.zeros(d), np.zeros(d), 0.0)
    high, low = float(np.max(chunk)), float(np.min(chunk))
    if not (np.isfinite(high) and np.isfinite(low)):
        check_finite(chunk, f"{name}'s {_rows_label(first_row, chunk)}")
    return SiteSums(
        chunk.shape[0], np.add.reduce(chunk, axis=0), np.einsum("ij,ij->j", chunk, chunk), max(high, -low)
    )


def _merge_sums(total: SiteSums, more: SiteSums) -> SiteSums:
    return SiteSums(total.n_rows + more.n_rows, total.sums + more.sums, total.squares + more.squares,
                    max(total.peak, more.peak))  # fmt: skip


def site_sums(rows: Rows, chunk_rows: int | None = None, name: str = "the site") -> SiteSums:
    """One pass over the chunks: count, sums, sums of squares and ``max |x|``, every chunk checked finite.

    Raises
    ------
    InputValidationError
        Naming the site and the row of a NaN or infinite entry, a chunk of the
        wrong width, or a site with no rows.
    """
    fn = partial(_chunk_sums, d=n_features_of(rows), name=name)
    total = reduce_rows(rows, fn, _merge_sums, chunk_rows)
    if total is None or total.n_rows == 0:
        raise InputValidationError(f"{name} holds no rows; every site needs at least one")
    return total


def _chunk_product(
    chunk: NDArray[np.float64],
    first_row: int | None,
    block: NDArray[np.float64],
    mean: NDArray[np.float64] | None,
    peak: float | None,
) -> NDArray[np.float64]:
    """One chunk's term of :func:`site_product`: ``X_c^T T - mu (1^T T)``, ``T = X_c W - 1 (mu^T W)``."""
    _check_width(chunk, block.shape[0], "the site")
    if peak is not None and chunk.size and max(float(np.max(chunk)), -float(np.min(chunk))) >= peak:
        label = _rows_label(first_row, chunk)
        check_finite(chunk, label)
        raise InputValidationError(
            f"{label} hold an entry of magnitude {max(float(np.max(chunk)), -float(np.min(chunk))):.6g}, "
            f"not below the agreed bound {peak:.6g} (the rows changed since they were announced)"
        )
    image = chunk @ block
    if mean is None:
        return chunk.T @ image
    image -= mean @ block
    term = chunk.T @ image
    term -= np.outer(mean, image.sum(axis=0))
    return term


def _add_into(total: NDArray[np.float64], more: NDArray[np.float64]) -> NDArray[np.float64]:
    total += more
    return total


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
    fn = partial(_chunk_product, block=block, mean=mean, peak=peak)
    out = reduce_rows(rows, fn, _add_into, chunk_rows)
    if out is None:
        return np.zeros(block.shape)
    if not np.all(np.isfinite(out)):
        raise InputValidationError("the site's block product is not finite (NaN, infinite or huge rows)")
    return out


def _chunk_scores(
    chunk: NDArray[np.float64],
    first_row: int | None,
    weights: NDArray[np.float64],
    shift: NDArray[np.float64],
) -> list[NDArray[np.float64]]:
    return [chunk @ weights - shift]


def _concatenate(
    total: list[NDArray[np.float64]], more: list[NDArray[np.float64]]
) -> list[NDArray[np.float64]]:
    total.extend(more)
    return total


def site_scores(
    rows: Rows,
    mean: NDArray[np.float64],
    scale: NDArray[np.float64],
    components: NDArray[np.float64],
    chunk_rows: int | None = None,
) -> NDArray[np.float64]:
    """The site's PC scores ``((X_s - mu) / D) V^T``, a chunk at a time (``components``: ``(k, d)``)."""
    weights = np.ascontiguousarray(components.T / scale[:, None])
    fn = partial(_chunk_scores, weights=weights, shift=mean @ weights)
    blocks = reduce_rows(rows, fn, _concatenate, chunk_rows)
    return np.vstack(blocks) if blocks else np.empty((0, components.shape[0]))


__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "Rows",
    "SiteSums",
    "n_features_of",
    "reduce_rows",
    "row_chunks",
    "site_product",
    "site_scores",
    "site_sums",
]
