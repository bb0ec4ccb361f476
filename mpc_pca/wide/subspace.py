"""Randomized block subspace iteration on a pooled covariance that is never formed (the plaintext reference).

The matrix is the pooled covariance of every site's rows,

    C = (1 / (N - 1)) sum_s (X_s - mu)^T (X_s - mu),

or, with ``standardize=True``, ``D^-1 C D^-1`` with ``D`` the pooled
(population) standard deviations, as scikit-learn's ``StandardScaler``
followed by ``PCA`` (a constant column is left unscaled). The only access to
the rows is a block product ``product(W) = sum_s X_s^T (X_s W)`` of the raw
rows with a ``(d, b)`` block, plus the pooled column sums (and sums of
squares, to standardize) and ``N``. Centring and scaling are applied to the
block (:func:`covariance_operator`):

    C_D Q = D^-1 (product(D^-1 Q) - N mu (mu^T D^-1 Q)) / (N - 1),

so no centred copy of the rows and no ``d x d`` array is ever made: the
working set is a few ``(d, b)`` blocks and ``(b, b)`` matrices.

Algorithm (Halko, Martinsson and Tropp 2011, Alg. 4.4 on the symmetric
``C``; scikit-learn's ``randomized_svd`` settings):

1. ``b = min(k + n_oversamples, d)``; the start block ``Omega`` is ``d x b``
   standard normal from the public seed (:func:`start_block`), ``Q_0 = qr(Omega)``.
2. Each step ``i`` makes one product ``Y_i = C Q_{i-1}``. Its Rayleigh-Ritz
   pairs on ``span(Q_{i-1})`` come with it at no further product:
   ``B_i = Q_{i-1}^T Y_i`` (``b x b``), ``B_i = U diag(theta) U^T``, Ritz vectors
   ``V = Q_{i-1} U``, and ``C V = Y_i U``, so the residuals
   ``r_j = ||C v_j - theta_j v_j||`` are exact. Then ``Q_i = qr(Y_i)``
   (re-orthonormalised every step).
3. Stop rule: after step ``i`` (``i >= 2``) the run stops with
   ``stop="tol"`` when the top ``k`` Ritz values moved by at most ``tol``
   relative to themselves since step ``i - 1`` and every residual is at most
   ``tol * theta_1``; else after ``iterated_power + 1`` products
   (``stop="iterated_power"``). The result is the Ritz pairs of the last
   product: ``iterated_power`` power iterations then one Rayleigh-Ritz
   product, the ``iterated_power + 1`` products of ``C`` that scikit-learn's
   ``randomized_svd(n_iter=iterated_power)`` makes as ``2 iterated_power + 2``
   passes over the data matrix. ``iterated_power=None`` is its ``"auto"``:
   7 if ``k < 0.1 min(N, d)``, else 4.

The bound reported (:class:`SubspaceResult`): for a symmetric ``C`` and a
unit ``v``, some eigenvalue of ``C`` lies within ``r = ||C v - theta v||`` of
``theta``, and if the other eigenvalues are at least ``delta`` away from
``theta`` the angle between ``v`` and that eigenvector has
``sin <= r / delta`` (Davis and Kahan). ``residual_bound = max_j r_j / theta_1``.
The residuals do not prove that the eigenvalues found are the top ``k``: a
randomized start misses a direction with probability that falls
exponentially with the oversampling (Halko et al., Thm. 10.8).

Every party of the secure protocol (:mod:`mpc_pca.wide.roles`) runs this same
code; only its ``product`` is a secure sum, so a secure run and this
reference started from the same seed differ by the fixed-point rounding of
the products alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mpc_pca.linalg import flip_signs
from protocols.errors import InputValidationError

#: ``(d, b) -> (d, b)``: a product of a matrix with a block.
BlockProduct = Callable[[NDArray[np.float64]], NDArray[np.float64]]

#: Why a run stopped.
STOP_TOL = "tol"
STOP_ITERATIONS = "iterated_power"


@dataclass(frozen=True)
class Moments:
    """The pooled statistics that centre and scale the covariance.

    Attributes
    ----------
    n_samples : int
        ``N``, at least 2.
    mean : ndarray of shape (d,)
        The pooled column means ``mu``.
    scale : ndarray of shape (d,)
        The divisors ``D`` (pooled standard deviations, ones without standardization).
    """

    n_samples: int
    mean: NDArray[np.float64]
    scale: NDArray[np.float64]


def pooled_moments(
    column_sums: NDArray[np.float64],
    n_samples: int,
    column_squares: NDArray[np.float64] | None = None,
    variance_floor: float = 0.0,
) -> Moments:
    """``mu`` and ``D`` from the pooled sums (and sums of squares, to standardize).

    ``D_j^2 = sum x_j^2 / N - mu_j^2`` (the population variance, as
    ``StandardScaler``); a column whose variance is within rounding of zero
    (at most ``16 eps`` of its mean square, or at most ``variance_floor``: the
    secure run's bound for sums rounded to fixed point) is left unscaled (``D_j = 1``).

    Raises
    ------
    InputValidationError
        If ``N < 2`` or the sums are not finite.
    """
    if n_samples < 2:
        raise InputValidationError(f"the sites hold {n_samples} row(s) in total; PCA needs at least 2")
    sums = np.asarray(column_sums, dtype=np.float64)
    if not np.all(np.isfinite(sums)):
        raise InputValidationError("the pooled column sums are not finite")
    mean = sums / n_samples
    if column_squares is None:
        return Moments(int(n_samples), mean, np.ones_like(mean))
    square_mean = np.asarray(column_squares, dtype=np.float64) / n_samples
    variance = square_mean - mean**2
    constant = variance <= np.maximum(16 * np.finfo(np.float64).eps * square_mean, variance_floor)
    scale = np.where(constant, 1.0, np.sqrt(np.where(constant, 1.0, variance)))
    return Moments(int(n_samples), mean, scale)


def covariance_operator(product: BlockProduct, moments: Moments) -> BlockProduct:
    """``Q -> C_D Q`` from the raw block product (module notes): centring and scaling applied to the block."""
    n, mean, scale = moments.n_samples, moments.mean, moments.scale

    def apply(block: NDArray[np.float64]) -> NDArray[np.float64]:
        weighted = block / scale[:, None]
        image = np.array(product(weighted), dtype=np.float64)
        image -= n * np.outer(mean, mean @ weighted)
        image /= scale[:, None]
        image /= n - 1
        return image

    return apply


def block_size(n_components: int, n_oversamples: int, n_features: int) -> int:
    """``b = min(k + n_oversamples, d)``."""
    return min(int(n_components) + int(n_oversamples), int(n_features))


def auto_power(n_components: int, n_samples: int, n_features: int) -> int:
    """scikit-learn's ``n_iter="auto"``: 7 if ``k < 0.1 min(N, d)``, else 4."""
    return 7 if n_components < 0.1 * min(n_samples, n_features) else 4


def start_block(n_features: int, width: int, seed: int) -> NDArray[np.float64]:
    """The public start block ``Omega``: ``d x b`` standard normal from ``seed`` (PCG64).

    Every party derives it from the announced seed; it is public, not secret
    randomness (no CSPRNG is needed or used).
    """
    return np.random.Generator(np.random.PCG64(int(seed))).standard_normal((int(n_features), int(width)))


def orthonormal(block: NDArray[np.float64]) -> NDArray[np.float64]:
    """An orthonormal basis of the columns of a ``d x b`` block (Householder QR, ``d >= b``)."""
    return np.linalg.qr(block, mode="reduced")[0]


@dataclass(frozen=True)
class RitzPairs:
    """The top Rayleigh-Ritz pairs of ``span(basis)`` and their exact residuals.

    Attributes
    ----------
    values : ndarray of shape (k,)
        Ritz values, decreasing.
    vectors : ndarray of shape (d, k)
        Ritz vectors as columns (unit, orthogonal), signs as :func:`mpc_pca.linalg.flip_signs`.
    residuals : ndarray of shape (k,)
        ``||C v_j - theta_j v_j||``.
    top : float
        The largest Ritz value of the block, ``theta_1``.
    """

    values: NDArray[np.float64]
    vectors: NDArray[np.float64]
    residuals: NDArray[np.float64]
    top: float


def rayleigh_ritz(basis: NDArray[np.float64], image: NDArray[np.float64], k: int) -> RitzPairs:
    """Ritz pairs of ``C`` on ``span(basis)`` from ``image = C basis`` (no further product)."""
    small = basis.T @ image
    small = (small + small.T) / 2.0
    values, rotation = np.linalg.eigh(small)
    order = np.argsort(values)[::-1][:k]
    values, rotation = values[order], rotation[:, order]
    vectors = basis @ rotation
    signs = np.sign(np.sum(flip_signs(vectors.T) * vectors.T, axis=1))
    signs[signs == 0] = 1.0
    vectors *= signs
    rotation = rotation * signs
    residuals = np.linalg.norm(image @ rotation - vectors * values, axis=0)
    return RitzPairs(values, vectors, residuals, float(values[0]) if values.size else 0.0)


def value_change(ritz: RitzPairs, previous: RitzPairs | None) -> float:
    """Largest change of a top-``k`` Ritz value since the previous step, relative to itself (``inf``: no previous)."""
    if previous is None:
        return float("inf")
    floor = np.finfo(np.float64).eps * max(ritz.top, np.finfo(np.float64).tiny)
    moved = np.abs(ritz.values - previous.values) / np.maximum(np.abs(ritz.values), floor)
    return float(np.max(moved))


def settled(ritz: RitzPairs, change: float, tol: float) -> bool:
    """The stop rule: Ritz values moved by at most ``tol`` relatively and residuals at most ``tol theta_1``."""
    return ritz.top > 0 and change <= tol and bool(np.all(ritz.residuals <= tol * ritz.top))


@dataclass(frozen=True)
class SubspaceResult:
    """The top-``k`` eigenpairs found and how far they can be from exact.

    Attributes
    ----------
    components : ndarray of shape (k, d)
        Unit eigenvector estimates as rows (deterministic signs).
    eigenvalues : ndarray of shape (k,)
        The Ritz values, decreasing.
    residuals : ndarray of shape (k,)
        ``||C v_j - theta_j v_j||``: some eigenvalue of ``C`` is within
        ``residuals[j]`` of ``eigenvalues[j]``.
    residual_bound : float
        ``max_j residuals[j] / theta_1`` (``theta_1``: the block's top Ritz value).
    value_change : float
        Largest relative change of a top-``k`` Ritz value at the last step (``inf`` after one step).
    stop : str
        ``"tol"`` (the stop rule held) or ``"iterated_power"`` (the cap was reached).
    n_products : int
        Products with ``C`` made.
    block_size : int
        ``b``.
    """

    components: NDArray[np.float64]
    eigenvalues: NDArray[np.float64]
    residuals: NDArray[np.float64]
    residual_bound: float
    value_change: float
    stop: str
    n_products: int
    block_size: int

    def report(self) -> dict[str, object]:
        """The JSON fields of the stop rule."""
        return {
            "stop": self.stop,
            "n_products": self.n_products,
            "block_size": self.block_size,
            "residual_bound": self.residual_bound,
            "residuals": self.residuals.tolist(),
            "value_change": self.value_change,
        }


def check_solver_settings(
    n_components: int, n_oversamples: int, iterated_power: int | None, tol: float | None
) -> None:
    """Refuse solver settings that are not what they say (before anything is sent)."""
    for name, value, low in (("n_components", n_components, 1), ("n_oversamples", n_oversamples, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise InputValidationError(f"{name} must be an integer of at least {low}, got {value!r}")
    if iterated_power is not None and (
        isinstance(iterated_power, bool)
        or not isinstance(iterated_power, (int, np.integer))
        or iterated_power < 0
    ):
        raise InputValidationError(
            f"iterated_power must be None (auto) or an integer >= 0, got {iterated_power!r}"
        )
    if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 1):
        raise InputValidationError(f"tol must be None (no early stop) or a number in (0, 1), got {tol!r}")


def subspace_iteration(
    apply: BlockProduct,
    start: NDArray[np.float64],
    n_components: int,
    iterated_power: int,
    tol: float | None = None,
) -> SubspaceResult:
    """Steps 1-3 of the module notes with ``apply = Q -> C Q`` and the start block ``Omega``."""
    width = start.shape[1]
    basis = orthonormal(start)
    previous: RitzPairs | None = None
    for step in range(1, iterated_power + 2):
        image = apply(basis)
        if image.shape != basis.shape or not np.all(np.isfinite(image)):
            raise InputValidationError(f"the block product gave {image.shape}, expected finite {basis.shape}")
        ritz = rayleigh_ritz(basis, image, n_components)
        change = value_change(ritz, previous)
        done_tol = tol is not None and settled(ritz, change, tol)
        if done_tol or step == iterated_power + 1:
            top = ritz.top if ritz.top > 0 else 1.0
            return SubspaceResult(
                np.ascontiguousarray(ritz.vectors.T), np.clip(ritz.values, 0.0, None), ritz.residuals,
                float(np.max(ritz.residuals) / top), change, STOP_TOL if done_tol else STOP_ITERATIONS,
                step, width,
            )  # fmt: skip
        previous = ritz
        basis = orthonormal(image)
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns at its last step


def randomized_pca(
    product: BlockProduct,
    column_sums: NDArray[np.float64],
    n_samples: int,
    n_components: int,
    *,
    column_squares: NDArray[np.float64] | None = None,
    n_oversamples: int = 10,
    iterated_power: int | None = None,
    tol: float | None = None,
    seed: int = 0,
) -> tuple[SubspaceResult, Moments]:
    """The plaintext reference: the top ``k`` components of the pooled (standardized) covariance.

    Parameters
    ----------
    product : callable
        ``W -> sum_s X_s^T (X_s W)`` over the sites' raw rows (e.g.
        :func:`mpc_pca.wide.site.site_product` summed over sites).
    column_sums : ndarray of shape (d,)
        ``sum_s X_s^T 1``.
    n_samples : int
        ``N``.
    n_components : int
        ``k``, ``1 <= k <= min(d, N)``.
    column_squares : ndarray of shape (d,), optional
        ``sum_s sum_r x_rj^2``: given, the columns are standardized.
    n_oversamples, iterated_power, tol, seed
        Module notes.

    Returns
    -------
    result : SubspaceResult
    moments : Moments
        The mean and scale used (for the sites' scores, :func:`mpc_pca.wide.site.site_scores`).
    """
    d = int(np.asarray(column_sums).shape[0])
    check_solver_settings(n_components, n_oversamples, iterated_power, tol)
    if n_components > min(d, n_samples):
        raise InputValidationError(
            f"n_components={n_components} exceeds min(n_features={d}, n_samples={n_samples})"
        )
    moments = pooled_moments(column_sums, n_samples, column_squares)
    power = auto_power(n_components, n_samples, d) if iterated_power is None else int(iterated_power)
    start = start_block(d, block_size(n_components, n_oversamples, d), seed)
    result = subspace_iteration(covariance_operator(product, moments), start, n_components, power, tol)
    return result, moments


__all__ = [
    "STOP_ITERATIONS",
    "STOP_TOL",
    "BlockProduct",
    "Moments",
    "RitzPairs",
    "SubspaceResult",
    "auto_power",
    "block_size",
    "check_solver_settings",
    "covariance_operator",
    "orthonormal",
    "pooled_moments",
    "randomized_pca",
    "rayleigh_ritz",
    "settled",
    "start_block",
    "subspace_iteration",
    "value_change",
]
