"""The analytic Gaussian calibration is exact for tiny epsilon and delta (Balle & Wang 2018, Thm 8).

Oracle: the mechanism's delta at the returned sigma, evaluated in 700-digit
arithmetic (mpmath, a test dependency). Regression: the
float64 evaluation used to subtract two nearly equal log Phi values, and at
``epsilon=1e-12, delta=1e-50`` returned a sigma whose true delta was 1e8
times the requested one.
"""

import contextlib
import math
import warnings

import mpmath
import pytest

from protocols.dp.calibration import analytic_gaussian_epsilon, analytic_gaussian_sigma
from protocols.errors import InputValidationError

CASES = [
    (1e-12, 1e-50),
    (1e-12, 1e-30),
    (1e-10, 1e-50),
    (1e-16, 1e-200),
    (1e-300, 1e-300),
    (1e-200, 1e-5),
    (1e-3, 1e-300),
    (0.5, 1e-5),
    (1e5, 1e-300),
]


def exact_delta(ratio: float, epsilon: float):
    with mpmath.workdps(700):
        r, e = mpmath.mpf(ratio), mpmath.mpf(epsilon)
        return mpmath.ncdf(1 / (2 * r) - e * r) - mpmath.exp(e) * mpmath.ncdf(-1 / (2 * r) - e * r)


@pytest.mark.parametrize(("epsilon", "delta"), CASES)
def test_sigma_is_private_and_smallest_to_one_part_in_a_million(epsilon, delta):
    sigma = analytic_gaussian_sigma(1.0, epsilon, delta)
    assert exact_delta(sigma, epsilon) <= delta * (1 + 1e-9)  # private (up to the bisection's rounding)
    assert exact_delta(sigma * (1 - 1e-6), epsilon) > delta  # and not more noise than needed


@pytest.mark.parametrize(("epsilon", "delta"), CASES[:5])
def test_epsilon_inverts_sigma_where_it_used_to_lose_every_digit(epsilon, delta):
    sigma = analytic_gaussian_sigma(2.0, epsilon, delta)
    assert math.isclose(analytic_gaussian_epsilon(sigma, 2.0, delta), epsilon, rel_tol=1e-6)


def test_a_sigma_beyond_the_float_range_is_refused_not_underestimated():
    """epsilon=1e-310 with delta=1e-307 needs sigma/Delta near 1/(delta sqrt(2 pi)) = 4e306, above e^700 = 1e304."""
    with pytest.raises(
        InputValidationError, match=r"epsilon=1e-310 with delta=1e-307 needs sigma/Delta above e\^700"
    ):
        analytic_gaussian_sigma(1.0, 1e-310, 1e-307)


@pytest.mark.parametrize(
    ("epsilon", "delta"), [(1.0, 1e-5), (1e-300, 1e-300), (1e5, 1e-300), (1e-310, 1e-307)]
)
def test_the_search_raises_no_floating_point_warning(epsilon, delta):
    """The bisection probes sigma/Delta up to e^700, where the quadrature's exponent overflows."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with contextlib.suppress(InputValidationError):
            analytic_gaussian_sigma(1.0, epsilon, delta)
