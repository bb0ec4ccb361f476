"""Public (float) arithmetic of the block Krylov eigensolver: what the holders do with the revealed Grams.

Nothing here touches a share. :func:`protocols.tensor.krylov_eig.krylov_eigenvectors`
reveals to the holders, after each block ``j``, the Gram matrices of the shared
Krylov basis ``K = [U_0 .. U_j]`` and of its image ``X = [X_0 .. X_j]``
(``X_i = 2^s Ĉ U_i`` up to one truncation ulp per entry): ``S = K^T K``,
``H = K^T X`` and ``Q = X^T X``. From them the holders compute, in float:

* the Rayleigh-Ritz pairs of ``2^s Ĉ`` on ``span K`` (:func:`ritz_pairs`, the
  generalized problem ``sym(H) y = theta S y``: the basis need not be exactly
  orthonormal, its Gram is opened as it is);
* the residual of each Ritz pair, ``|X y - theta K y|^2 = y^T Q y - theta^2``
  exactly in the opened quantities;
* the stop rule's angle bound (:func:`angle_bound`), and
* the public coefficients that orthonormalize the next block against every
  previous one (:func:`next_block_coefficients`, full reorthogonalization).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from protocols.errors import ProtocolError

#: Fractional bits of the public coefficient matrices (applied to 30-bit values: ``30 + 30 = 60``).
G_K = 30


def _sym(a: NDArray[np.float64]) -> NDArray[np.float64]:
    return (a + a.T) / 2.0


def _cholesky(a: NDArray[np.float64], what: str) -> NDArray[np.float64]:
    """Lower Cholesky factor of ``a``; :class:`ProtocolError` naming ``what`` when ``a`` is not positive definite."""
    try:
        return np.asarray(np.linalg.cholesky(_sym(a)), dtype=np.float64)
    except np.linalg.LinAlgError as exc:
        raise ProtocolError(
            f"the revealed {what} is not positive definite: the Krylov basis lost rank "
            "(a top-k direction weaker than fixed point resolves); rescale the data or choose a "
            "smaller n_components"
        ) from exc


@dataclass(frozen=True)
class RitzState:
    """The holders' view after one block: Ritz pairs, residuals and the stop rule's bound."""

    #: Ritz values of ``2^s Ĉ`` (decreasing, ``k``) and their coefficient vectors in ``K`` (``Y^T S Y = I``).
    values: NDArray[np.float64]
    vectors: NDArray[np.float64]
    #: ``|X y_i - theta_i K y_i|`` per Ritz pair, from the opened Grams.
    residuals: NDArray[np.float64]
    #: Bound on ``tan`` of the largest angle between ``span(K Y)`` and the top-k eigenspace.
    bound: float
    #: Whether the truncation noise estimate is at least the opened residual (more blocks cannot help).
    noise_bound: bool = False


def ritz_pairs(
    s_gram: NDArray[np.float64], h_gram: NDArray[np.float64], q_gram: NDArray[np.float64], k: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Top-``k`` Rayleigh-Ritz pairs of ``sym(H) y = theta S y`` and their residual norms.

    Returns ``(theta, Y, r)`` with ``Y^T S Y = I`` and ``r_i^2 = (Y^T Q Y)_ii - theta_i^2``
    (``|X y - theta K y|^2 = y^T Q y - 2 theta y^T H y + theta^2 y^T S y``, and
    ``y^T H y = theta``, ``y^T S y = 1``), clipped at 0.
    """
    lower = _cholesky(s_gram, "Gram matrix K^T K of the Krylov basis")
    inv = np.linalg.inv(lower)
    values, vectors = np.linalg.eigh(_sym(inv @ _sym(h_gram) @ inv.T))
    order = np.argsort(values)[::-1][:k]
    theta = values[order]
    y = inv.T @ vectors[:, order]
    quad = np.einsum("ij,ik,kj->j", y, _sym(q_gram), y)
    residuals = np.sqrt(np.clip(quad - theta**2, 0.0, None))
    return theta, y, residuals


