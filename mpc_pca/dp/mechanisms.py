"""Differential-privacy mechanisms for PCA and their calibration.

Everything here works on the **second-moment matrix** of rows with bounded
norm. The papers write data as columns (``X`` is ``D x N``, ``A = X X^T / N``);
this package stores rows as samples (``X`` is ``N x D``), so the same matrix
is ``A = X^T X / N`` here. Every row must satisfy ``||x|| <= 1`` (see
:mod:`mpc_pca.dp.preprocessing`).

Neighbouring data sets and sensitivities
----------------------------------------
Each mechanism is calibrated to an explicit :class:`Neighbour` relation:

``replace-one``
    ``D`` and ``D'`` have the same size and differ in one row ``x -> x'``.
    Then ``X^T X - X'^T X' = x x^T - x' x'^T`` has Frobenius norm
    ``sqrt(||x||^4 + ||x'||^4 - 2 (x.x')^2) <= sqrt(2)`` for unit-norm rows,
    attained by orthogonal ``x, x'``. This is the relation the papers state
    (Imtiaz & Sarwate ICASSP 2018 §2, JSTSP 2018 §2), and the bound used here.
``add-remove``
    ``D'`` is ``D`` with one row added or removed, so the Gram matrix changes
    by ``x x^T``, of Frobenius norm ``||x||^2 <= 1``. Dividing by ``N_s`` then
    gives sensitivity ``1/N_s`` **only if ``N_s`` is treated as a public
    constant** (the row count itself is not protected). This reproduces the
    ``1/N_s`` calibration of the papers and of the authors' code; the papers
    quote the spectral-norm bound ``||A_s - A'_s||_2 <= 1/N_s`` of Dwork et al.
    2014, which is smaller than the L2 (Frobenius) bound the Gaussian mechanism
    needs under replace-one.

The symmetric Gaussian noise draws one value per upper-triangle entry, so the
sensitivity that matters is the L2 norm of the upper triangle (diagonal
included) of the difference, which never exceeds its Frobenius norm; the
bounds above are therefore valid for it.

Analyze Gauss (Dwork, Talwar, Thakurta & Zhang, STOC 2014, Alg. 1; ICASSP
2018 Alg. 1 step 3; DPDPCA Alg. 2): ``A + E`` with ``E`` symmetric, its upper
triangle including the diagonal i.i.d. ``N(0, s^2)``. By default ``s`` is the
analytic Gaussian calibration (Balle & Wang, ICML 2018), exact for every
``epsilon``; ``noise_calibration="classical"`` gives the papers'
``s = Delta * sqrt(2 ln(1.25/delta)) / epsilon``, whose proof (Dwork & Roth
2014, Thm A.1) covers only ``epsilon < 1`` and which is refused above it.

Private power method (Hardt & Price 2014, Fig. 3): ``L`` Gaussian releases
``A X_{l-1} + G_l``, composed with zero-concentrated DP (Bun & Steinke 2016).
The conversion ``rho``-zCDP => ``(rho + 2 sqrt(rho ln(1/delta)), delta)``-DP
gives ``(epsilon, delta)`` only for
``epsilon <= 8 (1 - 1/sqrt(2)) ln(1/delta) ~= 2.343 ln(1/delta)``;
:func:`check_power_method_privacy` enforces it.

SN (Imtiaz & Sarwate, ICASSP 2016, Alg. 1) adds Wishart noise. Its authors
retracted its privacy claim: it is **not differentially private** and is kept
only as a comparison baseline; every use emits
:class:`RetractedMechanismWarning`.

Seeds: for reproducible experiments only
----------------------------------------
Every estimator's ``random_state`` derives **all** parties' DP noise (in
capePCA the aggregator's ``f_s``, the noise generator's ``e_s`` and the sites'
``g_s``; in the other protocols every site's and curator's noise) from one
seed via :func:`spawn_generators`. Anyone who knows the seed can regenerate
and subtract all of that noise: **random_state is for reproducible
experiments only; a run with a known seed is not private.** In a deployment
leave ``random_state=None`` (each run draws 128 bits from :mod:`secrets`) and
let each party seed its own generator. The noise of these curator-style
mechanisms comes from numpy's PCG64 and **floating-point** Gaussian sampling:
adequate for studies, but not a hardened DP sampler (Mironov, CCS 2012, shows
floating-point noise can leak the low-order bits of the input). The exact
integer alternative is :mod:`protocols.dp.discrete_gaussian` (discrete
Gaussian, Canonne, Kamath & Steinke 2020, drawn from :mod:`secrets`), which
``PPPCADP`` adds inside the fixed-point ring.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from enum import Enum
from numbers import Integral
from typing import Union

import numpy as np
from numpy.typing import NDArray

from mpc_pca.noise_seeds import noise_root
from mpc_pca.validation import PrivacyLeakWarning, check_positive
from protocols.dp.calibration import CALIBRATIONS, check_calibration, check_delta_value, gaussian_sigma  # noqa: F401  (re-exported)
from protocols.errors import InputValidationError

RandomState = Union[int, np.random.SeedSequence, np.random.Generator, None]  # noqa: UP007


class Neighbour(str, Enum):
    """Which data sets count as neighbours for the differential-privacy guarantee."""

    REPLACE_ONE = "replace-one"
    ADD_REMOVE = "add-remove"


class RetractedMechanismWarning(PrivacyLeakWarning):
    """A mechanism whose privacy claim was retracted by its authors was used (not DP).

    A :class:`~mpc_pca.validation.PrivacyLeakWarning`: one filter or record catches every such cause.
    """


def parse_neighbour(value: Neighbour | str) -> Neighbour:
    """Accept a :class:`Neighbour` or its name (``"replace-one"``, ``"add-remove"``)."""
    if isinstance(value, Neighbour):
        return value
    if isinstance(value, str):
        for member in Neighbour:
            if value.replace("_", "-").lower() == member.value:
                return member
    raise InputValidationError(
        f"neighbour={value!r} is not a neighbour relation; choose one of {[m.value for m in Neighbour]}"
    )


# -- privacy parameters ------------------------------------------------------------


def check_epsilon(epsilon: object, *, allow_inf: bool = True) -> float:
    """Validate the privacy parameter ``epsilon > 0``; ``inf`` switches the noise off.

    Raises
    ------
    InputValidationError
        If ``epsilon`` is not a real number, is NaN, ``<= 0``, or infinite
        while ``allow_inf`` is false.
    """
    return check_positive(epsilon, "epsilon", allow_inf=allow_inf)


def check_delta(delta: object) -> float:
    """Validate the privacy parameter ``0 < delta < 1`` (the error names the value and both limits)."""
    return check_delta_value(delta)


# -- sensitivities ---------------------------------------------------------------------


def gram_sensitivity(neighbour: Neighbour | str, row_norm_bound: float = 1.0) -> float:
    """L2 sensitivity of the Gram matrix ``X^T X`` (upper triangle or Frobenius norm).

    Parameters
    ----------
    neighbour : Neighbour or str
        ``replace-one`` gives ``sqrt(2) b^2``, ``add-remove`` gives ``b^2``.
    row_norm_bound : float, default=1
        The bound ``b`` on every row's Euclidean norm.
    """
    relation = parse_neighbour(neighbour)
    b2 = check_positive(row_norm_bound, "row_norm_bound") ** 2
    return math.sqrt(2.0) * b2 if relation is Neighbour.REPLACE_ONE else b2


def second_moment_sensitivity(
    n_samples: int, neighbour: Neighbour | str, row_norm_bound: float = 1.0
) -> float:
    """L2 sensitivity of ``A = X^T X / N`` for ``N`` rows of norm at most ``row_norm_bound``.

    ICASSP 2018 §3 ("the L2 sensitivity of f(A_s) = A_s is 1/N_s"), with the
    neighbour relation made explicit: ``sqrt(2)/N`` under replace-one,
    ``1/N`` under add-remove with ``N`` public (see the module docstring).
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, Integral) or n_samples < 1:
        raise InputValidationError(f"n_samples={n_samples!r} must be a positive integer")
    return gram_sensitivity(neighbour, row_norm_bound) / int(n_samples)


