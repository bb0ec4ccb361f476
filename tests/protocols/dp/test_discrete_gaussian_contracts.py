"""Contracts of the exact discrete Gaussian module (:mod:`protocols.dp.discrete_gaussian`).

Covers:

* input validation of ``bernoulli_exp`` (``num >= 0``, ``den >= 1``) with the
  offending fraction in the message;
* ``check_variance`` keeps an integer variance exact (no rounding through float);
* ``sample_discrete_gaussian``: ``size`` must be a non-negative integer (0 gives an
  empty int64 array, a bool or float is refused), and the variance limit
  ``2^112`` is inclusive (exactly ``2^112`` is sampled, anything above refused);
* ``discrete_gaussian_variance`` against an independent sum of the probability
  mass function: small variances (where the lattice matters), the truncation
  parameter ``terms``, and the documented shortcut (``sigma2`` itself, exactly,
  for ``sigma2 > 100``);
* ``discrete_sum_slack`` against the documented formula
  ``tau = 10 sum_{k=1}^{n-1} exp(-2 pi^2 sigma2 k / (k + 1))``.

Sampling uses a seeded ``random.Random`` in place of the CSPRNG (same algorithm).
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from protocols.dp import discrete_gaussian as dg
from protocols.errors import InputValidationError


@pytest.fixture
def seeded(monkeypatch):
    source = random.Random(8675309)
    monkeypatch.setattr(dg, "_randbelow", source.randrange)
    return source


def pmf_variance(sigma2, support):
    """Var of N_Z(0, sigma2) restricted to ``support``, summed with ``math.fsum``."""
    weights = [math.exp(-(x * x) / (2 * sigma2)) for x in support]
    return math.fsum(x * x * w for x, w in zip(support, weights, strict=True)) / math.fsum(weights)


# -- bernoulli_exp -------------------------------------------------------------------------


@pytest.mark.parametrize(("num", "den"), [(-1, 1), (-3, 2), (1, 0), (0, -1)])
def test_bernoulli_exp_refuses_negative_numerator_or_denominator_below_one(num, den):
    with pytest.raises(InputValidationError) as info:
        dg.bernoulli_exp(num, den)
    message = str(info.value)
    assert "bernoulli_exp needs num >= 0 and den >= 1" in message
    assert f"got {num}/{den}" in message


# -- check_variance ------------------------------------------------------------------------


def test_integer_variance_is_kept_exact_beyond_float_precision():
    big = 2**60 + 1  # not representable as a float
    assert dg.check_variance(big) == Fraction(big)
    assert dg.check_variance(3) == Fraction(3)


# -- sample_discrete_gaussian --------------------------------------------------------------


def test_zero_draws_give_an_empty_int64_array():
    out = dg.sample_discrete_gaussian(4, 0)
    assert out.shape == (0,)
    assert out.dtype == np.int64


@pytest.mark.usefixtures("seeded")
def test_draws_are_int64():
    assert dg.sample_discrete_gaussian(Fraction(9, 4), 5).dtype == np.int64


@pytest.mark.parametrize("bad", [True, False, 2.0, -1, "3"])
def test_size_must_be_a_non_negative_integer(bad):
    with pytest.raises(InputValidationError, match=f"size={bad!r} must be a non-negative integer"):
        dg.sample_discrete_gaussian(4, bad)


@pytest.mark.usefixtures("seeded")
def test_variance_limit_two_to_the_112_is_inclusive():
    draws = dg.sample_discrete_gaussian(2**112, 3)
    assert draws.dtype == np.int64
    assert np.all(np.abs(draws) < 2**62)  # sigma = 2^56: a draw beyond 64 sigma has probability < e^-2000


@pytest.mark.parametrize("above", [2**112 + 1, Fraction(2**112) + Fraction(1, 2**20), 2**113, 2.0**113])
def test_variance_above_two_to_the_112_is_refused(above):
    with pytest.raises(InputValidationError) as info:
        dg.sample_discrete_gaussian(above, 1)
    assert "exceeds 2^112: draws of sigma > 2^56 could leave int64" in str(info.value)


# -- discrete_gaussian_variance ------------------------------------------------------------


@pytest.mark.parametrize("sigma2", [0.25, 0.5, 1.0, 2.0])
def test_variance_of_small_sigma_matches_the_pmf_sum_not_sigma2(sigma2):
    expected = pmf_variance(sigma2, range(-200, 201))
    assert dg.discrete_gaussian_variance(sigma2) == pytest.approx(expected, rel=1e-12)
    if sigma2 <= 0.5:
        assert abs(expected - sigma2) > 1e-3  # the lattice matters here


@pytest.mark.parametrize("sigma2", [0.0025, 1e-4])
def test_variance_of_a_tiny_sigma_is_the_positive_lattice_value(sigma2):
    # only +-1 carry mass besides 0: Var = 2 e^{-1/(2 sigma2)} / (1 + 2 e^{-1/(2 sigma2)})
    tail = 2 * math.exp(-1 / (2 * sigma2))
    result = dg.discrete_gaussian_variance(sigma2)
    assert result == pytest.approx(tail / (1 + tail), rel=1e-12, abs=0.0)
    assert not math.isnan(result)


@pytest.mark.parametrize("sigma2", [30.0, 50.0, 100.0])
def test_variance_of_moderate_sigma_sums_wide_enough(sigma2):
    expected = pmf_variance(sigma2, range(-2000, 2001))
    assert dg.discrete_gaussian_variance(sigma2) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("sigma2", [100.5, 101.0, 400.0, 1e6])
def test_variance_above_one_hundred_is_sigma2_itself_exactly(sigma2):
    assert dg.discrete_gaussian_variance(sigma2) == sigma2


@pytest.mark.parametrize(("sigma2", "terms"), [(4.0, 3), (400.0, 5), (1.0, 1), (0.5, 2)])
def test_terms_truncates_the_support_to_minus_terms_through_terms(sigma2, terms):
    expected = pmf_variance(sigma2, range(-terms, terms + 1))
    assert dg.discrete_gaussian_variance(sigma2, terms=terms) == pytest.approx(expected, rel=1e-12)


# -- discrete_sum_slack --------------------------------------------------------------------


@pytest.mark.parametrize(("sigma2", "n"), [(0.5, 2), (0.5, 4), (0.25, 6), (1.0, 3), (Fraction(1, 3), 5)])
def test_sum_slack_matches_the_documented_formula(sigma2, n):
    s2 = float(sigma2)
    expected = 10.0 * math.fsum(math.exp(-2.0 * math.pi**2 * s2 * k / (k + 1)) for k in range(1, n))
    assert dg.discrete_sum_slack(sigma2, n) == pytest.approx(expected, rel=1e-12)


def test_sum_slack_of_two_summands_is_ten_exp_minus_pi_squared_sigma2():
    assert dg.discrete_sum_slack(0.5, 2) == pytest.approx(10.0 * math.exp(-(math.pi**2) * 0.5), rel=1e-14)


def test_a_single_summand_has_no_slack():
    assert dg.discrete_sum_slack(0.5, 1) == 0.0
