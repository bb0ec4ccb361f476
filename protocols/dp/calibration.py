"""Noise calibration of the Gaussian mechanism: analytic (Balle & Wang 2018) and classical.

A Gaussian mechanism releases ``f(D) + N(0, sigma^2 I)`` for a query of L2
sensitivity ``Delta``. Two ways to choose ``sigma`` for ``(epsilon, delta)``-DP:

``"analytic"`` (default)
    Balle & Wang, "Improving the Gaussian Mechanism for Differential Privacy:
    Analytical Calibration and Optimal Denoising", ICML 2018, Thm 8 / Alg. 1.
    The mechanism is ``(epsilon, delta)``-DP **if and only if**

        Phi(Delta/(2 sigma) - epsilon sigma/Delta)
            - e^epsilon Phi(-Delta/(2 sigma) - epsilon sigma/Delta) <= delta,

    valid for every ``epsilon > 0``. The left side decreases in ``sigma``, so
    the smallest valid ``sigma`` is found by bisection. Alg. 1 searches over
    ``v`` or ``u`` with the substitution ``sigma = alpha Delta / sqrt(2 eps)``;
    searching ``log(sigma / Delta)`` directly on the exact condition is
    equivalent and, evaluated in log space (``scipy.special.log_ndtr``) with
    the increment ``log Phi(a) - log Phi(b)`` integrated rather than
    subtracted, stays accurate (the returned ``sigma`` is private and minimal
    to 1e-6, checked against 700-digit arithmetic) from ``epsilon = 1e-300``
    to ``1e5`` and ``delta`` down to ``1e-300``.
``"classical"``
    ``sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon`` (Dwork & Roth 2014,
    Thm A.1). Its proof needs ``epsilon < 1``; :func:`gaussian_sigma` refuses
    ``epsilon >= 1`` for it.

Examples
--------
>>> round(analytic_gaussian_sigma(1.0, 0.5, 1e-5), 2), round(classical_gaussian_sigma(1.0, 0.5, 1e-5), 2)
(7.03, 9.69)
>>> round(analytic_gaussian_sigma(1.0, 1.0, 1e-5), 2)
3.73
"""

from __future__ import annotations

import math
from functools import cache
from numbers import Real

import numpy as np
from numpy.typing import NDArray
from scipy.special import log_ndtr

from protocols.errors import InputValidationError

CALIBRATIONS = ("analytic", "classical")

# log(sigma / Delta) is searched in [_LOG_LO, _LOG_HI]; beyond these the float
# result would underflow or overflow anyway (exp(+-709) is the float range).
_LOG_LO = -700.0
_LOG_HI = 700.0
_BISECTION_STEPS = 200


def check_epsilon_value(epsilon: object) -> float:
    """``epsilon > 0``, finite or ``inf``; raise naming the value and the limit otherwise."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real):
        raise InputValidationError(f"epsilon must be a real number, got {epsilon!r}")
    eps = float(epsilon)
    if math.isnan(eps) or eps <= 0:
        raise InputValidationError(f"epsilon={epsilon!r} is invalid; it must be > 0 (or inf for no privacy)")
    return eps


def check_delta_value(delta: object) -> float:
    """``0 < delta < 1``; raise naming the value and the limit otherwise."""
    if isinstance(delta, bool) or not isinstance(delta, Real):
        raise InputValidationError(f"delta must be a real number, got {delta!r}")
    dlt = float(delta)
    if math.isnan(dlt) or not 0.0 < dlt < 1.0:
        raise InputValidationError(f"delta={delta!r} is invalid; it must satisfy 0 < delta < 1")
    return dlt


def check_calibration(calibration: object) -> str:
    """Validate a Gaussian calibration name (``"analytic"`` or ``"classical"``)."""
    if not isinstance(calibration, str) or calibration not in CALIBRATIONS:
        raise InputValidationError(
            f"noise_calibration={calibration!r} is not supported; choose one of {list(CALIBRATIONS)}"
        )
    return calibration


def log_gaussian_delta(ratio: float, epsilon: float) -> float:
    """``log delta`` of the Gaussian mechanism with ``sigma / Delta = ratio`` at ``epsilon``.

    Balle & Wang 2018, Thm 8: ``delta = Phi(a) - e^eps Phi(b)`` with
    ``a = 1/(2 ratio) - eps ratio`` and ``b = -1/(2 ratio) - eps ratio``,
    computed as ``log Phi(a) + log(-expm1(gap))`` with
    ``gap = eps - (log Phi(a) - log Phi(b)) < 0``, so that neither ``e^eps``
    nor the difference of two tiny numbers is formed. For a small ``epsilon``
    the solution has ``a - b = 1/ratio`` tiny and ``log Phi(a) - log Phi(b)``
    comparable to ``eps``; that increment comes from :func:`_log_cdf_increment`
    (a quadrature, not a difference of two nearly equal logarithms, which
    would lose every digit once ``ratio`` is near 1e15). Returns ``-inf`` when
    ``delta`` underflows.
    """
    half, mid = 0.5 / ratio, -epsilon * ratio  # a = mid + half, b = mid - half
    log_pa = float(log_ndtr(mid + half))
    if log_pa == -math.inf:
        return -math.inf
    gap = epsilon - _log_cdf_increment(mid, half)  # < 0 always: the mechanism's delta is positive
    if gap >= 0.0:  # only through round-off at the extremes; delta is then 0 to float precision
        return -math.inf
    return log_pa + math.log(-math.expm1(gap))


@cache
def _gauss_legendre(points: int = 24) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Gauss-Legendre nodes and weights on ``[-1, 1]``."""
    nodes, weights = np.polynomial.legendre.leggauss(points)
    return nodes, weights


