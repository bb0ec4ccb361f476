"""Small linear-algebra helpers shared by the PCA protocols."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from protocols.triangle import from_upper_triangle, upper_triangle

__all__ = [
    "assess_dimension",
    "components_for_ratio",
    "flip_signs",
    "from_upper_triangle",
    "infer_dimension",
    "leading_eigenpairs",
    "selected_eigenpairs",
    "top_eigenpairs",
    "upper_triangle",
]


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


def components_for_ratio(spectrum: NDArray[np.float64], fraction: float, total: float | None = None) -> int:
    """Fewest components whose explained variance ratio exceeds ``fraction`` (scikit-learn's rule).

    scikit-learn's ``PCA(n_components=fraction)``: ``searchsorted(cumsum(ratio),
    fraction, side="right") + 1``, so the kept variance is strictly greater
    than ``fraction``; at most ``len(spectrum)``. ``ratio = spectrum / total``,
    ``total`` the total variance (default: the spectrum's sum); pass the one
    ``explained_variance_ratio_`` is computed with, so that a fraction read
    off those ratios selects as it does in scikit-learn.

    Examples
    --------
    >>> components_for_ratio(np.array([6.0, 3.0, 1.0]), 0.6)
    2
    >>> components_for_ratio(np.array([6.0, 3.0, 1.0]), 0.59)
    1
    """
    total = float(np.sum(spectrum)) if total is None else total
    ratios = spectrum / total if total > 0 else np.zeros_like(spectrum)
    k = int(np.searchsorted(np.cumsum(ratios), fraction, side="right")) + 1
    return min(k, spectrum.shape[0])


def assess_dimension(spectrum: NDArray[np.float64], rank: int, n_samples: int) -> float:
    """Minka's log-likelihood of a rank-``rank`` model of ``spectrum`` (scikit-learn's ``_assess_dimension``).

    T. P. Minka, "Automatic Choice of Dimensionality for PCA", NIPS 2000.
    Written here, vectorized, so the server process does not import
    scikit-learn; the tests compare it with scikit-learn's.
    """
    from math import lgamma, log, pi

    d = spectrum.shape[0]
    if not 1 <= rank < d:
        raise ValueError(f"the tested rank should be in [1, n_features - 1], got {rank} for {d} features")
    eps = 1e-15
    if spectrum[rank - 1] < eps:
        return -np.inf
    pu = -rank * log(2.0) + sum(
        lgamma((d - i + 1) / 2.0) - log(pi) * (d - i + 1) / 2.0 for i in range(1, rank + 1)
    )
    pl = -float(np.sum(np.log(spectrum[:rank]))) * n_samples / 2.0
    v = max(eps, float(np.sum(spectrum[rank:])) / (d - rank))
    pv = -log(v) * n_samples * (d - rank) / 2.0
    m = d * rank - rank * (rank + 1.0) / 2.0
    pp = log(2.0 * pi) * (m + rank) / 2.0
    floored = np.array(spectrum, dtype=np.float64, copy=True)
    floored[rank:] = v
    i, j = np.triu_indices(d, k=1, m=d)
    keep = i < rank
    i, j = i[keep], j[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.log((spectrum[i] - spectrum[j]) * (1.0 / floored[j] - 1.0 / floored[i]))
    pa = float(np.sum(terms)) + i.shape[0] * log(n_samples)
    return pu + pl + pv + pp - pa / 2.0 - rank * log(n_samples) / 2.0


def infer_dimension(spectrum: NDArray[np.float64], n_samples: int) -> int:
    """Minka's MLE of the number of components: ``PCA(n_components="mle")``, in ``[1, d - 1]``."""
    likelihoods = [-np.inf] + [assess_dimension(spectrum, r, n_samples) for r in range(1, spectrum.shape[0])]
    return int(np.argmax(likelihoods))


def selected_eigenpairs(
    matrix: NDArray[np.float64], rule: float | str, n_samples: int, *, overwrite: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float]:
    """Eigenpairs of a covariance matrix, their number chosen from the whole spectrum.

    ``rule`` is a variance fraction in ``(0, 1)`` (:func:`components_for_ratio`)
    or ``"mle"`` (:func:`infer_dimension`), applied, as scikit-learn's
    ``PCA(svd_solver="full")`` does, to the ``min(n_samples, d)`` largest
    eigenvalues. Returns what :func:`leading_eigenpairs` returns for the
    chosen ``k``.
    """
    from scipy.linalg import eigh

    d = matrix.shape[0]
    trace = float(np.trace(matrix))
    # the driver leading_eigenpairs uses, so both give the same eigenvalues
    values, vectors = eigh(
        matrix,
        lower=True,
        subset_by_index=[0, d - 1],
        driver="evr",
        overwrite_a=overwrite,
        check_finite=False,
    )
    values = np.clip(values[::-1], 0.0, None)
    vectors = vectors[:, ::-1]
    spectrum = values[: min(n_samples, d)]
    if rule == "mle":
        k = infer_dimension(spectrum, n_samples)
    else:  # the ratios of explained_variance_ratio_ (PPPCAModel): relative to the trace
        k = components_for_ratio(spectrum, float(rule), max(trace, 0.0))
    return values[:k], flip_signs(vectors[:, :k].T), values[: min(k + 1, d)], trace