def gaussian_noise_scale(
    sensitivity: float, epsilon: float, delta: float, calibration: str = "analytic"
) -> float:
    """Standard deviation of the Gaussian mechanism for L2 sensitivity ``Delta``.

    ``calibration="analytic"`` (default): the smallest ``sigma`` for which the
    Gaussian mechanism is ``(epsilon, delta)``-DP, for every ``epsilon``
    (Balle & Wang, ICML 2018, Alg. 1; :mod:`protocols.dp.calibration`).
    ``calibration="classical"``: ``Delta sqrt(2 ln(1.25/delta)) / epsilon``
    (Dwork & Roth 2014, Thm A.1; Analyze Gauss as printed in ICASSP 2018
    Alg. 1 step 3), refused for ``epsilon >= 1`` where its proof does not
    hold. Returns 0 for ``epsilon = inf`` (no privacy, no noise).
    """
    return gaussian_sigma(sensitivity, epsilon, delta, calibration)


#: ``c`` in the private power method's condition ``epsilon <= c ln(1/delta)``:
#: ``rho + 2 sqrt(rho ln(1/delta)) <= epsilon`` with ``rho = epsilon^2 / (8 ln(1/delta))``
#: holds iff ``epsilon <= 8 (1 - 1/sqrt(2)) ln(1/delta)`` (about 2.343).
POWER_METHOD_ZCDP_FACTOR = 8.0 * (1.0 - 1.0 / math.sqrt(2.0))