def _log_cdf_increment(mid: float, half: float) -> float:
    """``log Phi(mid + half) - log Phi(mid - half)``, to full relative precision when ``half <= 1/2``.

    The increment is the integral of ``(log Phi)'(t) = phi(t) / Phi(t)`` over
    ``[mid - half, mid + half]``; this derivative is analytic and smooth (its
    nearest complex singularities, the zeros of ``Phi``, are about 2 away from
    the real axis), so 24-point Gauss-Legendre on an interval of length at
    most 1 is exact to rounding. The interval is given by its centre and
    half-width, not by its ends: for ``sigma / Delta`` near 1e13 the ends
    ``mid +- half`` would round away a percent of the width. Longer intervals
    subtract the two logarithms, whose difference is then at least of the
    order of the interval length.
    """
    if half > 0.5:
        return float(log_ndtr(mid + half)) - float(log_ndtr(mid - half))
    nodes, weights = _gauss_legendre()
    t = mid + half * nodes
    # Callers stop first when log Phi(a) is -inf, i.e. before t^2 could overflow; exp's
    # overflow warning at the search's far end (sigma/Delta = e^700) is harmless.
    with np.errstate(over="ignore"):
        slope = np.exp(-0.5 * t * t - 0.5 * math.log(2.0 * math.pi) - log_ndtr(t))
    return half * float(np.dot(weights, slope))


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """The exact ``delta`` of a Gaussian mechanism (Balle & Wang 2018, Thm 8) at ``epsilon``."""
    if sigma <= 0 or sensitivity <= 0:
        raise InputValidationError(f"sigma={sigma!r} and sensitivity={sensitivity!r} must be > 0")
    return math.exp(log_gaussian_delta(sigma / sensitivity, epsilon))


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest ``sigma`` making the Gaussian mechanism ``(epsilon, delta)``-DP (Balle & Wang 2018, Alg. 1).

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity ``Delta >= 0`` (0 gives 0).
    epsilon : float
        ``> 0``; ``inf`` gives 0.
    delta : float
        In ``(0, 1)``.

    Raises
    ------
    InputValidationError
        For invalid parameters, or when ``sigma`` does not fit a float
        (``epsilon`` so small that ``sigma`` overflows, or so large that it
        underflows to 0 while ``epsilon`` is finite).
    """
    eps = check_epsilon_value(epsilon)
    dlt = check_delta_value(delta)
    delta_ = _check_sensitivity(sensitivity)
    if math.isinf(eps) or delta_ == 0.0:
        return 0.0
    target = math.log(dlt)
    lo, hi = _LOG_LO, _LOG_HI
    if log_gaussian_delta(math.exp(hi), eps) > target:
        raise InputValidationError(
            f"epsilon={epsilon!r} with delta={delta!r} needs sigma/Delta above e^{_LOG_HI:g}, which does "
            "not fit a float; use a larger epsilon or delta"
        )
    if log_gaussian_delta(math.exp(lo), eps) <= target:
        raise InputValidationError(
            f"epsilon={epsilon!r} is so large that sigma/Delta would be below e^{_LOG_LO:g}; pass "
            "epsilon=inf for no noise or use a smaller epsilon"
        )
    # Invariant: delta(e^lo) > target >= delta(e^hi). Bisection on log(sigma / Delta).
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if log_gaussian_delta(math.exp(mid), eps) > target:
            lo = mid
        else:
            hi = mid
    sigma = delta_ * math.exp(hi)
    return _check_sigma(sigma, eps, dlt)


def classical_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """``Delta sqrt(2 ln(1.25/delta)) / epsilon`` (Dwork & Roth 2014, Thm A.1; valid for ``epsilon < 1``).

    This function computes the formula for any ``epsilon`` (for comparisons
    and tables); :func:`gaussian_sigma` refuses ``epsilon >= 1`` for it.
    """
    eps = check_epsilon_value(epsilon)
    dlt = check_delta_value(delta)
    delta_ = _check_sensitivity(sensitivity)
    if math.isinf(eps) or delta_ == 0.0:
        return 0.0
    sigma = delta_ * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps
    return _check_sigma(sigma, eps, dlt)


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """Noise standard deviation of the Gaussian mechanism under the chosen calibration.

    Raises
    ------
    InputValidationError
        For ``calibration="classical"`` with ``epsilon >= 1`` (outside its
        proof), naming ``noise_calibration='analytic'`` as the alternative.
    """
    mode = check_calibration(calibration)
    if mode == "analytic":
        return analytic_gaussian_sigma(sensitivity, epsilon, delta)
    eps = check_epsilon_value(epsilon)
    if eps >= 1.0 and not math.isinf(eps):
        raise InputValidationError(
            f"epsilon={epsilon!r} >= 1: the classical Gaussian calibration sigma = Delta sqrt(2 ln(1.25/delta))"
            "/epsilon is proven only for epsilon < 1; use noise_calibration='analytic' (Balle & Wang 2018), "
            "valid for every epsilon"
        )
    return classical_gaussian_sigma(sensitivity, epsilon, delta)


def _check_sensitivity(sensitivity: object) -> float:
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, Real):
        raise InputValidationError(f"sensitivity must be a real number, got {sensitivity!r}")
    value = float(sensitivity)
    if not math.isfinite(value) or value < 0:
        raise InputValidationError(f"sensitivity={sensitivity!r} must be finite and >= 0")
    return value


def _check_sigma(sigma: float, epsilon: float, delta: float) -> float:
    if not math.isfinite(sigma):
        raise InputValidationError(
            f"epsilon={epsilon!r}, delta={delta!r}: the noise standard deviation overflows a float; "
            "use a larger epsilon or delta"
        )
    if sigma == 0.0:
        raise InputValidationError(
            f"epsilon={epsilon!r}, delta={delta!r}: the noise standard deviation underflows to 0; "
            "pass epsilon=inf for no noise or use a smaller epsilon"
        )
    return sigma


def analytic_gaussian_epsilon(sigma: float, sensitivity: float, delta: float) -> float:
    """Smallest ``epsilon`` for which noise ``sigma`` makes the Gaussian mechanism ``(epsilon, delta)``-DP.

    The inverse of :func:`analytic_gaussian_sigma` in ``epsilon`` (Balle &
    Wang 2018, Thm 8: ``delta(epsilon)`` decreases in ``epsilon``), found by
    bisection on ``log epsilon``. Returns ``inf`` for ``sigma = 0`` and 0 when
    even ``epsilon -> 0`` meets ``delta``.
    """
    dlt = check_delta_value(delta)
    delta_ = _check_sensitivity(sensitivity)
    if isinstance(sigma, bool) or not isinstance(sigma, Real) or math.isnan(float(sigma)) or sigma < 0:
        raise InputValidationError(f"sigma={sigma!r} must be a real number >= 0")
    if sigma == 0:
        return math.inf if delta_ > 0 else 0.0
    if delta_ == 0.0:
        return 0.0
    ratio = float(sigma) / delta_
    target = math.log(dlt)
    lo, hi = _LOG_LO, _LOG_HI
    if log_gaussian_delta(ratio, math.exp(lo)) <= target:
        return 0.0
    if log_gaussian_delta(ratio, math.exp(hi)) > target:
        return math.inf
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if log_gaussian_delta(ratio, math.exp(mid)) > target:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)
