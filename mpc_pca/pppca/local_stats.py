"""What a data provider computes from its own rows before any message is sent.

For PPPCA a provider needs its row count ``n_i``, column sums ``s_i`` and, once
the pooled mean ``mu`` is known, the Gram matrix of its rows centred at ``mu``.
That last matrix is obtained from the *scatter about the local mean*
``S_i = sum_r (x_r - m_i)(x_r - m_i)^T`` by the exact identity

    (X_i - mu)^T (X_i - mu) = S_i + n_i (m_i - mu)(m_i - mu)^T,

so the O(n d^2) work happens once, locally, before the protocol starts, and
the provider can check that everything it will send fits in the ring.

``S_i`` is computed as ``X_i^T X_i - n_i m_i m_i^T`` (one BLAS pass, no copy
of the data, as scikit-learn's ``covariance_eigh`` solver does). When the
data's offset is so large relative to its spread that this subtraction would
cancel more than half of float64's digits, it is recomputed from explicitly
centred row blocks instead.

The provider reads its rows once (:func:`gram_sums_and_peaks`): each
cache-sized block of rows gives its part of ``X^T X`` (one BLAS call on the
block), its column sums and the per-column peaks ``max |x_j|`` that fix the
column exponents of :mod:`mpc_pca.pppca.scaling`, while the block is still in
cache. No ``n_i x d`` temporary is made (the peaks were once
``np.max(np.abs(X), 0)``: a full copy of the data and a third read), and:

* the peaks are exact (``max(max_j x, -min_j x)``, like any maximum, in any
  order), so the agreed exponents are those of the one-shot form;
* the Gram matrix and the sums are added block after block: their rounding
  differs from one ``X^T X`` call and ``X.sum(axis=0)`` by a few units in
  the last place (a blocked sum is, if anything, the more accurate one).
  Issue 28 measured the blocked pass at 1.04x the baseline's ``X^T X`` plus
  ``X.sum(0)`` at 1e6 x 100, against 1.15x for a separate pass over the rows.

Wide rows (``d`` > :data:`_FUSED_MAX_FEATURES`) and rows that are not
C-contiguous keep one ``X^T X`` call and a separate blocked read of the
rows for the sums and peaks (:func:`sums_and_peaks`): there the Gram product
dominates, and a block of a few rows would make BLAS slower.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mpc_pca.sparse_rows import is_sparse, row_blocks, sparse_statistics
from protocols.triangle import from_upper_triangle, row_groups, row_offsets, triangle_diagonal, upper_triangle

# Fall back to explicit centring when n m_j^2 exceeds this multiple of S_jj.
_CANCELLATION_LIMIT = 1e8
_BLOCK_ROWS = 2048
#: Bytes of one block of :func:`sums_and_peaks` (2 MiB): it stays in cache between the copy,
#: the sum, the absolute value and the maxima (the reference machine's L3 is 32 MiB), and
#: few enough blocks keep numpy's per-call cost small.
_SCAN_BLOCK_BYTES = 1 << 21
#: Rows folded side by side into one wide row for the column maxima (:func:`_fold`).
_FOLD = 64
#: Widest rows whose Gram matrix is accumulated block by block (:func:`gram_sums_and_peaks`):
#: a 2 MiB block then still has at least 1,024 rows for each BLAS call.
_FUSED_MAX_FEATURES = 256


@dataclass(frozen=True)
class LocalStatistics:
    """Row count, column sums and scatter about the local mean of one party's rows.

    The scatter is kept as its packed upper triangle (``d(d+1)/2`` entries,
    :mod:`protocols.triangle`): half a ``d x d`` array per provider.
    ``column_peaks`` (``max |x_j|``, for the column exponents of
    :mod:`mpc_pca.pppca.scaling`) is filled in by :meth:`of` and kept by
    :meth:`merge`; ``None`` where it is not known.
    """

    n_rows: int
    column_sums: NDArray[np.float64]
    scatter_triangle: NDArray[np.float64]
    column_peaks: NDArray[np.float64] | None = None

    @property
    def n_features(self) -> int:
        return self.column_sums.shape[0]

    @property
    def scatter(self) -> NDArray[np.float64]:
        """The full symmetric ``d x d`` scatter (built on demand)."""
        return from_upper_triangle(self.scatter_triangle, self.n_features)

    @classmethod
    def of(cls, data: NDArray[np.float64]) -> LocalStatistics:
        """Compute the statistics and column peaks of an ``(n, d)`` block of rows (module notes).

        ``data`` may be scipy.sparse CSR rows (:func:`mpc_pca.sparse_rows.as_csr`): the sums,
        peaks and ``X^T X`` are then read from the stored entries
        (:func:`~mpc_pca.sparse_rows.sparse_statistics`) and the rows are never densified
        (the cancellation fallback centres cache-sized blocks of rows).
        """
        n = data.shape[0]
        # Non-finite or huge inputs surface as non-finite statistics, which the
        # caller rejects with a precise message; numpy's warnings add nothing.
        with np.errstate(over="ignore", invalid="ignore"):
            if is_sparse(data):
                sums, peaks, gram = sparse_statistics(data)
            else:
                sums, peaks, gram = gram_sums_and_peaks(data)
            local_mean = sums / n
            scatter = upper_triangle(gram)  # half a d x d from here on
            del gram
            add_rank_one(scatter, local_mean, -float(n))
            offset = n * local_mean**2
            spread = np.abs(triangle_diagonal(scatter, data.shape[1]))
            cancels = np.any(offset > _CANCELLATION_LIMIT * np.maximum(spread, np.finfo(float).tiny))
            if cancels and n > 1 and np.all(np.isfinite(sums)):
                scatter = upper_triangle(_centred_scatter(data, local_mean))
            return cls(n, sums, scatter, peaks)

    def merge(self, other: LocalStatistics) -> LocalStatistics:
        """Statistics of the union of two disjoint row sets (Chan, Golub and LeVeque's update).

        ``S = S_a + S_b + (n_a n_b / n) (m_a - m_b)(m_a - m_b)^T``: scatters about
        the local means combine without the cancellation of raw second moments,
        so chunks of a large file can be reduced one at a time.
        """
        if other.n_features != self.n_features:
            raise ValueError(f"cannot merge statistics of {self.n_features} and {other.n_features} features")
        if self.n_rows == 0:
            return other
        if other.n_rows == 0:
            return self
        n = self.n_rows + other.n_rows
        delta = self.local_mean - other.local_mean
        scatter = self.scatter_triangle + other.scatter_triangle
        add_rank_one(scatter, delta, self.n_rows * other.n_rows / n)
        peaks = None
        if self.column_peaks is not None and other.column_peaks is not None:
            peaks = np.maximum(self.column_peaks, other.column_peaks)
        return LocalStatistics(n, self.column_sums + other.column_sums, scatter, peaks)

    @property
    def local_mean(self) -> NDArray[np.float64]:
        return self.column_sums / self.n_rows

    def sums_and_count(self) -> NDArray[np.float64]:
        """The first PPPCA payload: ``[s_i, n_i]``."""
        return np.concatenate([self.column_sums, [float(self.n_rows)]])

    def centred_gram(self, mean: NDArray[np.float64]) -> NDArray[np.float64]:
        """``(X_i - mean)^T (X_i - mean)`` without touching the rows again."""
        shift = self.local_mean - mean
        return self.scatter + self.n_rows * np.outer(shift, shift)

    def centred_gram_triangle(self, mean: NDArray[np.float64]) -> NDArray[np.float64]:
        """Packed upper triangle of :meth:`centred_gram`, built row by row without ``d x d`` temporaries."""
        out = self.scatter_triangle.copy()
        return add_rank_one(out, self.local_mean - mean, float(self.n_rows))

    def centred_gram_diagonal(self, mean: NDArray[np.float64]) -> NDArray[np.float64]:
        """Diagonal of :meth:`centred_gram`; bounds every entry by Cauchy-Schwarz."""
        shift = self.local_mean - mean
        return triangle_diagonal(self.scatter_triangle, self.n_features) + self.n_rows * shift**2


def gram_sums_and_peaks(
    data: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Column sums, column peaks ``max |x_j|`` and ``X^T X`` of a block of rows in one read (module notes).

    C-contiguous rows of at most :data:`_FUSED_MAX_FEATURES` columns are read
    in cache-sized blocks; each block adds its ``B^T B`` (a BLAS ``syrk``) and
    its column sums, and its column maxima and minima are folded
    (:func:`_fold`) while it is still in cache. Other layouts take
    one ``X^T X`` call and :func:`sums_and_peaks`.

    Examples
    --------
    >>> sums, peaks, gram = gram_sums_and_peaks(np.array([[0.5, -3.0], [1.0, 2.0]]))
    >>> sums.tolist(), peaks.tolist(), gram.tolist()
    ([1.5, -1.0], [1.0, 3.0], [[1.25, 0.5], [0.5, 13.0]])
    """
    n, d = data.shape
    if n == 0 or d > _FUSED_MAX_FEATURES or not data.flags.c_contiguous:
        sums, peaks = sums_and_peaks(data)
        return sums, peaks, data.T @ data
    rows = _scan_rows(d)
    first = data[:rows]  # the first block starts the sums: a one-block part gets the one-shot bits
    gram = first.T @ first
    sums = np.add.reduce(first, axis=0)
    highest, lowest = _fold(first, np.maximum, -np.inf), _fold(first, np.minimum, np.inf)
    for start in range(rows, n, rows):
        block = data[start : start + rows]
        gram += block.T @ block
        sums += np.add.reduce(block, axis=0)
        np.maximum(highest, _fold(block, np.maximum, -np.inf), out=highest)
        np.minimum(lowest, _fold(block, np.minimum, np.inf), out=lowest)
    peaks = np.maximum(highest, -lowest)
    peaks[peaks == 0.0] = 0.0  # a column of (negative) zeros peaks at +0.0, as np.max(np.abs(X), 0) does
    return sums, peaks, gram


def sums_and_peaks(data: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``X.sum(axis=0)`` and ``max |X|`` per column in one blocked read of the rows.

    Bit-identical to ``data.sum(axis=0)`` and ``np.max(np.abs(data), axis=0)``
    (module notes) without their ``n x d`` temporary: each block of rows is
    copied behind the running sum into one cache-sized buffer, and numpy's
    row-after-row reduction of that buffer continues the one-shot sum's
    sequence of additions; the block is then made absolute in place and its
    column maxima read while it is still in cache (:func:`_fold`). Where
    numpy's own sum is pairwise (a single column, or rows that are not
    C-contiguous) it is called as it is and only the peaks are blocked
    (:func:`column_peaks`). A part with no rows has zero sums and peaks.

    Examples
    --------
    >>> sums, peaks = sums_and_peaks(np.array([[0.5, -3.0], [1.0, 2.0]]))
    >>> sums.tolist(), peaks.tolist()
    ([1.5, -1.0], [1.0, 3.0])
    """
    n, d = data.shape
    # numpy adds row after row only when the columns are the contiguous axis of >= 2 entries;
    # otherwise (one column, Fortran order) its sum is pairwise and is taken as it is.
    if n == 0 or not (data.flags.c_contiguous and d >= 2):
        return data.sum(axis=0) if n else np.zeros(d), column_peaks(data)
    rows = _scan_rows(d)
    buffer = np.empty((min(rows, n) + 1, d))
    sums = np.zeros(d)
    peaks = np.zeros(d)
    for start in range(0, n, rows):
        block = data[start : start + rows]
        if start == 0:  # the one-shot sum starts from the first row, not from a running total
            span = buffer[1 : block.shape[0] + 1]
            np.copyto(span, block)
            np.add.reduce(span, axis=0, out=sums)
        else:
            span = buffer[: block.shape[0] + 1]
            span[0] = sums
            np.copyto(span[1:], block)
            np.add.reduce(span, axis=0, out=sums)
        body = buffer[1 : block.shape[0] + 1]
        np.maximum(peaks, _fold(np.abs(body, out=body), np.maximum, 0.0), out=peaks)
    return sums, peaks


def column_peaks(data: NDArray[np.float64]) -> NDArray[np.float64]:
    """``np.max(np.abs(data), axis=0)`` (zeros for no rows), bit-identical, from cache-sized blocks
    made absolute in one reused buffer (no ``n x d`` copy)."""
    n, d = data.shape
    peaks = np.zeros(d)
    if n == 0:
        return peaks
    rows = _scan_rows(d)
    buffer = np.empty((min(rows, n), d))
    for start in range(0, n, rows):
        block = data[start : start + rows]
        body = buffer[: block.shape[0]]
        np.maximum(peaks, _fold(np.abs(block, out=body), np.maximum, 0.0), out=peaks)
    return peaks


def _scan_rows(d: int) -> int:
    """Rows per block of the scan: :data:`_SCAN_BLOCK_BYTES` of float64, a multiple of :data:`_FOLD`."""
    return max(_FOLD, _SCAN_BLOCK_BYTES // (8 * max(d, 1)) // _FOLD * _FOLD)


def _fold(block: NDArray[np.float64], ufunc: np.ufunc, initial: float) -> NDArray[np.float64]:
    """Column reduction of a C-contiguous block by ``ufunc`` (maximum or minimum), folded.

    numpy reduces over rows one row at a time, so with ``d`` = 100 columns the
    per-row cost dominates; viewing ``_FOLD`` consecutive rows as one row of
    ``_FOLD * d`` entries makes each step ``_FOLD`` times longer, and one more
    small reduction folds the ``_FOLD`` results of each column into one (a
    maximum or minimum is exact in any order). ``initial`` is the result of
    no rows.
    """
    rows, d = block.shape
    whole = rows // _FOLD * _FOLD
    out = ufunc.reduce(block[whole:], axis=0, initial=initial)
    if whole:
        wide = ufunc.reduce(block[:whole].reshape(whole // _FOLD, _FOLD * d), axis=0)
        ufunc(out, ufunc.reduce(wide.reshape(_FOLD, d), axis=0), out=out)
    return out


def add_rank_one(packed: NDArray[np.float64], v: NDArray[np.float64], weight: float) -> NDArray[np.float64]:
    """``packed += weight * v v^T`` on a packed upper triangle, in place.

    Entry ``(i, j)`` gets ``(weight v_i) v_j``, one product and one addition,
    computed a group of rows at a time (:func:`protocols.triangle.row_groups`:
    a few block operations instead of ``d`` row updates, bit-identical to
    them) with at most a cache-sized temporary.
    """
    d = v.shape[0]
    offsets = row_offsets(d)
    scaled = weight * v
    for start, stop, mask in row_groups(d):
        segment = packed[offsets[start] : offsets[stop]]
        segment += np.multiply.outer(scaled[start:stop], v)[mask]
    return packed


def _centred_scatter(data: NDArray[np.float64], local_mean: NDArray[np.float64]) -> NDArray[np.float64]:
    """Scatter from explicitly centred blocks of rows (cache-sized copies only)."""
    d = data.shape[1]
    scatter = np.zeros((d, d))
    if is_sparse(data):  # dense copies of _BLOCK_ROWS rows at a time, never all n
        for rows in row_blocks(data, _BLOCK_ROWS):
            rows -= local_mean
            scatter += rows.T @ rows
        return scatter
    block = np.empty((min(_BLOCK_ROWS, data.shape[0]), d))
    for start in range(0, data.shape[0], _BLOCK_ROWS):
        rows = data[start : start + _BLOCK_ROWS]
        centred = block[: rows.shape[0]]
        np.subtract(rows, local_mean, out=centred)
        scatter += centred.T @ centred
    return scatter
