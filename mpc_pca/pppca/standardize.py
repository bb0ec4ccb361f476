"""The matrix the PPPCA server eigendecomposes: covariance or correlation, with its error bound.

Liu et al. (AAAI 2020), Alg. 2 step 8: the server forms ``C = G / (N - 1)``
from the pooled centred Gram matrix ``G``. With ``standardize=True`` it
forms instead the covariance of the standardized rows
``z = (x - mean) / sigma`` with ``sigma_j^2 = G_jj / N`` (scikit-learn's
``StandardScaler``: population variance, a zero variance left unscaled):

    C_z = diag(1/sigma) G diag(1/sigma) / (N - 1).

``sigma`` is the diagonal of ``G``, which the server reconstructs anyway, so
standardizing costs no message and reveals nothing the covariance does not.
The eigenvectors of ``C_z`` are scikit-learn's ``PCA`` components after
``StandardScaler``; the consumer's projections use
``T_eff = diag(1/sigma) T`` applied to the centred raw rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class ServerMatrix:
    """The matrix to eigendecompose and what is needed to report on it."""

    matrix: NDArray[np.float64]
    #: Per-column divisor (pooled standard deviation), all ones without standardization.
    scale: NDArray[np.float64]
    #: Bound on the spectral norm of the rounding error of ``matrix``.
    eta: float


def server_matrix(
    gram: NDArray[np.float64],
    n_samples: int,
    entry_error: NDArray[np.float64],
    standardize: bool,
    *,
    overwrite: bool = False,
) -> ServerMatrix:
    """Covariance (or standardized covariance) from the pooled Gram matrix.

    Parameters
    ----------
    gram : ndarray of shape (d, d)
        Pooled centred Gram matrix in the data's units.
    n_samples : int
        ``N``.
    entry_error : ndarray of shape (d,)
        ``u`` such that entry ``(j, k)`` of ``gram`` is off by at most
        ``u_j u_k`` because of fixed-point rounding.
    standardize : bool
        Divide each column by its pooled standard deviation first.
    overwrite : bool, default=False
        Scale ``gram`` in place instead of a copy (the server holds one ``d x d``).
        The result is symmetric up to rounding; eigensolvers read one triangle.

    Notes
    -----
    The error ``E`` of ``W G W / (N - 1)`` (``W`` diagonal) has entries at
    most ``w_j u_j w_k u_k / (N - 1)``, so ``||E||_2 <= ||E||_F <=
    sum_j (w_j u_j)^2 / (N - 1)``. With standardization ``sigma_j^2`` itself
    carries the relative error ``delta_j = u_j^2 / G_jj``; each entry of the
    (correlation-like, ``|C_jk| <= N/(N-1)``) matrix then moves by at most
    about ``max_j delta_j`` more, adding ``d max_j delta_j N/(N-1)``.
    """
    scale, eta = scale_and_error(np.diag(gram), n_samples, entry_error, standardize)
    matrix = gram if overwrite else gram.copy()
    if standardize:  # W G W in place, one row and one column factor at a time
        weights = 1.0 / scale
        matrix *= weights[:, None]
        matrix *= weights[None, :]
    matrix /= n_samples - 1
    return ServerMatrix(matrix, scale, eta)


def scale_and_error(
    gram_diagonal: NDArray[np.float64], n_samples: int, entry_error: NDArray[np.float64], standardize: bool
) -> tuple[NDArray[np.float64], float]:
    """Per-column divisors and the error bound ``eta`` of :func:`server_matrix`, from the diagonal alone.

    Both depend only on ``diag(G)``, so the pre-flight check needs no ``d x d``
    matrix (see :func:`server_matrix` for the derivation).
    """
    d = gram_diagonal.shape[0]
    diag = np.clip(gram_diagonal, 0.0, None)
    scale = np.ones(d)
    extra = 0.0
    if standardize:
        variance = diag / n_samples
        # A variance within rounding of zero is a constant column: left unscaled, as StandardScaler does.
        constant = diag <= 4.0 * entry_error**2
        scale = np.where(constant, 1.0, np.sqrt(np.where(constant, 1.0, variance)))
        with np.errstate(divide="ignore", invalid="ignore"):
            delta = np.where(constant, 0.0, entry_error**2 / np.where(constant, 1.0, diag))
        extra = d * float(np.max(delta, initial=0.0)) * n_samples / (n_samples - 1)
    weights = 1.0 / scale
    eta = float(np.sum((weights * entry_error) ** 2)) / (n_samples - 1) + extra
    return scale, eta
