"""scipy.sparse rows: the statistics PCA needs, computed without densifying.

A provider holding sparse rows ``X`` (``n x d``, CSR) needs what it would
compute from dense rows (Liu et al., AAAI 2020, Algorithm 2 steps 1 and 5):
its row count, the column sums ``1^T X``, the per-column peaks ``max |x_j|``
(for the column exponents of :mod:`mpc_pca.pppca.scaling`) and the Gram
matrix ``X^T X``. All of them are read from the stored entries alone; only
``X^T X`` is ``d x d`` dense, whatever the sparsity. Centring happens on the
statistics, ``(X - 1 mu^T)^T (X - 1 mu^T) = X^T X - n mu mu^T``, as
scikit-learn's ``PCA(svd_solver="covariance_eigh")`` does for sparse input;
projections are ``(X - 1 mu^T) W = X W - 1 (mu^T W)`` (:func:`centred_product`).

scipy is imported only when it is already loaded: a caller who never passes
sparse rows (a party process reading a CSV) never imports it
(:func:`is_sparse`).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError


def is_sparse(value: object) -> bool:
    """Whether ``value`` is a scipy.sparse matrix or array, without importing scipy.

    If ``scipy.sparse`` has not been imported, nothing can be one of its matrices.

    Examples
    --------
    >>> is_sparse(np.zeros((2, 2)))
    False
    """
    module = sys.modules.get("scipy.sparse")
    return module is not None and bool(module.issparse(value))


def as_csr(part: Any, name: str) -> Any:
    """Canonical CSR of float64 or float32 from one sparse block of rows, its stored entries checked.

    The stored entries are copied only when the format, the dtype or
    duplicate entries require it; the rows are never densified. The block's
    shape and dtype kind are checked by the caller
    (:func:`mpc_pca.validation.check_parts`).

    Parameters
    ----------
    part : scipy.sparse matrix or array
        A 2-D block of real rows, at least one row and one column.
    name : str
        Its name in error messages (``part 1``).

    Raises
    ------
    InputValidationError
        If the part is not numeric or stores a NaN/inf entry (named by row
        and column).
    """
    dtype = np.float32 if part.dtype == np.float32 else np.float64
    try:
        csr = part.tocsr().astype(dtype, copy=False)
    except (TypeError, ValueError) as exc:
        raise InputValidationError(f"{name} is not numeric: {exc}") from exc
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()
    bad = np.flatnonzero(~np.isfinite(csr.data))
    if bad.size:
        entry = int(bad[0])
        row = int(np.searchsorted(csr.indptr, entry, side="right") - 1)
        raise InputValidationError(
            f"{name} contains a non-finite entry {float(csr.data[entry])} at index "
            f"({row}, {int(csr.indices[entry])}); only finite numbers are accepted"
        )
    return csr


def sparse_statistics(
    csr: Any,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Column sums, column peaks ``max |x_j|`` and Gram matrix ``X^T X`` of canonical CSR rows.

    Every statistic is accumulated in float64 from the stored entries;
    the only dense result besides the two ``d``-vectors is the ``d x d``
    Gram matrix.

    Examples
    --------
    >>> import scipy.sparse
    >>> rows = scipy.sparse.csr_matrix(np.array([[0.0, -3.0], [1.0, 0.0], [2.0, 1.0]]))
    >>> sums, peaks, gram = sparse_statistics(rows)
    >>> sums.tolist(), peaks.tolist(), gram.tolist()
    ([3.0, -2.0], [2.0, 3.0], [[5.0, 2.0], [2.0, 10.0]])
    """
    d = csr.shape[1]
    values = csr.data.astype(np.float64, copy=False)
    sums = np.bincount(csr.indices, weights=values, minlength=d).astype(np.float64)
    peaks = np.zeros(d)
    np.maximum.at(peaks, csr.indices, np.abs(values))
    wide = csr.astype(np.float64, copy=False)
    gram = np.asarray((wide.T @ wide).toarray(), dtype=np.float64)
    return sums, peaks, gram


def row_blocks(csr: Any, rows: int) -> Any:
    """Dense copies of ``rows`` consecutive rows at a time (for explicit centring), never all ``n``."""
    for start in range(0, csr.shape[0], rows):
        yield np.asarray(csr[start : start + rows].toarray(), dtype=np.float64)


def centred_product(rows: Any, mean: NDArray[np.float64], matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(rows - mean) @ matrix``; for sparse rows ``rows @ matrix - mean @ matrix`` (no dense rows).

    Examples
    --------
    >>> import scipy.sparse
    >>> rows = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> mean, matrix = np.array([0.5, 1.0]), np.array([[1.0], [1.0]])
    >>> centred_product(scipy.sparse.csr_matrix(rows), mean, matrix).tolist()
    [[-0.5], [0.5]]
    >>> centred_product(rows, mean, matrix).tolist()
    [[-0.5], [0.5]]
    """
    if is_sparse(rows):
        product: NDArray[np.float64] = np.asarray(rows @ matrix) - mean @ matrix
        return product
    centred: NDArray[np.float64] = (rows - mean) @ matrix
    return centred
