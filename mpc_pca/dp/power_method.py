"""The private power method (Hardt & Price 2014, Fig. 3; ICASSP 2016 §3).

``L`` noisy power iterations ``Y_l = A X_{l-1} + G_l``, ``X_l = QR(Y_l)``;
noise calibration in :func:`mpc_pca.dp.mechanisms.power_method_noise_scale`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mpc_pca.linalg import flip_signs
from protocols.errors import InputValidationError


def default_power_iterations(d: int) -> int:
    """Data-independent default ``L = max(2, ceil(3 ln D))`` for PPM.

    Enough for the top-``K`` subspace to converge to within ``1e-3`` (noise
    aside) when ``lambda_{K+1} / lambda_K <= 0.7`` roughly; it never reads
    the data.
    """
    return max(2, math.ceil(3.0 * math.log(max(d, 2))))


@dataclass
class PowerMethodResult:
    """Output of :func:`private_power_method`."""

    components: NDArray[np.float64]
    eigenvalues: NDArray[np.float64]
    noise_scale: float
    n_iter: int
    last_product: NDArray[np.float64]


def private_power_method(
    A: NDArray[np.float64],
    k: int,
    noise_scale: float,
    n_iter: int,
    rng: np.random.Generator,
) -> PowerMethodResult:
    """Hardt & Price 2014, Fig. 3: ``Y_l = A X_{l-1} + G_l``, ``X_l R_l = Y_l`` (QR), ``l = 1..L``.

    Parameters
    ----------
    A : ndarray of shape (d, d)
        Symmetric matrix (the curator's second-moment matrix).
    k : int
        Subspace dimension.
    noise_scale : float
        Entry standard deviation of every ``G_l`` (:func:`~mpc_pca.dp.mechanisms.power_method_noise_scale`).
    n_iter : int
        ``L``.
    rng : numpy.random.Generator
        Source of ``X_0`` (a uniformly random orthonormal basis, data-independent) and of the noise.

    Returns
    -------
    PowerMethodResult
        ``components`` are ``X_L``'s columns as rows, ordered by ``|R_L[i, i]|``
        (which estimates the eigenvalues and is returned as ``eigenvalues``).
    """
    if noise_scale < 0 or not math.isfinite(noise_scale):
        raise InputValidationError(f"noise_scale={noise_scale!r} must be finite and >= 0")
    d = A.shape[0]
    x, _ = np.linalg.qr(rng.normal(size=(d, k)))
    y = x
    r = np.eye(k)
    for _ in range(n_iter):
        noise = rng.normal(0.0, noise_scale, size=(d, k)) if noise_scale > 0 else 0.0
        y = A @ x + noise
        x, r = np.linalg.qr(y)
    estimates = np.abs(np.diag(r))
    order = np.argsort(estimates)[::-1]
    return PowerMethodResult(flip_signs(x[:, order].T), estimates[order], noise_scale, n_iter, y)
