"""Contracts of the Gaussian noise calibration (:mod:`protocols.dp.calibration`).

Covers:

* the validation boundaries of ``epsilon`` (``> 0``; 0 refused), ``delta``,
  the sensitivity (``>= 0``; 0 gives no noise) and ``sigma``, with error
  messages that name the offending value and the limit, and refusal of
  ``bool`` and non-numbers (a string ``"0.5"`` is not silently converted);
* the exact ``delta`` of a Gaussian mechanism against an independent oracle
  (``scipy.stats.norm``), at sensitivities other than 1 (``sigma / Delta`` is
  what matters, not ``sigma * Delta``), and its ``-inf`` / 0 when ``delta``
  underflows;
* ``analytic_gaussian_epsilon``: its special cases (``sigma = 0``,
  ``Delta = 0``, ``sigma`` so large that ``epsilon -> 0`` already meets
  ``delta``, including exactly at that boundary) and its scaling in ``Delta``;
* the classical calibration's "no noise" cases and the default calibration
  of :func:`gaussian_sigma` (analytic, so ``epsilon >= 1`` is accepted);
* the overflow / underflow refusals of the noise scale, naming ``epsilon``
  and ``delta``.
"""

from __future__ import annotations

import math
import re

import pytest
from scipy import stats

from protocols.dp import calibration as cal
from protocols.errors import InputValidationError


def oracle_delta(sigma, sensitivity, epsilon):
    """Balle & Wang 2018, Thm 8, evaluated directly with the normal CDF."""
    a = sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
    b = -sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
    return stats.norm.cdf(a) - math.exp(epsilon) * stats.norm.cdf(b)


# -- epsilon, delta, sensitivity validation ------------------------------------------------


@pytest.mark.parametrize("bad", [True, False, "1.0", None, 1 + 0j])
def test_epsilon_must_be_a_real_number_not_a_bool_or_string(bad):
    with pytest.raises(InputValidationError, match=re.escape(f"epsilon must be a real number, got {bad!r}")):
        cal.check_epsilon_value(bad)


@pytest.mark.parametrize("bad", [0, 0.0, -0.0, -1.5, -math.inf, math.nan])
def test_epsilon_zero_negative_or_nan_is_refused_naming_value_and_limit(bad):
    with pytest.raises(InputValidationError) as info:
        cal.check_epsilon_value(bad)
    message = str(info.value)
    assert f"epsilon={bad!r} is invalid" in message
    assert "it must be > 0 (or inf for no privacy)" in message


@pytest.mark.parametrize("good", [5e-324, 1e-12, 1, 2.5, math.inf])
def test_epsilon_just_above_zero_and_inf_are_accepted(good):
    assert cal.check_epsilon_value(good) == float(good)


@pytest.mark.parametrize("bad", [True, "0.5", None])
def test_delta_must_be_a_real_number_not_a_bool_or_string(bad):
    with pytest.raises(InputValidationError, match=f"delta must be a real number, got {bad!r}"):
        cal.check_delta_value(bad)


@pytest.mark.parametrize("bad", [True, "1.0", None])
def test_sensitivity_must_be_a_real_number(bad):
    with pytest.raises(InputValidationError, match=f"sensitivity must be a real number, got {bad!r}"):
        cal.analytic_gaussian_sigma(bad, 1.0, 1e-5)


@pytest.mark.parametrize("bad", [-1, -1e-300, math.inf, math.nan])
@pytest.mark.parametrize("calibrate", [cal.analytic_gaussian_sigma, cal.classical_gaussian_sigma])
def test_negative_or_non_finite_sensitivity_is_refused_naming_it(calibrate, bad):
    with pytest.raises(InputValidationError) as info:
        calibrate(bad, 0.5, 1e-5)
    assert f"sensitivity={bad!r} must be finite and >= 0" in str(info.value)


@pytest.mark.parametrize("calibrate", [cal.analytic_gaussian_sigma, cal.classical_gaussian_sigma])
def test_zero_sensitivity_needs_no_noise(calibrate):
    assert calibrate(0, 0.5, 1e-5) == 0.0
    assert calibrate(0.0, 0.5, 1e-5) == 0.0


@pytest.mark.parametrize("calibrate", [cal.analytic_gaussian_sigma, cal.classical_gaussian_sigma])
def test_infinite_epsilon_needs_no_noise(calibrate):
    assert calibrate(3.0, math.inf, 1e-5) == 0.0


def test_classical_sigma_matches_the_dwork_roth_formula():
    sigma = cal.classical_gaussian_sigma(2.0, 0.5, 1e-5)
    assert sigma == pytest.approx(2.0 * math.sqrt(2.0 * math.log(1.25e5)) / 0.5, rel=1e-15)


# -- exact delta ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sigma", "sensitivity", "epsilon"), [(2.0, 2.0, 1.0), (3.0, 0.5, 0.3), (1.0, 4.0, 2.0), (10.0, 3.0, 0.1)]
)
def test_gaussian_delta_matches_the_normal_cdf_oracle_at_any_sensitivity(sigma, sensitivity, epsilon):
    assert cal.gaussian_delta(sigma, sensitivity, epsilon) == pytest.approx(
        oracle_delta(sigma, sensitivity, epsilon), rel=1e-9
    )


def test_gaussian_delta_depends_on_sigma_over_sensitivity_only():
    assert cal.gaussian_delta(6.0, 3.0, 0.7) == pytest.approx(cal.gaussian_delta(2.0, 1.0, 0.7), rel=1e-12)


