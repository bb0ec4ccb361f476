"""Fixed-point parameters and the public (float) arithmetic of the fast eigensolvers.

Nothing here touches a share: what the holders compute from the revealed
``k x k`` matrices of the ladder (:func:`holder_step`, :func:`noise_floor`,
:func:`choose_power`), what the receiver does with the revealed basis
(:func:`receiver_ritz`), and the fixed-point error bounds reported with the result.
The solvers are :mod:`protocols.tensor.fast_eig` and
:mod:`protocols.tensor.spectrum_eig` (docs/secure_tensor.md, sections 8-9).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError, ProtocolError

#: Fractional bits of the ladder ``P_j``, the iterates and the basis (``2 F = 56``:
#: a product of two entries of magnitude <= 4 stays below ``2^62``).
F = 28
#: Fractional bits of the high-precision ``Ĉ`` used by the Ritz step and the spectrum mode.
F_HI = 32
#: Fractional bits of the high-precision iterate ``X`` the orthonormalisation multiplies.
F_X = 40
#: Fractional bits of the public Cholesky factor ``R^-1`` (``F_X + G_R = 60``).
G_R = 20
#: Largest power index ``j`` (powers up to ``2^6 = 64``).
MAX_POWER_INDEX = 6
#: Largest angle noise an iteration may add (keeps every top-k direction well above resolution).
_MAX_NOISE = 1e-2


def fix_signs(components: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each row times the sign of its largest-magnitude entry (a deterministic sign per component)."""
    pivots = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(components.shape[0]), pivots])
    signs[signs == 0] = 1.0
    return components * signs[:, None]


def noise_floor(d: int, j: int, ratio: float) -> float:
    """Angle noise of an iteration with ``P_j``: its fixed-point error over the k-th direction's strength.

    ``P_j`` is off by about ``2^j sqrt(d) 2^-F`` in norm (each squaring doubles
    the relative error and adds one ulp per entry); the k-th direction of
    ``P_j U`` has relative strength ``ratio^(2^j)`` (``ratio`` estimates
    ``lambda_k / lambda_1``), so the basis can turn by about the quotient.
    """
    strength = max(ratio ** (2**j), 1e-300)
    return 2.0**j * math.sqrt(d) * 2.0**-F / strength


def choose_power(ratio: float, d: int, target: float, current_max: int = MAX_POWER_INDEX) -> int:
    """Largest power index ``j`` whose noise (:func:`noise_floor`) stays below ``target / 2``.

    The ladder solver passes ``target = min(1e-2, max(tol, current bound / 10))``: far from
    convergence a high power's noise is still small against the remaining
    error; near the end the power drops so that the noise stays below ``tol``.
    """
    j = 0
    while j < current_max and noise_floor(d, j + 1, ratio) <= target / 2.0:
        j += 1
    return j


def _angles(n: NDArray[np.float64], m: NDArray[np.float64], g: NDArray[np.float64]) -> float:
    """Sine of the largest principal angle between span(U) and span(X) from ``U^T U``, ``U^T X``, ``X^T X``."""

    def inv_sqrt(a: NDArray[np.float64]) -> NDArray[np.float64]:
        w, v = np.linalg.eigh((a + a.T) / 2.0)
        if w[0] <= 0:
            raise ProtocolError("a revealed Gram matrix is not positive definite: a top-k direction vanished")
        return (v / np.sqrt(w)) @ v.T

    cos = np.linalg.svd(inv_sqrt(n) @ m @ inv_sqrt(g), compute_uv=False)
    return float(np.sqrt(max(0.0, 1.0 - float(np.min(cos)) ** 2)))


def holder_step(
    gram: NDArray[np.float64], cross: NDArray[np.float64], gram_u: NDArray[np.float64], power: int
) -> tuple[NDArray[np.float64], float, float]:
    """At each holder: ``R^-1`` from the Cholesky factor of ``X^T X``, the ratio estimate, the subspace move."""
    sym = (gram + gram.T) / 2.0
    try:
        chol = np.linalg.cholesky(sym)
    except np.linalg.LinAlgError as exc:
        raise ProtocolError(
            "the iterate lost rank: a top-k direction is weaker than fixed point resolves; "
            "rescale the data or choose a smaller n_components"
        ) from exc
    r_inv = np.linalg.inv(chol.T)
    sv = np.sqrt(np.clip(np.linalg.eigvalsh(sym)[::-1], 0.0, None))
    ratio = float((sv[-1] / sv[0]) ** (1.0 / power)) if sv[0] > 0 else 0.0
    moved = _angles(gram_u, cross, sym)
    return r_inv, min(ratio, 1.0), moved


def receiver_ritz(
    basis: NDArray[np.float64], ritz: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Receiver side: orthonormalise the revealed basis (QR in float) and diagonalise the k x k matrix."""
    q, r = np.linalg.qr(basis)
    if np.min(np.abs(np.diag(r))) < 0.5:
        raise ProtocolError("the revealed basis is rank deficient: a top-k direction was lost")
    r_inv = np.linalg.inv(r)
    h = r_inv.T @ ((ritz + ritz.T) / 2.0) @ r_inv
    values, vectors = np.linalg.eigh((h + h.T) / 2.0)
    order = np.argsort(values)[::-1]
    comps = fix_signs((q @ vectors[:, order]).T)
    return comps, np.clip(values[order], 0.0, None)


def ladder_fixed_point_error(d: int, rotation_error: float = 0.0) -> float:
    """Spectral-norm bound of the fixed-point error of the Ritz matrix, in units of ``Ĉ``.

    ``Ĉ_hi`` is off by at most one ulp ``2^-F_HI`` per entry (``d 2^-F_HI`` in
    norm); ``W = Ĉ_hi B`` by one ulp per entry (``sqrt(d k) 2^-F_HI <= d 2^-F_HI``
    in norm), which the receiver's orthonormalisation ``B = Q R`` divides by
    the smallest singular value of ``B = U S``: at least ``1 - rotation_error``
    for a shared rotation ``S~`` within ``rotation_error`` of an orthogonal one
    (:func:`protocols.tensor.joint_rotation.rotation_error_bound`) and an
    orthonormal ``U`` (its own deviation is the iteration's, as before); the
    revealed ``H`` is exact.
    """
    if not 0.0 <= rotation_error < 0.5:
        raise InputValidationError(f"rotation_error={rotation_error} must lie in [0, 0.5)")
    return d * 2.0**-F_HI * (1.0 + 1.0 / (1.0 - rotation_error))
