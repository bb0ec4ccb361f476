"""Utility of a PCA subspace: captured energy ``q(V) = tr(V^T A V)``.

ICASSP 2018 eq. (1), ICASSP 2016 eq. (3), JSTSP 2018 §2: for a ``D x K``
matrix ``V`` with orthonormal columns, ``q(V) = tr(V^T A V)`` where ``A`` is
the pooled second-moment matrix; ``q_o = q(V_K(A))`` (the top-``K``
eigenvectors) is the largest possible value, and the papers plot ``q / q_o``.

The estimators store components as **rows** (``components_`` is ``K x D``,
scikit-learn's convention), so here ``V = components.T``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from protocols.errors import InputValidationError

_ORTHONORMAL_TOL = 1e-6


def second_moment(data: ArrayLike | Sequence[ArrayLike]) -> NDArray[np.float64]:
    """Pooled second-moment matrix ``A = X^T X / N`` (rows are samples; no centring).

    Parameters
    ----------
    data : array_like or list of array_like
        One ``(N, D)`` array, or one array per party (their rows are pooled).
    """
    blocks: list[Any]
    if isinstance(data, np.ndarray):
        blocks = [data]
    elif isinstance(data, Sequence) and data and not np.isscalar(data[0]) and np.ndim(data[0]) == 2:
        blocks = list(data)
    else:
        blocks = [data]
    arrays = [np.asarray(b, dtype=np.float64) for b in blocks]
    if any(a.ndim != 2 for a in arrays) or len({a.shape[1] for a in arrays}) != 1:
        raise InputValidationError("second_moment needs 2-D arrays with the same number of columns")
    n = sum(a.shape[0] for a in arrays)
    if n == 0:
        raise InputValidationError("second_moment needs at least one row")
    return sum(a.T @ a for a in arrays) / n


def _check_inputs(A: ArrayLike, components: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    A = np.asarray(A, dtype=np.float64)
    C = np.asarray(components, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise InputValidationError(f"A must be a square matrix, got shape {A.shape}")
    if C.ndim == 1:
        C = C[None, :]
    if C.ndim != 2 or C.shape[1] != A.shape[0]:
        raise InputValidationError(f"components must have shape (k, {A.shape[0]}), got {C.shape}")
    gram = C @ C.T
    if not np.allclose(gram, np.eye(C.shape[0]), atol=_ORTHONORMAL_TOL):
        raise InputValidationError("components must have orthonormal rows (V^T V = I)")
    return A, C


def captured_energy(A: ArrayLike, components: ArrayLike) -> float:
    """``q(V) = tr(V^T A V)`` with ``V = components.T`` (ICASSP 2018 eq. 1).

    Parameters
    ----------
    A : array_like of shape (d, d)
        Symmetric second-moment matrix.
    components : array_like of shape (k, d)
        Orthonormal rows (an estimator's ``components_``).
    """
    A, C = _check_inputs(A, components)
    return float(np.einsum("ij,jk,ik->", C, A, C))


def optimal_captured_energy(A: ArrayLike, k: int) -> float:
    """``q_o``: the sum of the ``k`` largest eigenvalues of ``A`` (the top-``k`` subspace's energy)."""
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise InputValidationError(f"A must be a square matrix, got shape {A.shape}")
    if not 1 <= k <= A.shape[0]:
        raise InputValidationError(f"k={k} must be between 1 and {A.shape[0]}")
    values = np.linalg.eigvalsh((A + A.T) / 2.0)
    return float(np.sum(values[::-1][:k]))


def captured_energy_ratio(A: ArrayLike, components: ArrayLike) -> float:
    """``q(V) / q_o`` in ``[0, 1]`` for positive semi-definite ``A`` (the papers' plots)."""
    A, C = _check_inputs(A, components)
    optimum = optimal_captured_energy(A, C.shape[0])
    if optimum <= 0:
        raise InputValidationError("the optimal captured energy is 0; the ratio is undefined")
    return captured_energy(A, C) / optimum