def krylov_noise(d: int, y: NDArray[np.float64], frac_bits: int) -> float:
    """About the Frobenius norm of ``(2^s Ĉ K - X) Y``: one truncation ulp per entry of each ``X_i``.

    Each ``X_i`` is ``2^s Ĉ_hi U_i`` truncated to ``frac_bits`` bits (off by less
    than one ulp per entry, independently): ``|E y| ~ 2^-f sqrt(d) |y|`` for a
    coefficient vector ``y``; summed over the ``k`` Ritz vectors in quadrature,
    ``2^-f sqrt(d) |Y|_F``. (The worst case ``2^-f sqrt(d n) |Y|_F``, ``n`` the
    basis width, is reached only by adversarial rounding.)
    """
    return 2.0**-frac_bits * math.sqrt(d) * float(np.linalg.norm(y))


def angle_bound(theta: NDArray[np.float64], residual_norm: float, eigengap: float) -> float:
    """``tan`` bound of the stop rule: Davis-Kahan's ``sin Theta <= |R|_F / delta`` with the assumed gap.

    ``R = Ĉ V - V Theta`` for the Ritz basis ``V`` (``|R|_F <= residual_norm``,
    the opened residuals plus the truncation noise). By Kahan's theorem there
    are ``k`` eigenvalues of ``Ĉ`` within ``|R|_2`` of ``theta_1 .. theta_k``;
    when they are the top ``k`` (the random start meets every top direction,
    probability 1), ``lambda_k <= theta_k + |R|_2`` and the assumed eigengap
    ``lambda_(k+1) <= (1 - g) lambda_k`` leaves every other eigenvalue at least
    ``delta = g theta_k - (1 - g) |R|_2`` below ``theta_k``. ``inf`` when ``delta <= 0``
    or the sine bound reaches 1.
    """
    theta_k = float(theta[-1])
    delta = eigengap * theta_k - (1.0 - eigengap) * residual_norm
    if delta <= 0.0:
        return math.inf
    sine = residual_norm / delta
    if sine >= 1.0:
        return math.inf
    return sine / math.sqrt(1.0 - sine * sine)


def ritz_angle_bound(theta: NDArray[np.float64], residuals: NDArray[np.float64], eigengap: float) -> float:
    """``tan`` bound of the stop rule from each Ritz pair's own distance to the unwanted spectrum.

    ``residuals[i]`` bounds ``|r_i| = |Ĉ v_i - theta_i v_i|`` (opened residual plus truncation
    noise) for the orthonormal Ritz vectors ``v_i``. As in :func:`angle_bound`,
    ``lambda_(k+1) <= mu = (1 - g)(theta_k + |R|_F)``. With ``P`` the projector on the
    eigenvectors of ``lambda_(k+1) ..`` (it commutes with ``Ĉ``), ``P r_i = (Ĉ - theta_i) P v_i``
    and ``Ĉ - theta_i`` is at least ``theta_i - mu`` in size on ``range P``, so
    ``|P v_i| <= |r_i| / (theta_i - mu)`` and ``sin^2 Theta <= |P V|_F^2 <= sum_i (|r_i| / (theta_i - mu))^2``.
    Never above :func:`angle_bound` (whose denominator is ``theta_k - mu`` for every pair), and
    much below it when ``theta_1 >> theta_k``: the truncation noise of the top pairs, scaled by
    ``lambda_1``, is weighed against their own gap, not against ``g theta_k``.
    ``inf`` when ``theta_k <= mu`` or the sine bound reaches 1.
    """
    values = np.asarray(theta, dtype=np.float64)
    r = np.asarray(residuals, dtype=np.float64)
    mu = (1.0 - eigengap) * (float(values[-1]) + float(np.linalg.norm(r)))
    gaps = values - mu
    if float(gaps[-1]) <= 0.0:
        return math.inf
    sine = float(np.linalg.norm(r / gaps))
    if sine >= 1.0:
        return math.inf
    return sine / math.sqrt(1.0 - sine * sine)


def ritz_state(
    grams: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]],
    k: int,
    d: int,
    eigengap: float,
    frac_bits: int,
) -> RitzState:
    """The holders' Ritz pairs and angle bound (:func:`ritz_angle_bound`) from the opened ``(S, H, Q)``.

    Each pair's residual is its opened one plus its truncation noise ``2^-f sqrt(d) |y_i|``
    (:func:`krylov_noise` of one coefficient vector).
    """
    s_gram, h_gram, q_gram = grams
    theta, y, residuals = ritz_pairs(s_gram, h_gram, q_gram, k)
    noises = np.array([krylov_noise(d, y[:, i], frac_bits) for i in range(y.shape[1])])
    bound = ritz_angle_bound(theta, residuals + noises, eigengap)
    noise_bound = float(np.linalg.norm(noises)) >= float(np.linalg.norm(residuals))
    return RitzState(theta, y, residuals, bound, noise_bound)


