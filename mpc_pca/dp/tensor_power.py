"""Robust tensor power method with deflation (Anandkumar, Ge, Hsu, Kakade & Telgarsky, JMLR 2014, Alg. 1).

For a symmetric ``K x K x K`` tensor ``T ~ sum_k lambda_k v_k^(x)3`` with
orthonormal ``v_k`` (after whitening, JSTSP 2018 §5 eq. 3), each eigenpair is
found by:

1. ``n_restarts`` starting points drawn uniformly on the unit sphere; from each,
   up to ``n_iter`` power updates ``theta <- T(I, theta, theta) / ||T(I, theta, theta)||``
   (stopping early once ``||theta_new - theta|| <= tol``);
2. the candidate with the largest ``T(theta, theta, theta)`` is refined by up to
   ``n_iter`` further updates; ``lambda = T(theta, theta, theta)``;
3. deflation ``T <- T - lambda theta^(x)3``, and on to the next pair.

Defaults: ``n_restarts=10``, ``n_iter=100``, ``tol=1e-12``. Anandkumar et al.
(Thm. 5.1) need ``L = poly(K) log(1/eta)`` restarts and
``N = O(log K + log log(lambda_max / eps))`` iterations for their robustness
guarantee; for the small ``K`` here 10 restarts and 100 capped iterations are
ample, and the update converges quadratically near an eigenvector, so an
exactly orthogonally decomposable tensor is recovered to round-off.

For a third-order tensor ``T(theta, theta, theta)`` changes sign with
``theta``; the returned pairs have ``lambda >= 0`` (``theta`` flipped if needed).
The random starting points are post-processing of the (already private)
tensor, so they come from the caller's numpy generator.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError


def _check_positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise InputValidationError(f"{name}={value!r} must be a positive integer")
    return int(value)


def _power_update(tensor: NDArray[np.float64], theta: NDArray[np.float64]) -> NDArray[np.float64]:
    """``T(I, theta, theta)``."""
    return np.einsum("ijl,j,l->i", tensor, theta, theta)


def _value(tensor: NDArray[np.float64], theta: NDArray[np.float64]) -> float:
    """``T(theta, theta, theta)``."""
    return float(np.einsum("ijl,i,j,l->", tensor, theta, theta, theta))


def _iterate(
    tensor: NDArray[np.float64], theta: NDArray[np.float64], n_iter: int, tol: float
) -> NDArray[np.float64]:
    for _ in range(n_iter):
        update = _power_update(tensor, theta)
        norm = float(np.linalg.norm(update))
        if norm == 0.0 or not math.isfinite(norm):
            return theta
        new = update / norm
        if float(np.linalg.norm(new - theta)) <= tol:
            return new
        theta = new
    return theta


def robust_tensor_power_method(
    tensor: NDArray[np.float64],
    n_components: int,
    rng: np.random.Generator,
    *,
    n_restarts: int = 10,
    n_iter: int = 100,
    tol: float = 1e-12,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Eigenpairs of a symmetric third-order tensor by power iterations with restarts and deflation.

    Parameters
    ----------
    tensor : ndarray of shape (K, K, K)
        Symmetric tensor (e.g. the DP whitened third moment).
    n_components : int
        How many eigenpairs to extract, ``1 <= n_components <= K``.
    rng : numpy.random.Generator
        Source of the random starting points.
    n_restarts : int, default=10
        ``L`` of Anandkumar et al. Alg. 1: random starts per eigenpair.
    n_iter : int, default=100
        ``N``: cap on power updates per start and for the final refinement.
    tol : float, default=1e-12
        Stop iterating once successive unit vectors differ by at most ``tol``.

    Returns
    -------
    eigenvalues : ndarray of shape (n_components,)
        ``lambda_k = T_k(theta_k, theta_k, theta_k) >= 0`` in extraction order
        (``T_k`` the deflated tensor).
    eigenvectors : ndarray of shape (n_components, K)
        Unit vectors ``theta_k`` as rows.

    Raises
    ------
    InputValidationError
        If the tensor is not cubic and finite, or a parameter is out of range.
    """
    arr = np.array(tensor, dtype=np.float64, copy=True)
    if arr.ndim != 3 or not (arr.shape[0] == arr.shape[1] == arr.shape[2]) or arr.shape[0] == 0:
        raise InputValidationError(
            f"the tensor power method needs a non-empty K x K x K tensor, got {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise InputValidationError("the tensor holds NaN or infinite entries")
    k_dim = arr.shape[0]
    k = _check_positive_int(n_components, "n_components")
    if k > k_dim:
        raise InputValidationError(f"n_components={k} exceeds the tensor dimension K={k_dim}")
    restarts = _check_positive_int(n_restarts, "n_restarts")
    iterations = _check_positive_int(n_iter, "n_iter")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < math.inf:
        raise InputValidationError(f"tol={tol!r} must be a finite number >= 0")
    values = np.zeros(k)
    vectors = np.zeros((k, k_dim))
    for comp in range(k):
        best, best_value = np.zeros(k_dim), -math.inf
        for _ in range(restarts):
            start = np.asarray(rng.normal(size=k_dim), dtype=np.float64)
            theta = _iterate(arr, start / float(np.linalg.norm(start)), iterations, tol)
            value = _value(arr, theta)
            if value > best_value:
                best, best_value = theta, value
        theta = _iterate(arr, best, iterations, tol)
        lam = _value(arr, theta)
        if lam < 0:
            theta, lam = -theta, -lam
        values[comp] = lam
        vectors[comp] = theta
        arr -= lam * np.einsum("i,j,l->ijl", theta, theta, theta)
    return values, vectors
