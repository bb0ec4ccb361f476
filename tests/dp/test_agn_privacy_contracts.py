"""Contracts of the (cape)AGN budget split and noise scales (:mod:`mpc_pca.dp.agn_privacy`).

Covers:

* ``check_budget_split``: strictly between 0 and 1 (0 and 1 refused), a string
  is refused rather than converted, the message names the value;
* ``check_release_calibration`` checks the calibration the caller chose:
  ``"classical"`` is refused when a release's ``epsilon_i >= 1``;
* ``AGNBudget``: the MOG sensitivities use the noise ``sigma`` (``Delta3 =
  (2 + 6 D sigma^2)/N``), ``M2`` is calibrated on ``Delta2`` (not ``Delta3``),
  and ``M3`` on ``||W||_2^3 Delta3`` with the budget's calibration, against
  the closed forms of :mod:`protocols.dp.calibration`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpc_pca.dp.agn_privacy import AGNBudget, check_budget_split, check_release_calibration
from mpc_pca.dp.mechanisms import Neighbour
from protocols.dp.calibration import analytic_gaussian_sigma, classical_gaussian_sigma
from protocols.errors import InputValidationError


@pytest.mark.parametrize("bad", [0, 0.0, 1, 1.0, -0.5, 1.5, math.nan, "0.5", True, None])
def test_budget_split_must_lie_strictly_between_zero_and_one(bad):
    with pytest.raises(InputValidationError, match=f"budget_split={bad!r} must lie strictly between 0 and 1"):
        check_budget_split(bad)


@pytest.mark.parametrize("good", [1e-9, 0.25, 0.5, 0.999])
def test_budget_split_inside_the_interval_is_returned_as_float(good):
    assert check_budget_split(good) == good


def test_release_calibration_refuses_classical_when_a_release_has_epsilon_at_least_one():
    # epsilon = 3 split in halves: each release has epsilon_i = 1.5, outside the classical proof.
    with pytest.raises(InputValidationError) as info:
        check_release_calibration("classical", 3.0, 1e-5, 0.5)
    assert "epsilon=1.5 >= 1" in str(info.value)
    # the uneven split 0.2 gives 0.6 and 2.4: the second release is refused
    with pytest.raises(InputValidationError, match=r"epsilon=2\.4"):
        check_release_calibration("classical", 3.0, 1e-5, 0.2)


def test_release_calibration_accepts_classical_below_one_and_analytic_anywhere():
    assert check_release_calibration("classical", 1.5, 1e-5, 0.5) == "classical"
    assert check_release_calibration("analytic", 30.0, 1e-5, 0.5) == "analytic"


def mog_budget(calibration="analytic"):
    return AGNBudget("mog", 3, 0.5, 1.0, 1e-5, Neighbour.REPLACE_ONE, 0.5, calibration)


def test_mog_sensitivities_include_the_noise_sigma():
    delta2, delta3 = mog_budget().sensitivities(10)
    assert delta2 == pytest.approx(math.sqrt(2.0) / 10, rel=1e-15)
    assert delta3 == pytest.approx((2.0 + 6.0 * 3 * 0.25) / 10, rel=1e-15)


@pytest.mark.parametrize("calibration", ["analytic", "classical"])
def test_m2_scale_is_calibrated_on_delta2_with_half_the_budget(calibration):
    budget = mog_budget(calibration)
    calibrate = analytic_gaussian_sigma if calibration == "analytic" else classical_gaussian_sigma
    assert budget.m2_scale(10) == pytest.approx(calibrate(math.sqrt(2.0) / 10, 0.5, 5e-6), rel=1e-12)


@pytest.mark.parametrize("calibration", ["analytic", "classical"])
def test_m3_scale_uses_the_whitened_sensitivity_and_the_budget_calibration(calibration):
    budget = mog_budget(calibration)
    whitening = np.diag([2.0, 1.0, 0.5])  # ||W||_2 = 2
    calibrate = analytic_gaussian_sigma if calibration == "analytic" else classical_gaussian_sigma
    expected = calibrate(8.0 * (2.0 + 6.0 * 3 * 0.25) / 10, 0.5, 5e-6)
    assert budget.m3_scale(10, whitening) == pytest.approx(expected, rel=1e-12)