def next_block_coefficients(
    s_gram: NDArray[np.float64], h_last: NDArray[np.float64], q_last: NDArray[np.float64], width: int
) -> NDArray[np.float64] | None:
    """Public ``M`` with ``U_(j+1) = [K, X_j] M`` orthonormal and orthogonal to ``span K``; ``None`` at breakdown.

    ``h_last = K^T X_j`` and ``q_last = X_j^T X_j``. With ``C = S^-1 K^T X_j`` the
    projection coefficients (full reorthogonalization against every block), ``X' = X_j - K C``
    has Gram ``G' = q_last - h_last^T C = W diag(w) W^T``; its leading directions give
    ``U_(j+1) = X' W_w diag(w_w)^(-1/2)``, i.e. ``M = [-C; I] W_w diag(w_w)^(-1/2)``.
    At most ``width`` columns (below the block size when the basis fills ``d`` columns), and
    only the directions that have not (numerically) vanished, ``w > 1e-12 tr(q_last)``: a
    vanished direction is deflated (the next block is narrower; block Lanczos deflation), not
    a reason to stop, since where the eigenvalues span many orders of magnitude ``X'`` keeps
    a resolved residual beside directions at ``lambda_d^2``. ``None`` when no direction is
    left: the Krylov space is invariant within fixed point, and the current Ritz pairs are final.
    """
    coeffs = np.linalg.solve(_sym(s_gram), h_last)
    values, vectors = np.linalg.eigh(_sym(q_last - h_last.T @ coeffs))
    order = np.argsort(values)[::-1][:width]
    scale = float(np.trace(_sym(q_last)))
    order = order[values[order] > 1e-12 * scale] if scale > 0.0 else order[:0]
    if order.size == 0:
        return None
    right = vectors[:, order] / np.sqrt(values[order])
    return np.vstack([-coeffs @ right, right])


def scale_exponent(trace_exponent: int) -> int:
    """``s`` with ``2^s lambda_1(Ĉ) < 1`` from ``e = floor(log2 tr(Ĉ^2))``.

    ``lambda_1 <= |Ĉ|_F = sqrt(tr Ĉ^2) < 2^((e + 1) / 2)``, so ``s = floor(-(e + 1) / 2)``
    keeps every product of the scaled iterate below one in magnitude; ``s >= 0``
    because ``tr Ĉ^2 <= (tr Ĉ)^2 <= 1``.
    """
    return max(0, math.floor(-(trace_exponent + 1) / 2.0))


def predicted_blocks(gap_ratio: float, start_tan: float, target: float) -> int:
    """Chebyshev prediction of the blocks block Krylov needs to reach ``tan <= target``.

    For a block method started at angle ``tan_0`` from the top-k space, ``tan`` after ``q``
    blocks (Krylov degree ``q - 1``) is at most about ``tan_0 / T_(q-1)(1 + 2 gamma)`` with
    ``gamma = gap_ratio`` (e.g. ``(lambda_k - lambda_(b+1)) / lambda_(b+1)`` for block size ``b``
    on a PSD matrix; ``g / (1 - g)`` for block size ``k`` and relative gap ``g``), and
    ``T_m(1 + 2 gamma) >= zeta^m / 2`` with ``zeta = 1 + 2 gamma + 2 sqrt(gamma + gamma^2)``:
    ``q = 1 + ceil(ln(2 tan_0 / target) / ln zeta)``, of order ``ln(1 / target) / (2 sqrt(gamma))``
    for small ``gamma`` (subspace iteration: ``ln(1 / target) / gamma``).
    """
    zeta = 1.0 + 2.0 * gap_ratio + 2.0 * math.sqrt(gap_ratio + gap_ratio**2)
    return 1 + max(0, math.ceil(math.log(2.0 * start_tan / target) / math.log(zeta)))
