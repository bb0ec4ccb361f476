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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from protocols.triangle import from_upper_triangle, row_offsets, triangle_diagonal, upper_triangle

# Fall back to explicit centring when n m_j^2 exceeds this multiple of S_jj.
_CANCELLATION_LIMIT = 1e8
_BLOCK_ROWS = 2048


@dataclass(frozen=True)
class LocalStatistics:
    """Row count, column sums and scatter about the local mean of one party's rows.

    The scatter is kept as its packed upper triangle (``d(d+1)/2`` entries,
    :mod:`protocols.triangle`): half a ``d x d`` array per provider.
    """

    n_rows: int
    column_sums: NDArray[np.float64]
    scatter_triangle: NDArray[np.float64]

    @property
    def n_features(self) -> int:
        return self.column_sums.shape[0]

    @property
    def scatter(self) -> NDArray[np.float64]:
        """The full symmetric ``d x d`` scatter (built on demand)."""
        return from_upper_triangle(self.scatter_triangle, self.n_features)

    @classmethod
    def of(cls, data: NDArray[np.float64]) -> LocalStatistics:
        """Compute the statistics of an ``(n, d)`` block of rows."""
        n = data.shape[0]
        # Non-finite or huge inputs surface as non-finite statistics, which the
        # caller rejects with a precise message; numpy's warnings add nothing.
        with np.errstate(over="ignore", invalid="ignore"):
            sums = data.sum(axis=0)
            local_mean = sums / n
            gram = data.T @ data
            scatter = upper_triangle(gram)  # half a d x d from here on
            del gram
            add_rank_one(scatter, local_mean, -float(n))
            offset = n * local_mean**2
            spread = np.abs(triangle_diagonal(scatter, data.shape[1]))
            cancels = np.any(offset > _CANCELLATION_LIMIT * np.maximum(spread, np.finfo(float).tiny))
            if cancels and n > 1 and np.all(np.isfinite(sums)):
                scatter = upper_triangle(_centred_scatter(data, local_mean))
            return cls(n, sums, scatter)

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
        return LocalStatistics(n, self.column_sums + other.column_sums, scatter)

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


def add_rank_one(packed: NDArray[np.float64], v: NDArray[np.float64], weight: float) -> NDArray[np.float64]:
    """``packed += weight * v v^T`` on a packed upper triangle, in place, one row at a time."""
    offsets = row_offsets(v.shape[0])
    scaled = weight * v
    for i in range(v.shape[0]):
        row = packed[offsets[i] : offsets[i + 1]]
        row += scaled[i] * v[i:]
    return packed


def _centred_scatter(data: NDArray[np.float64], local_mean: NDArray[np.float64]) -> NDArray[np.float64]:
    """Scatter from explicitly centred blocks of rows (cache-sized copies only)."""
    d = data.shape[1]
    scatter = np.zeros((d, d))
    block = np.empty((min(_BLOCK_ROWS, data.shape[0]), d))
    for start in range(0, data.shape[0], _BLOCK_ROWS):
        rows = data[start : start + _BLOCK_ROWS]
        centred = block[: rows.shape[0]]
        np.subtract(rows, local_mean, out=centred)
        scatter += centred.T @ centred
    return scatter
