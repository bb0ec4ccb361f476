"""Check 4's eigen-residual, opened column by column (:mod:`mpc_pca.pppca.answer_check`).

The server claims ``R V = V Λ`` (PPPCA, Liu et al., AAAI 2020, Alg. 2 step 8: ``T`` the top-``k``
eigenvectors of the pooled covariance; ``R = diag(σ)^-1 C diag(σ)^-1``, ``V = diag(σ) T``). The
providers open the whole residual ``(R V - V Λ) / λ_1``, ``d k`` numbers, in one secure sum: each
provider adds ``a ∘ G_i (a ∘ v_j) / ((N - 1) λ_1)`` for every column ``v_j`` of ``V`` (``G_i`` its
centred Gram matrix, ``a = 2^E / σ`` the units of ``R``), provider0 subtracts ``V Λ / λ_1``. Every
provider refuses the answer when one column's norm exceeds the per-column tolerance

    ``|(R V - V Λ) e_j| / λ_1 <= 4 ε + √d ν``   for every ``j``,

``ε`` the run's relative error (:func:`~mpc_pca.pppca.answer_check.relative_error`) and ``ν`` the
opening's fixed-point error per entry (:attr:`~mpc_pca.pppca.check_opening.CheckOpening.noise`).
This is the tolerance the former random combination ``r`` had per unit ``|r|``, applied with
``r = e_j`` to each column, so no column escapes because a random ``r`` nearly missed it: the
refusal is deterministic.

Honest side (no probability involved). The honest ``(V, Λ)`` are exact eigenpairs of a matrix
``R_h`` with ``|R - R_h|_2 <= ε λ_1`` (the server's fixed-point rounding and LAPACK's backward
error, or the secure eigensolve's Ritz residual with ``reveal="components"``), so
``(R V - V Λ) e_j = (R - R_h) v_j`` has norm at most ``ε λ_1 |v_j| <= ε λ_1 (1 + k τ_o)`` with
``τ_o <= 1e-6`` check 1's orthonormality tolerance. The providers' float products add a relative
``d 2^-52`` (far below ``ε >= 1e-9``), and the opening at most ``ν`` per entry, ``√d ν`` per
column. Hence ``4 ε + √d ν`` is never exceeded by an honest answer.

What the providers see. An honest answer opens to zero up to those bounds, so the opening tells
them nothing they did not know. A refused (dishonest) run shows every provider ``R V / λ_1``, the
pooled covariance applied to the ``k`` columns the server chose (the opening plus the public
``V Λ / λ_1``); with the random combination it showed one vector ``R V r / λ_1``. The server
itself learns no opening; a server colluding with provider0 learns ``R V`` for a ``V`` of its
choice, of at most ``n_components`` columns, by cheating once (and is refused).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.top_k_check import gram_times

__all__ = ["column_tolerance", "residual_columns", "worst_column"]


def residual_columns(
    stats: LocalStatistics,
    mean: NDArray[np.float64],
    basis: NDArray[np.float64],
    eigenvalues: NDArray[np.float64],
    a_hat: NDArray[np.float64],
    n_total: int,
    lam1: float,
    subtract_claim: bool,
) -> NDArray[np.float64]:
    """This provider's ``d k`` summands of ``(R V - V Λ) / λ_1``, column after column.

    ``a_hat = a / √λ_1``; ``subtract_claim`` (provider0 only) subtracts ``V Λ / λ_1``.
    """
    columns = [a_hat * gram_times(stats, mean, a_hat * basis[:, j]) for j in range(basis.shape[1])]
    residual = np.stack(columns, axis=1) / (n_total - 1)
    if subtract_claim:
        residual -= basis * (eigenvalues / lam1)
    return np.asarray(residual.ravel(order="F"))


def column_tolerance(relative: float, d: int, noise: float) -> float:
    """``4 ε + √d ν``: the largest honest ``|(R V - V Λ) e_j| / λ_1`` (module docstring)."""
    return 4.0 * relative + math.sqrt(d) * noise


def worst_column(opened: NDArray[np.float64], d: int, k: int) -> tuple[int, float]:
    """The column of the opened ``d k`` residual with the largest norm, and that norm."""
    norms = np.linalg.norm(opened[: d * k].reshape(k, d), axis=1)
    worst = int(np.argmax(norms)) if k else 0
    return worst, float(norms[worst]) if k else 0.0
