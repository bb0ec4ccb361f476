"""Federated PCA through the secure sum: each client's PCA statistics in, the pooled PCA out.

A client with rows ``X_k`` (``n_k x d``) sends, weighted by ``n_k``, its column
mean ``m_k`` and second moment ``X_k^T X_k / n_k`` (:func:`local_statistics`);
the secure sum's weighted mean of them is the pooled mean ``mu`` and second
moment ``M = X^T X / N`` of the union of the rows (the sums PPPCA adds up:
row counts, column sums, Gram matrices), and nothing else is revealed. The
server then takes the covariance ``N / (N - 1) (M - mu mu^T)`` and its leading
eigenvectors (:func:`pooled_pca`), which equal scikit-learn's PCA of the
union up to each component's sign.

The agreed range of the Flower workflow (``clipping_range``) must bound every
entry sent: :func:`statistics_bound` gives ``max |x|^2`` (or ``max |x|`` if
larger) for rows bounded by ``max |x|``. Forming ``M - mu mu^T`` cancels digits
when the columns' means are large against their spread: centre or standardise
the columns first (with agreed constants) for such data.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError


def local_statistics(rows: NDArray[np.floating]) -> tuple[list[NDArray[np.float64]], int]:
    """A client's arrays ``[m_k, X_k^T X_k / n_k]`` and its weight ``n_k``.

    Raises
    ------
    InputValidationError
        For rows that are not a non-empty finite 2-D array.

    Examples
    --------
    >>> arrays, n = local_statistics(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> n, arrays[0].tolist(), arrays[1].tolist()
    (2, [2.0, 3.0], [[5.0, 7.0], [7.0, 10.0]])
    """
    x = np.asarray(rows, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0 or not np.all(np.isfinite(x)):
        raise InputValidationError(f"PCA rows must be a non-empty finite 2-D array, got shape {x.shape}")
    n = x.shape[0]
    return [x.mean(axis=0), (x.T @ x) / n], n


def statistics_shapes(n_features: int) -> list[tuple[int, ...]]:
    """The shapes of :func:`local_statistics`'s arrays (the global model the workflow sums into)."""
    return [(n_features,), (n_features, n_features)]


def statistics_bound(max_abs: float) -> float:
    """The agreed range that holds every statistic of rows whose entries are at most ``max_abs``."""
    return max(max_abs * max_abs, max_abs)


def pooled_pca(
    arrays: Sequence[NDArray[np.floating]], n_rows: int, n_components: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The pooled mean, the leading components (rows) and their explained variances.

    Parameters
    ----------
    arrays : sequence of array
        The weighted mean of the clients' :func:`local_statistics` arrays.
    n_rows : int
        ``N``, the total row count (for the unbiased covariance).
    n_components : int
        How many components to return.

    Raises
    ------
    InputValidationError
        For arrays of the wrong shapes, ``N < 2`` or ``n_components`` outside ``1 .. d``.
    """
    mean, second = (np.asarray(a, dtype=np.float64) for a in arrays)
    d = mean.shape[0] if mean.ndim == 1 else -1
    if d < 1 or second.shape != (d, d):
        raise InputValidationError(
            f"expected a mean (d,) and a second moment (d, d), got {mean.shape}, {second.shape}"
        )
    if n_rows < 2 or not 1 <= n_components <= d:
        raise InputValidationError(
            f"need N >= 2 rows and 1 <= n_components <= {d}, got {n_rows}, {n_components}"
        )
    covariance = (second - np.outer(mean, mean)) * (n_rows / (n_rows - 1))
    covariance = (covariance + covariance.T) / 2
    values, vectors = np.linalg.eigh(covariance)
    order = np.argsort(values)[::-1][:n_components]
    return mean, vectors[:, order].T, values[order]
