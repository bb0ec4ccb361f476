"""The non-private linear algebra of (cape)AGN: whitening, tensor decomposition, un-whitening.

Anandkumar et al. (JMLR 2014, §4.3 and §5.1) and JSTSP 2018 §5:

1. whitening ``W = U_K Lambda_K^(-1/2)`` from the top-``K`` eigenpairs of the
   (noisy) ``M2``, so ``W^T M2 W = I_K`` and ``M3(W, W, W)`` is orthogonally
   decomposable with eigenvalues ``lambda_k = 1/sqrt(w_k)`` and eigenvectors
   ``v_k = sqrt(w_k) W^T mu_k``;
2. the robust tensor power method (:mod:`mpc_pca.dp.tensor_power`);
3. un-whitening ``mu_k = lambda_k B v_k`` with ``B = U_K Lambda_K^(1/2)``
   (``= (W^T)^+``) and ``w_k = 1 / lambda_k^2``.

Everything here is post-processing of DP releases. Two guards keep it defined
when noise has destroyed the signal (the result is then poor, not an error):
eigenvalues of ``M2`` below ``EIGENVALUE_FLOOR`` times the largest are raised
to that floor (so ``||W||_2`` stays finite), and tensor eigenvalues are floored
at the same relative level before ``1 / lambda^2``. When no eigenvalue of
``M2`` is positive (the noise swamped the signal, or a MOG ``sigma`` exceeds
the data's spread), the floor is taken relative to the largest magnitude
instead, and :class:`NoSignalWarning` says that the result carries no signal:
the release is already made (and charged), so a result with that warning
beats an error. Only an ``M2`` of zeros (nothing to scale by) raises
:class:`ProtocolError`.

For the single topic model the components are probability vectors; the noisy
estimates are projected onto the simplex (Euclidean projection, Duchi et al.
2008). Weights are normalised to sum to 1 for both models.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mpc_pca.dp.tensor_power import robust_tensor_power_method
from protocols.errors import ProtocolError

#: Relative floor on the eigenvalues used for whitening and un-whitening.
EIGENVALUE_FLOOR = 1e-6


class NoSignalWarning(UserWarning):
    """The combined ``M2`` has no positive eigenvalue: the decomposition runs, its result carries no signal."""


@dataclass(frozen=True)
class PowerMethodOptions:
    """Parameters of the robust tensor power method (defaults: Anandkumar et al. Alg. 1, see the module)."""

    n_restarts: int = 10
    n_iter: int = 100
    tol: float = 1e-12


@dataclass
class Whitening:
    """``W`` (``D x K``), ``B = (W^T)^+`` (``D x K``) and the eigenvalues of ``M2`` they use."""

    matrix: NDArray[np.float64]
    unwhitening: NDArray[np.float64]
    eigenvalues: NDArray[np.float64]
    floored: bool


def whitening_from_second_moment(m2: NDArray[np.float64], k: int) -> Whitening:
    """``W = U_K Lambda_K^(-1/2)`` from the top-``K`` eigenpairs of the symmetric ``M2``.

    Eigenvalues below ``EIGENVALUE_FLOOR`` times the largest are raised to
    that floor; with no positive eigenvalue, the floor is relative to the
    largest magnitude and :class:`NoSignalWarning` is emitted (module docstring).

    Raises
    ------
    ProtocolError
        If ``M2`` is not finite or is zero.
    """
    sym = (np.asarray(m2, dtype=np.float64) + np.asarray(m2, dtype=np.float64).T) / 2.0
    if not np.all(np.isfinite(sym)):
        raise ProtocolError("the combined second moment M2 is not finite")
    values, vectors = np.linalg.eigh(sym)
    scale = float(np.max(np.abs(values))) if values.size else 0.0
    if scale == 0.0:
        raise ProtocolError("the combined second moment M2 is zero; nothing to whiten")
    order = np.argsort(values)[::-1][:k]
    values, vectors = values[order], vectors[:, order]
    if values[0] <= 0:
        warnings.warn(
            f"the combined M2 has no positive eigenvalue (largest {values[0]:.3g}): the result carries no "
            "signal; the DP noise swamped it (more rows or a larger epsilon) or, for model='mog', sigma "
            "exceeds the data's spread",
            NoSignalWarning,
            stacklevel=2,
        )
    floor = EIGENVALUE_FLOOR * (values[0] if values[0] > 0 else scale)
    floored = bool(np.any(values < floor))
    values = np.maximum(values, floor)
    root = np.sqrt(values)
    return Whitening(vectors / root, vectors * root, values, floored)


def project_to_simplex(vectors: NDArray[np.float64]) -> NDArray[np.float64]:
    """Euclidean projection of every row onto the probability simplex (Duchi et al., ICML 2008)."""
    v = np.asarray(vectors, dtype=np.float64)
    d = v.shape[1]
    u = np.sort(v, axis=1)[:, ::-1]
    cumulative = np.cumsum(u, axis=1) - 1.0
    ranks = np.arange(1, d + 1)
    valid = u - cumulative / ranks > 0
    rho = d - 1 - np.argmax(valid[:, ::-1], axis=1)
    theta = cumulative[np.arange(v.shape[0]), rho] / (rho + 1)
    return np.maximum(v - theta[:, None], 0.0)


def decompose_whitened(
    tensor: NDArray[np.float64],
    whitening: Whitening,
    model: str,
    rng: np.random.Generator,
    options: PowerMethodOptions,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Power method on ``M3(W, W, W)``, then un-whitening.

    Returns
    -------
    components : ndarray of shape (K, D)
        ``mu_k`` (simplex-projected for ``model="stm"``).
    weights : ndarray of shape (K,)
        ``w_k = 1 / lambda_k^2``, normalised to sum to 1.
    eigenvalues : ndarray of shape (K,)
        The tensor eigenvalues ``lambda_k`` (before flooring).
    """
    k = whitening.matrix.shape[1]
    if not np.all(np.isfinite(tensor)):
        raise ProtocolError("the combined whitened third moment is not finite")
    lambdas, vectors = robust_tensor_power_method(
        tensor, k, rng, n_restarts=options.n_restarts, n_iter=options.n_iter, tol=options.tol
    )
    top = float(np.max(lambdas)) if lambdas.size else 0.0
    safe = np.maximum(lambdas, EIGENVALUE_FLOOR * max(top, 1e-300))
    components = (safe[:, None] * vectors) @ whitening.unwhitening.T
    if model == "stm":
        components = project_to_simplex(components)
    weights = 1.0 / safe**2
    return components, weights / weights.sum(), lambdas