@pytest.mark.parametrize(("sigma", "sensitivity"), [(0, 1.0), (0.0, 1.0), (-1.0, 1.0), (1.0, 0), (1.0, -2.0)])
def test_gaussian_delta_refuses_non_positive_sigma_or_sensitivity_naming_both(sigma, sensitivity):
    with pytest.raises(InputValidationError) as info:
        cal.gaussian_delta(sigma, sensitivity, 1.0)
    assert f"sigma={sigma!r} and sensitivity={sensitivity!r} must be > 0" in str(info.value)


def test_delta_that_underflows_is_exactly_zero_not_nan():
    # sigma / Delta = 1e200: both normal tails underflow; delta is 0 (log delta = -inf), never nan.
    assert cal.log_gaussian_delta(1e200, 1.0) == -math.inf
    assert cal.gaussian_delta(1e200, 1.0, 1.0) == 0.0


# -- analytic epsilon ----------------------------------------------------------------------


def test_no_noise_spends_infinite_epsilon_unless_the_query_is_constant():
    assert cal.analytic_gaussian_epsilon(0, 1.0, 1e-5) == math.inf
    assert cal.analytic_gaussian_epsilon(0.0, 0.5, 1e-5) == math.inf
    assert cal.analytic_gaussian_epsilon(0, 0.0, 1e-5) == 0.0


@pytest.mark.parametrize("sigma", [1, 1.0, 0.5, 3.0])
def test_a_constant_query_spends_no_epsilon_at_any_sigma(sigma):
    assert cal.analytic_gaussian_epsilon(sigma, 0.0, 1e-5) == 0.0


@pytest.mark.parametrize("sigma", [0.5, 1, 1.0, 2.0])
def test_analytic_epsilon_inverts_analytic_sigma_also_below_sigma_one(sigma):
    eps = cal.analytic_gaussian_epsilon(sigma, 1.0, 1e-5)
    assert 0 < eps < math.inf
    assert cal.gaussian_delta(sigma, 1.0, eps) == pytest.approx(1e-5, rel=1e-8)


def test_analytic_epsilon_depends_on_sigma_over_sensitivity():
    eps = cal.analytic_gaussian_epsilon(7.0, 2.0, 1e-6)
    assert eps == pytest.approx(cal.analytic_gaussian_epsilon(3.5, 1.0, 1e-6), rel=1e-12)
    assert cal.analytic_gaussian_sigma(2.0, eps, 1e-6) == pytest.approx(7.0, rel=1e-9)


def test_enough_noise_for_delta_alone_spends_zero_epsilon():
    # sigma / Delta = 1e10: even epsilon -> 0 has delta = 2 Phi(1/(2 sigma)) - 1 ~ 4e-11 <= 0.5.
    assert cal.analytic_gaussian_epsilon(1e10, 1.0, 0.5) == 0.0


def test_delta_exactly_met_as_epsilon_goes_to_zero_gives_epsilon_zero():
    # The boundary of "0 when even epsilon -> 0 meets delta" is inclusive: delta equal to the
    # mechanism's delta at epsilon -> 0 (about 2 Phi(1/2) - 1 for sigma = Delta) is met.
    log_delta = cal.log_gaussian_delta(1.0, math.exp(-700.0))
    delta = math.exp(log_delta)
    assert math.log(delta) == log_delta  # the boundary is representable exactly
    assert delta == pytest.approx(2 * stats.norm.cdf(0.5) - 1, rel=1e-12)
    assert cal.analytic_gaussian_epsilon(1.0, 1.0, delta) == 0.0


@pytest.mark.parametrize("bad", [-1, -0.5, math.nan, True, "1.0", None])
def test_analytic_epsilon_refuses_negative_nan_or_non_numeric_sigma(bad):
    with pytest.raises(InputValidationError) as info:
        cal.analytic_gaussian_epsilon(bad, 1.0, 1e-5)
    assert f"sigma={bad!r} must be a real number >= 0" in str(info.value)


# -- default calibration, classical refusal ------------------------------------------------


def test_default_calibration_is_analytic_and_accepts_epsilon_above_one():
    assert cal.gaussian_sigma(1.0, 0.5, 1e-5) == cal.analytic_gaussian_sigma(1.0, 0.5, 1e-5)
    assert cal.gaussian_sigma(2.0, 3.0, 1e-6) == cal.analytic_gaussian_sigma(2.0, 3.0, 1e-6)


def test_classical_calibration_refusal_names_its_limit_and_the_alternative():
    with pytest.raises(InputValidationError) as info:
        cal.gaussian_sigma(1.0, 1.0, 1e-5, "classical")
    message = str(info.value)
    assert message.startswith("epsilon=1.0 >= 1")
    assert "/epsilon is proven only for epsilon < 1" in message
    assert "use noise_calibration='analytic' (Balle & Wang 2018), valid for every epsilon" in message


# -- noise scale that does not fit a float -------------------------------------------------


@pytest.mark.parametrize("calibrate", [cal.analytic_gaussian_sigma, cal.classical_gaussian_sigma])
def test_overflowing_noise_scale_is_refused_naming_epsilon_and_delta(calibrate):
    with pytest.raises(InputValidationError) as info:
        calibrate(1e308, 1e-10, 1e-5)
    message = str(info.value)
    assert message.startswith("epsilon=1e-10, delta=1e-05: ")
    assert "the noise standard deviation overflows a float; use a larger epsilon or delta" in message


@pytest.mark.parametrize("calibrate", [cal.analytic_gaussian_sigma, cal.classical_gaussian_sigma])
def test_noise_scale_underflowing_to_zero_is_refused_not_returned_as_zero(calibrate):
    with pytest.raises(InputValidationError) as info:
        calibrate(5e-324, 1e10, 0.25)
    message = str(info.value)
    assert message.startswith("epsilon=10000000000.0, delta=0.25: ")
    assert (
        "the noise standard deviation underflows to 0; pass epsilon=inf for no noise or use a smaller epsilon"
        in message
    )
