"""Exact sampling of the discrete Gaussian on the integers, from a CSPRNG.

Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy",
NeurIPS 2020: ``N_Z(0, sigma^2)`` has ``P[X = x] proportional to
exp(-x^2 / (2 sigma^2))`` on the integers. Their sampler uses only integer
(rational) arithmetic and uniform integers, so there is no floating-point
rounding anywhere on the privacy path (the weakness Mironov, CCS 2012,
exploited in floating-point Laplace samplers):

* Alg. 1: ``Bernoulli(exp(-gamma))`` for rational ``gamma`` by the alternating
  series trick (``gamma <= 1``) and ``floor(gamma)`` independent
  ``Bernoulli(exp(-1))`` draws otherwise;
* Alg. 2: the discrete Laplace ``P[X = x] proportional to exp(-|x| / t)``
  for an integer ``t >= 1``;
* Alg. 3: the discrete Gaussian by rejection from the discrete Laplace with
  ``t = floor(sigma) + 1``, accepting ``Y`` with probability
  ``exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))``.

``sigma^2`` is taken as an exact :class:`fractions.Fraction` (a float is
converted exactly). Every uniform integer comes from :func:`secrets.randbelow`
(the operating system's CSPRNG). No seed is accepted: this sampler is for the
privacy path; the seeded float samplers in :mod:`mpc_pca.dp.mechanisms` are
for reproducible studies.

Privacy of the noise (used by :mod:`mpc_pca.pppca.dp_sum`):
``N_Z(0, sigma^2)^d`` added to an integer vector of L2 sensitivity ``Delta``
is ``Delta^2 / (2 sigma^2)``-zCDP (CKS 2020, multivariate discrete Gaussian) and
``(epsilon, delta)``-DP with ``delta`` given by the continuous Gaussian's
exact curve at ``Delta / sigma`` up to a term of order ``exp(-2 pi^2 sigma^2 / ...)``
(CKS 2020; see :func:`discrete_sum_slack` for sums).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from fractions import Fraction
from numbers import Integral, Real

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError

_randbelow = secrets.randbelow

#: ``randbelow(n)``: a uniform integer in ``[0, n)``. ``None`` means :func:`secrets.randbelow`
#: (the private default); a seeded source is for reproducible experiments only.
RandBelow = Callable[[int], int]


def _source(randbelow: RandBelow | None) -> RandBelow:
    return _randbelow if randbelow is None else randbelow


def bernoulli_exp(num: int, den: int, randbelow: RandBelow | None = None) -> bool:
    """``True`` with probability ``exp(-num/den)`` exactly (CKS 2020, Alg. 1), for ``num >= 0``, ``den >= 1``."""
    if num < 0 or den < 1:
        raise InputValidationError(f"bernoulli_exp needs num >= 0 and den >= 1, got {num}/{den}")
    source = _source(randbelow)
    whole, num = divmod(num, den)
    for _ in range(whole):  # exp(-gamma) = exp(-1)^floor(gamma) exp(-(gamma - floor(gamma)))
        if not _bernoulli_exp_le_one(1, 1, source):
            return False
    return _bernoulli_exp_le_one(num, den, source)


def _bernoulli_exp_le_one(num: int, den: int, randbelow: RandBelow) -> bool:
    """Alg. 1 for ``0 <= num/den <= 1``: the first ``K`` with ``Bernoulli(gamma/K) = 0``; output ``K`` odd."""
    k = 1
    while randbelow(den * k) < num:  # Bernoulli(num / (den k))
        k += 1
    return k % 2 == 1


def discrete_laplace(t: int, randbelow: RandBelow | None = None) -> int:
    """One draw of ``P[X = x] proportional to exp(-|x|/t)`` on the integers (CKS 2020, Alg. 2, ``s = 1``)."""
    source = _source(randbelow)
    while True:
        u = source(t)
        if not bernoulli_exp(u, t, source):
            continue
        v = 0
        while bernoulli_exp(1, 1, source):
            v += 1
        x = u + t * v
        negative = source(2) == 1
        if negative and x == 0:
            continue
        return -x if negative else x


def discrete_gaussian(sigma2: Fraction, randbelow: RandBelow | None = None) -> int:
    """One exact draw of ``N_Z(0, sigma2)`` (CKS 2020, Alg. 3)."""
    source = _source(randbelow)
    p, q = sigma2.numerator, sigma2.denominator
    t = math.isqrt(p // q) + 1  # floor(sigma) + 1
    two_pq_t2 = 2 * p * q * t * t
    qt = q * t
    while True:
        y = discrete_laplace(t, source)
        # accept with exp(-(|y| - sigma^2/t)^2 / (2 sigma^2)) = exp(-(|y| q t - p)^2 / (2 p q t^2))
        gap = abs(y) * qt - p
        if bernoulli_exp(gap * gap, two_pq_t2, source):
            return y


def check_variance(sigma2: object) -> Fraction:
    """Validate a variance ``sigma^2 > 0`` and return it as an exact fraction."""
    if isinstance(sigma2, Fraction):
        value = sigma2
    elif isinstance(sigma2, bool) or not isinstance(sigma2, (Real, Integral)):
        raise InputValidationError(f"sigma2 must be a real number, got {sigma2!r}")
    else:
        as_float = float(sigma2)
        if not math.isfinite(as_float):
            raise InputValidationError(f"sigma2={sigma2!r} must be finite")
        value = Fraction(as_float) if not isinstance(sigma2, Integral) else Fraction(int(sigma2))
    if value <= 0:
        raise InputValidationError(f"sigma2={sigma2!r} must be > 0")
    return value


def sample_discrete_gaussian(
    sigma2: object, size: int, randbelow: RandBelow | None = None
) -> NDArray[np.int64]:
    """``size`` independent exact draws of ``N_Z(0, sigma2)`` as int64, from :mod:`secrets` by default.

    Parameters
    ----------
    sigma2 : float, int or Fraction
        The variance parameter ``sigma^2 > 0`` (a float is used exactly as the
        binary fraction it is). The draws' variance is at most ``sigma^2`` and
        within ``exp(-2 pi^2 sigma^2)``-relative of it for ``sigma >= 1``.
    size : int
        Number of draws, ``>= 0``.
    randbelow : callable, optional
        The source of uniform integers; ``None`` (the default, and the only
        private choice) is :func:`secrets.randbelow`. A seeded source makes the
        draws reproducible, for experiments only.

    Raises
    ------
    InputValidationError
        For a non-positive or non-finite ``sigma2``, a negative ``size``, or
        ``sigma`` so large that a draw could leave int64 (``sigma > 2^56``).

    Examples
    --------
    >>> sample_discrete_gaussian(4, 3).shape
    (3,)
    """
    variance = check_variance(sigma2)
    if isinstance(size, bool) or not isinstance(size, Integral) or size < 0:
        raise InputValidationError(f"size={size!r} must be a non-negative integer")
    if variance > Fraction(2) ** 112:
        raise InputValidationError(
            f"sigma2={float(variance):.3g} exceeds 2^112: draws of sigma > 2^56 could leave int64"
        )
    source = _source(randbelow)
    return np.array([discrete_gaussian(variance, source) for _ in range(int(size))], dtype=np.int64)


def discrete_gaussian_variance(sigma2: float, terms: int | None = None) -> float:
    """``Var(N_Z(0, sigma2))`` by summing the probability mass function (for tests and studies).

    For ``sigma2 > 100`` the lattice correction (relative order
    ``sigma2 exp(-2 pi^2 sigma2)``, CKS 2020) is below ``1e-300`` and
    ``sigma2`` itself is returned.
    """
    s2 = float(check_variance(sigma2))
    if s2 > 100.0 and terms is None:
        return s2
    bound = math.ceil(40.0 * math.sqrt(s2)) + 2 if terms is None else terms
    x = np.arange(-bound, bound + 1, dtype=np.float64)
    weights = np.exp(-(x**2) / (2.0 * s2))
    return float(np.sum(x**2 * weights) / np.sum(weights))


def discrete_sum_slack(sigma2: float, n_summands: int) -> float:
    """``tau`` of the sum of ``n`` independent ``N_Z(0, sigma2)``: how far it is from ``N_Z(0, n sigma2)``.

    Kairouz, Liu & Steinke, "The Distributed Discrete Gaussian Mechanism for
    Federated Learning with Secure Aggregation", ICML 2021 (constants as recalled here;
    check them against the paper before relying on the slack near sigma2 ~ 1):
    ``tau = 10 sum_{k=1}^{n-1} exp(-2 pi^2 sigma2 k / (k + 1))``. For
    ``sigma2 >= 1`` every term is below ``exp(-pi^2) ~ 5e-5`` and for the
    ring-scale variances used here (``sigma2 > 10^6``) it underflows to 0.
    """
    s2 = float(check_variance(sigma2))
    return 10.0 * sum(math.exp(-2.0 * math.pi**2 * s2 * k / (k + 1)) for k in range(1, int(n_summands)))