def power_method_epsilon_limit(delta: float) -> float:
    """Largest ``epsilon`` for which the private power method is ``(epsilon, delta)``-DP.

    ``8 (1 - 1/sqrt(2)) ln(1/delta)``, about ``2.343 ln(1/delta)``: the ``L``
    Gaussian releases of :func:`power_method_noise_scale` are
    ``rho = epsilon^2 / (8 ln(1/delta))``-zCDP (Bun & Steinke 2016: each
    Gaussian release is ``Delta^2 / (2 sigma^2)``-zCDP and zCDP composes
    additively), which implies ``(rho + 2 sqrt(rho ln(1/delta)), delta)``-DP;
    that is at most ``epsilon`` exactly up to this limit.
    """
    return POWER_METHOD_ZCDP_FACTOR * math.log(1.0 / check_delta(delta))


def check_power_method_privacy(epsilon: object, delta: object) -> tuple[float, float]:
    """Validate ``(epsilon, delta)`` for the private power method; ``epsilon = inf`` means no privacy.

    Raises
    ------
    InputValidationError
        If ``epsilon`` or ``delta`` is invalid, or ``epsilon`` is finite and
        exceeds :func:`power_method_epsilon_limit` of ``delta``, where the
        zCDP analysis no longer yields ``(epsilon, delta)``-DP.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    limit = power_method_epsilon_limit(dlt)
    if math.isfinite(eps) and eps > limit:
        raise InputValidationError(
            f"epsilon={eps!r} exceeds the private power method's limit 8 (1 - 1/sqrt(2)) ln(1/delta) "
            f"= {limit:.6g} for delta={dlt!r}; above it the zCDP conversion does not give "
            "(epsilon, delta)-DP. Lower epsilon, lower delta, or pass epsilon=inf for no privacy"
        )
    return eps, dlt


def power_method_noise_scale(sensitivity: float, epsilon: float, delta: float, n_iter: int) -> float:
    """Per-iteration Gaussian noise of the private power method (Hardt & Price 2014, Fig. 3).

    Hardt & Price use ``sigma = epsilon^-1 sqrt(4 p L ln(1/delta)) ||X||_inf``
    for neighbours differing in one matrix entry, whose per-iteration L2
    sensitivity is ``sqrt(p) ||X||_inf``. For the covariance model here the
    per-iteration sensitivity of ``A X_{l-1}`` (orthonormal ``X_{l-1}``) is
    ``||(A - A') X_{l-1}||_F <= ||A - A'||_F = Delta``, so
    ``sigma = Delta sqrt(4 L ln(1/delta)) / epsilon``. By zero-concentrated DP
    (Bun & Steinke 2016) the ``L`` releases are ``rho = epsilon^2 / (8 ln(1/delta))``-zCDP,
    hence ``(epsilon, delta)``-DP whenever ``epsilon <= 8 (1 - 1/sqrt(2)) ln(1/delta)``
    (about ``2.343 ln(1/delta)``).

    Raises
    ------
    InputValidationError
        If ``epsilon`` exceeds that limit (:func:`check_power_method_privacy`),
        ``sensitivity`` is negative or not finite, or ``n_iter < 1``.
    """
    eps, dlt = check_power_method_privacy(epsilon, delta)
    if sensitivity < 0 or not math.isfinite(sensitivity):
        raise InputValidationError(f"sensitivity={sensitivity!r} must be finite and >= 0")
    if isinstance(n_iter, bool) or not isinstance(n_iter, Integral) or n_iter < 1:
        raise InputValidationError(f"n_iter={n_iter!r} must be a positive integer")
    if math.isinf(eps):
        return 0.0
    return sensitivity * math.sqrt(4.0 * int(n_iter) * math.log(1.0 / dlt)) / eps


# -- randomness -----------------------------------------------------------------------


def spawn_generators(random_state: RandomState, n: int) -> list[np.random.Generator]:
    """Independent numpy generators for ``n`` parties' DP noise.

    Parameters
    ----------
    random_state : int, SeedSequence, Generator or None
        ``None`` seeds from :mod:`secrets` (128 bits); an int or
        ``SeedSequence`` gives reproducible noise; a ``Generator`` is asked for
        a 63-bit seed. DP noise may come from numpy generators; MPC masks never do.
        A seed is for reproducible experiments only; a run with a known seed
        is not private (all ``n`` generators follow from it).
    n : int
        Number of generators (one per party, in a fixed party order).
    """
    root = noise_root(random_state)
    seq = root if isinstance(root, np.random.SeedSequence) else np.random.SeedSequence(root)
    return [np.random.default_rng(child) for child in seq.spawn(n)]


# -- Analyze Gauss ----------------------------------------------------------------------


def symmetric_gaussian_noise(d: int, scale: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Symmetric ``d x d`` matrix, upper triangle with diagonal i.i.d. ``N(0, scale^2)``.

    Analyze Gauss noise (Dwork et al. 2014, Alg. 1; ICASSP 2018 Alg. 1 step 3;
    DPDPCA Alg. 2 step 3): ``E_ij`` for ``i <= j`` drawn independently,
    ``E_ji = E_ij``.
    """
    if scale < 0 or not math.isfinite(scale):
        raise InputValidationError(f"noise scale {scale!r} must be finite and >= 0")
    rows, cols = np.triu_indices(d)
    values = rng.normal(0.0, scale, size=rows.size) if scale > 0 else np.zeros(rows.size)
    noise = np.zeros((d, d), dtype=np.float64)
    noise[rows, cols] = values
    noise[cols, rows] = values
    return noise


@dataclass(frozen=True)
class AnalyzeGauss:
    """The Analyze Gauss mechanism for a symmetric matrix of given L2 sensitivity.

    Parameters
    ----------
    epsilon : float
        Privacy parameter, ``> 0`` (``inf`` disables noise).
    delta : float
        Privacy parameter in ``(0, 1)``.
    sensitivity : float
        L2 sensitivity of the matrix's upper triangle under the chosen
        neighbour relation, e.g. :func:`second_moment_sensitivity`.
    calibration : {"analytic", "classical"}, default="analytic"
        See :func:`gaussian_noise_scale`.

    Examples
    --------
    >>> import numpy as np
    >>> mech = AnalyzeGauss(1.0, 1e-5, second_moment_sensitivity(1000, "replace-one"))
    >>> round(mech.scale, 6)
    0.005276
    >>> mech.perturb(np.eye(3), np.random.default_rng(0)).shape
    (3, 3)
    """

    epsilon: float
    delta: float
    sensitivity: float
    calibration: str = "analytic"

    @property
    def scale(self) -> float:
        """Noise standard deviation (analytic or classical calibration, :func:`gaussian_noise_scale`)."""
        return gaussian_noise_scale(self.sensitivity, self.epsilon, self.delta, self.calibration)

    def noise(self, d: int, rng: np.random.Generator) -> NDArray[np.float64]:
        """Draw the symmetric noise matrix ``E``."""
        return symmetric_gaussian_noise(d, self.scale, rng)

    def perturb(self, matrix: NDArray[np.float64], rng: np.random.Generator) -> NDArray[np.float64]:
        """Return ``matrix + E`` (the matrix must be square)."""
        matrix = np.asarray(matrix, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise InputValidationError(f"Analyze Gauss needs a square matrix, got shape {matrix.shape}")
        return matrix + self.noise(matrix.shape[0], rng)


# -- SN (retracted, not DP) ------------------------------------------------------------------


def warn_retracted_sn(stacklevel: int = 2) -> None:
    """Emit the :class:`RetractedMechanismWarning` for SN."""
    warnings.warn(
        "SN (Wishart noise, Imtiaz & Sarwate 2016) was retracted by its authors: it is NOT "
        "differentially private; use it only as a comparison baseline",
        RetractedMechanismWarning,
        stacklevel=stacklevel,
    )


def sn_wishart_scale_retracted_not_dp(epsilon: float, sensitivity: float = 1.0) -> float:
    """Entry standard deviation ``Delta / (2 epsilon)`` of SN's ``Z`` (retracted, not DP).

    As in the SN authors' code; the ICASSP 2016 text states the Wishart scale
    matrix as ``(1 / (2 epsilon)) I`` instead. Neither makes SN private.
    """
    eps = check_epsilon(epsilon)
    return 0.0 if math.isinf(eps) else sensitivity / (2.0 * eps)


def wishart_noise_retracted_not_dp(
    d: int, epsilon: float, rng: np.random.Generator, sensitivity: float = 1.0, *, warn: bool = True
) -> NDArray[np.float64]:
    """SN noise ``E = Z Z^T`` (Imtiaz & Sarwate ICASSP 2016, Alg. 1 steps 2-3). NOT differentially private.

    ``Z`` is ``d x (d + 1)`` with i.i.d. ``N(0, (Delta / (2 epsilon))^2)``
    entries, so ``E ~ Wishart_d(sigma^2 I, d + 1)``: ``E[E_ii] = (d + 1) sigma^2``,
    ``Var(E_ii) = 2 (d + 1) sigma^4``, ``Var(E_ij) = (d + 1) sigma^4``. It is
    meant for the *unnormalised* Gram matrix ``X^T X``. The authors retracted
    the privacy claim; this exists for comparison only and always warns.

    Warns
    -----
    RetractedMechanismWarning
        On every call unless ``warn=False`` (for callers that already warned).
    """
    if warn:
        warn_retracted_sn(stacklevel=3)
    sigma = sn_wishart_scale_retracted_not_dp(epsilon, sensitivity)
    z = rng.normal(0.0, sigma, size=(d, d + 1)) if sigma > 0 else np.zeros((d, d + 1))
    return z @ z.T
