"""Small linear-algebra helpers shared by the PCA protocols."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from protocols.triangle import from_upper_triangle, upper_triangle

__all__ = ["flip_signs", "from_upper_triangle", "leading_eigenpairs", "top_eigenpairs", "upper_triangle"]


def flip_signs(components: NDArray[np.float64]) -> NDArray[np.float64]:
    """Make each row's largest-magnitude entry positive (deterministic eigenvector signs).

    This is the convention of scikit-learn's ``svd_flip(..., u_based_decision=False)``,
    which its ``PCA`` uses for ``components_``, so results are comparable
    without re-alignment (an all-zero row stays zero; ties go to the first
    largest entry, as ``argmax`` breaks them). Written here so that a party
    process does not import scikit-learn.

    Examples
    --------
    >>> flip_signs(np.array([[0.6, -0.8], [0.0, 0.0]])).tolist()
    [[-0.6, 0.8], [0.0, 0.0]]
    """
    components = np.array(components, dtype=np.float64, copy=True)
    if components.size == 0:
        return components
    pivots = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(components.shape[0]), pivots])
    signs[signs == 0] = 1.0
    return components * signs[:, np.newaxis]


def top_eigenpairs(
    matrix: NDArray[np.float64], k: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Top-``k`` eigenpairs of a symmetric matrix, in decreasing order.

    Returns
    -------
    eigenvalues : ndarray of shape (k,)
        Largest ``k`` eigenvalues, negative round-off clipped to zero.
    components : ndarray of shape (k, d)
        Matching unit eigenvectors as rows, signs fixed by :func:`flip_signs`.
    all_eigenvalues : ndarray of shape (d,)
        Every eigenvalue (clipped at zero), decreasing; their sum is the trace.
    """
    sym = (matrix + matrix.T) / 2.0
    values, vectors = np.linalg.eigh(sym)
    order = np.argsort(values)[::-1]
    values = np.clip(values[order], 0.0, None)
    vectors = vectors[:, order]
    return values[:k], flip_signs(vectors[:, :k].T), values


def leading_eigenpairs(
    matrix: NDArray[np.float64], k: int, *, overwrite: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float]:
    """Top-``k`` eigenpairs of a symmetric matrix without the full spectrum.

    LAPACK's ``syevr`` (``scipy.linalg.eigh(subset_by_index=...)``) computes
    only the eigenvalues ``k + 1`` largest eigenpairs after the tridiagonal
    reduction, about 3x faster than a full ``eigh`` at ``d = 2000`` and
    ``k = 10``. The ``(k+1)``-th eigenvalue is what the Davis-Kahan gap of the
    ``k``-th component needs; the total variance is the trace.

    Parameters
    ----------
    matrix : ndarray of shape (d, d)
        Symmetric; only its lower triangle is read.
    k : int
        Number of eigenpairs, ``1 <= k <= d``.
    overwrite : bool, default=False
        Let LAPACK destroy ``matrix`` instead of copying it (saves one ``d x d``).

    Returns
    -------
    eigenvalues : ndarray of shape (k,)
        Largest ``k`` eigenvalues, decreasing, negative round-off clipped to zero.
    components : ndarray of shape (k, d)
        Matching unit eigenvectors as rows, signs fixed by :func:`flip_signs`.
    leading_values : ndarray of shape (min(k + 1, d),)
        The ``k + 1`` largest eigenvalues (clipped), decreasing.
    trace : float
        Sum of all eigenvalues (before clipping), from the diagonal.
    """
    from scipy.linalg import eigh

    d = matrix.shape[0]
    trace = float(np.trace(matrix))
    top = min(k + 1, d)
    values, vectors = eigh(
        matrix,
        lower=True,
        subset_by_index=[d - top, d - 1],
        driver="evr",
        overwrite_a=overwrite,
        check_finite=False,
    )
    values = np.clip(values[::-1], 0.0, None)
    vectors = vectors[:, ::-1]
    return values[:k], flip_signs(vectors[:, :k].T), values, trace
