"""The wide benchmark's references on the pooled matrix: the exact decomposition, scikit-learn's, and the comparisons.

The pooled cohort is one ``(N, d)`` float64 array here (a benchmark's ground
truth, never a party's). The exact top-``k`` decomposition of the pooled
standardized covariance ``C = Z^T Z / (N - 1)`` (``d x d``: never formed) is
taken from the ``N x N`` Gram matrix ``G = Z Z^T / (N - 1)``, which has the same
nonzero eigenvalues; its eigenvectors ``u_j`` give the components
``v_j = Z^T u_j / sqrt((N - 1) lambda_j)`` (:func:`exact_top`). ``Z`` is made
from the raw rows **in place** (:func:`standardize_in_place`), so the pooled
matrix exists once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import eigh
from scipy.optimize import linear_sum_assignment

from mpc_pca.wide.subspace import Moments

#: Rows per block when a pooled array is standardized in place.
STANDARDIZE_ROWS = 512


def standardize_in_place(rows: NDArray[np.float64], moments: Moments) -> NDArray[np.float64]:
    """``rows`` turned into ``(rows - mu) / D`` block by block (no second copy); returned for chaining."""
    for start in range(0, rows.shape[0], STANDARDIZE_ROWS):
        block = rows[start : start + STANDARDIZE_ROWS]
        block -= moments.mean
        block /= moments.scale
    return rows


def exact_top(centred: NDArray[np.float64], k: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Top ``k`` eigenvalues (decreasing) and components ``(k, d)`` of ``Z^T Z / (N - 1)`` via the Gram matrix.

    ``centred`` is ``Z`` (centred, and scaled when standardizing). LAPACK's
    ``syevr`` finds only the top ``k`` eigenpairs of ``G`` (scipy's
    ``subset_by_index``).
    """
    n = centred.shape[0]
    gram = np.dot(centred, centred.T)  # A A^T: BLAS syrk, N x N
    gram /= n - 1
    values, vectors = eigh(gram, subset_by_index=[n - k, n - 1], driver="evr", overwrite_a=True)
    del gram
    values, vectors = values[::-1], vectors[:, ::-1]
    components = (centred.T @ vectors) / np.sqrt((n - 1) * values)
    return values, np.ascontiguousarray(components.T)


def sklearn_top(
    centred: NDArray[np.float64], k: int, n_oversamples: int, n_iter: int, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """scikit-learn's ``randomized_svd`` of ``Z`` (as ``PCA(svd_solver="randomized")``): eigenvalues and components."""
    from sklearn.utils.extmath import randomized_svd

    _, singular, components = randomized_svd(
        centred, k, n_oversamples=n_oversamples, n_iter=n_iter, random_state=seed
    )
    return singular**2 / (centred.shape[0] - 1), components


def subspace_sine(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """Sine of the largest principal angle between the row spaces of two orthonormal ``(k, d)`` sets."""
    return float(np.linalg.norm(a.T - b.T @ (b @ a.T), 2))


def component_sines(a: NDArray[np.float64], b: NDArray[np.float64]) -> list[float]:
    """Per component, the sine of the angle between ``a[j]`` and ``b[j]`` (sign-free)."""
    cosines = np.clip(np.abs(np.sum(a * b, axis=1)), 0.0, 1.0)
    return np.sqrt(np.maximum(0.0, 1.0 - cosines**2)).tolist()


def aligned(estimate: NDArray[np.float64], exact: NDArray[np.float64]) -> NDArray[np.float64]:
    """``estimate``'s rows with the signs of ``exact``'s rows."""
    signs = np.sign(np.sum(estimate * exact, axis=1))
    signs[signs == 0] = 1.0
    return estimate * signs[:, None]


def accuracy(
    values: NDArray[np.float64],
    components: NDArray[np.float64],
    exact_values: NDArray[np.float64],
    exact_components: NDArray[np.float64],
    n_structure: int,
) -> dict[str, Any]:
    """Subspace angles and eigenvalue errors against the exact decomposition: the structure components and all ``k``."""
    relative = np.abs(values - exact_values) / exact_values
    top = slice(0, n_structure)
    return {
        "structure_subspace_sine": subspace_sine(components[top], exact_components[top]),
        "structure_max_eigenvalue_relative_error": float(np.max(relative[top])),
        "all_k_subspace_sine": subspace_sine(components, exact_components),
        "component_sines": component_sines(components, exact_components),
        "eigenvalue_relative_errors": relative.tolist(),
    }


def agreement(labels: NDArray[np.int64], other: NDArray[np.int64]) -> float:
    """Share of individuals given the same cluster by two labelings, up to relabelling (the best matching)."""
    size = int(max(labels.max(), other.max())) + 1
    table = np.zeros((size, size), dtype=np.int64)
    np.add.at(table, (labels, other), 1)
    rows, cols = linear_sum_assignment(-table)
    return float(table[rows, cols].sum() / labels.size)


def clusters(scores: NDArray[np.float64], n_clusters: int, seed: int) -> NDArray[np.int64]:
    """k-means (scikit-learn, 10 starts, a fixed seed) of the individuals' scores."""
    from sklearn.cluster import KMeans

    return KMeans(n_clusters, n_init=10, random_state=seed).fit_predict(scores).astype(np.int64)


__all__ = [
    "accuracy",
    "agreement",
    "aligned",
    "clusters",
    "component_sines",
    "exact_top",
    "sklearn_top",
    "standardize_in_place",
    "subspace_sine",
]
