"""Recovery error of estimated latent-variable parameters (capeAGN, JSTSP 2018 §5 experiments).

The estimated components are matched to the true ones by the Hungarian
assignment (:func:`scipy.optimize.linear_sum_assignment`) on the pairwise
Euclidean distances (components are only identified up to permutation), and
the error is the relative Frobenius norm
``sqrt(sum_k ||mu_k - mu_hat_pi(k)||^2) / sqrt(sum_k ||mu_k||^2)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linear_sum_assignment

from protocols.errors import InputValidationError


@dataclass(frozen=True)
class Recovery:
    """Errors after matching estimated to true components."""

    component_error: float
    weight_error: float
    assignment: tuple[int, ...]


def recovery_error(
    true_components: NDArray[np.float64],
    true_weights: NDArray[np.float64],
    components: NDArray[np.float64],
    weights: NDArray[np.float64],
) -> Recovery:
    """Match rows by the Hungarian assignment on Euclidean distance; relative errors.

    ``component_error = ||M - M_hat[pi]||_F / ||M||_F`` and
    ``weight_error = ||w - w_hat[pi]||_1``; ``assignment[k]`` is the estimated
    row matched to true row ``k``.
    """
    truth = np.asarray(true_components, dtype=np.float64)
    est = np.asarray(components, dtype=np.float64)
    if truth.shape != est.shape:
        raise InputValidationError(f"component shapes differ: {truth.shape} vs {est.shape}")
    cost = np.linalg.norm(truth[:, None, :] - est[None, :, :], axis=2)
    rows, cols = linear_sum_assignment(cost)
    order = cols[np.argsort(rows)]
    err = float(np.linalg.norm(truth - est[order]) / np.linalg.norm(truth))
    werr = float(np.abs(np.asarray(true_weights) - np.asarray(weights)[order]).sum())
    return Recovery(err, werr, tuple(int(i) for i in order))
