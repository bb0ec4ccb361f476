"""Gibbs sampling from the matrix Bingham distribution on the Stiefel manifold.

The exponential mechanism of PPCA (Chaudhuri, Sarwate & Sinha 2013; ICASSP
2016 §3) samples ``V`` with density proportional to ``exp(tr(V^T B V))``;
:func:`sample_matrix_bingham` draws it by Gibbs sweeps over pairs of columns.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def bingham_pair_sweeps(
    eigenvalues: NDArray[np.float64], y: NDArray[np.float64], n_sweeps: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Gibbs sweeps for the vector Bingham density ``exp(sum_i lambda_i y_i^2)`` on the unit sphere.

    Works in the eigen-coordinates of the Bingham matrix. Each sweep pairs the
    coordinates at random; for a pair ``(i, j)`` the others are held fixed, so
    ``(y_i, y_j) = r (cos phi, sin phi)`` with ``r`` fixed and, given the
    rest, ``phi`` has density proportional to
    ``exp(r^2 (lambda_i - lambda_j) / 2 * cos(2 phi))``: ``2 phi`` is von Mises
    with concentration ``r^2 (lambda_i - lambda_j) / 2``, sampled exactly, and
    ``phi`` is either half-angle with probability 1/2. Disjoint pairs are
    conditionally independent, so a sweep updates them all at once.

    Parameters
    ----------
    eigenvalues : ndarray of shape (m,)
    y : ndarray of shape (batch, m)
        Current unit vectors (independent chains); updated copy returned.
    n_sweeps : int
    rng : numpy.random.Generator
    """
    y = np.array(y, dtype=np.float64, copy=True)
    m = eigenvalues.size
    if m < 2:
        return y * rng.choice([-1.0, 1.0], size=y.shape)
    for _ in range(n_sweeps):
        perm = rng.permutation(m)
        i, j = perm[0 : m - 1 : 2], perm[1:m:2]
        r2 = y[:, i] ** 2 + y[:, j] ** 2
        kappa = r2 * (eigenvalues[i] - eigenvalues[j]) / 2.0
        centre = np.where(kappa >= 0, 0.0, np.pi)
        psi = rng.vonmises(centre, np.abs(kappa))
        phi = psi / 2.0 + np.pi * rng.integers(0, 2, size=psi.shape)
        r = np.sqrt(r2)
        y[:, i] = r * np.cos(phi)
        y[:, j] = r * np.sin(phi)
        y /= np.linalg.norm(y, axis=1, keepdims=True)
    return y


def sample_matrix_bingham(
    B: NDArray[np.float64],
    k: int,
    rng: np.random.Generator,
    *,
    n_sweeps: int = 100,
    inner_sweeps: int = 3,
) -> NDArray[np.float64]:
    """Gibbs sampler for the matrix Bingham density ``exp(tr(V^T B V))`` on ``d x k`` orthonormal ``V``.

    Column-wise Gibbs in the manner of Hoff (2009): given the other columns,
    column ``j`` is ``N z`` where ``N`` is an orthonormal basis of their
    orthogonal complement and ``z`` is vector-Bingham with matrix
    ``N^T B N``, updated by :func:`bingham_pair_sweeps`. Starts from a
    uniformly random (data-independent) orthonormal ``V``.

    Returns
    -------
    ndarray of shape (d, k)
    """
    d = B.shape[0]
    v, _ = np.linalg.qr(rng.normal(size=(d, k)))
    for _ in range(n_sweeps):
        for j in rng.permutation(k):
            others = np.delete(v, j, axis=1)
            basis = np.linalg.qr(others, mode="complete")[0][:, k - 1 :] if k > 1 else np.eye(d)
            values, vectors = np.linalg.eigh(basis.T @ B @ basis)
            coords = vectors.T @ (basis.T @ v[:, j])
            coords /= np.linalg.norm(coords)
            coords = bingham_pair_sweeps(values, coords[None, :], inner_sweeps, rng)[0]
            v[:, j] = basis @ (vectors @ coords)
        v, _ = np.linalg.qr(v)  # remove round-off drift; the span and each column's direction are kept
    return v
