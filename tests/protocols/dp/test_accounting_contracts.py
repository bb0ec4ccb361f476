"""Contracts of the privacy accountant (:mod:`protocols.dp.accounting`).

Covers:

* basic composition: ``delta`` adds up (a second run that would push the sum
  of ``delta`` past the budget is refused), exactly spending the budget is
  accepted within the documented relative round-off tolerance ``1e-12`` and a
  hair beyond it is refused, pure-DP runs (``delta = 0``) stay possible after
  the whole ``delta`` is spent, and the refusal message states what is left;
* zCDP composition: pure ``epsilon``-DP costs ``rho = epsilon^2 / 2``, stated
  ``rho`` must be finite and ``>= 0`` (0 is accepted; negative, ``inf``,
  ``bool`` refused), the converted ``epsilon`` may equal the budget (within
  ``1e-12``), and the refusal message names the rho and the budget;
* a charge's ``delta`` must satisfy ``0 <= delta < 1``;
* what is recorded: label (default ``"run"``), ``epsilon``, ``delta``, ``rho``;
* ``gaussian_rho`` (``1 / (2 u^2)``) and ``charge_gaussian`` (label passed on,
  a wrong accountant type named in the error).
"""

from __future__ import annotations

import math

import pytest

from protocols.dp.accounting import (
    Charge,
    PrivacyAccountant,
    PrivacyBudgetExceededError,
    charge_gaussian,
    gaussian_rho,
)
from protocols.errors import InputValidationError


def zcdp_epsilon(rho, delta):
    """Bun & Steinke 2016, Prop. 1.3: rho-zCDP is (rho + 2 sqrt(rho ln(1/delta)), delta)-DP."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def test_infinite_epsilon_budget_is_refused_with_its_reason():
    with pytest.raises(InputValidationError) as info:
        PrivacyAccountant(math.inf, 1e-5)
    assert str(info.value) == "an accountant's epsilon budget must be finite"


# -- basic composition ---------------------------------------------------------------------


def test_basic_composition_refuses_a_run_whose_delta_exceeds_what_is_left():
    acct = PrivacyAccountant(2.0, 1e-5, composition="basic")
    acct.charge(0.1, 6e-6, label="first")
    with pytest.raises(PrivacyBudgetExceededError) as info:
        acct.charge(0.1, 6e-6, label="second")
    assert "second needs (epsilon=0.1, delta=6e-06) but only (epsilon=1.9, delta=4e-06) of the budget" in str(
        info.value
    )
    assert [c.label for c in acct.charges] == ["first"]


def test_basic_budget_spent_exactly_up_to_the_round_off_tolerance_is_accepted():
    limit = 1.0 * (1 + 1e-12)
    acct = PrivacyAccountant(1.0, 1e-5, composition="basic")
    acct.charge(limit, 1e-5 * (1 + 1e-12))
    assert acct.spent_epsilon == limit


def test_basic_budget_a_hair_beyond_the_tolerance_is_refused():
    over = math.nextafter(1.0 * (1 + 1e-12), math.inf)
    with pytest.raises(PrivacyBudgetExceededError):
        PrivacyAccountant(1.0, 1e-5, composition="basic").charge(over, 0.0)
    over_delta = math.nextafter(1e-5 * (1 + 1e-12), math.inf)
    with pytest.raises(PrivacyBudgetExceededError):
        PrivacyAccountant(1.0, 1e-5, composition="basic").charge(0.5, over_delta)


def test_pure_dp_runs_remain_possible_after_the_whole_delta_is_spent():
    acct = PrivacyAccountant(2.0, 1e-5, composition="basic")
    acct.charge(1.0, 1e-5)
    acct.charge(0.5, 0.0, label="pure")
    assert acct.spent_epsilon == 1.5
    assert acct.spent_delta == 1e-5


def test_refusal_message_reports_zero_delta_left_not_more():
    acct = PrivacyAccountant(2.0, 1e-5, composition="basic")
    acct.charge(1.0, 1e-5)
    with pytest.raises(PrivacyBudgetExceededError) as info:
        acct.charge(0.5, 1e-7, label="late")
    assert "but only (epsilon=1, delta=0) of the budget (epsilon=2, delta=1e-05)" in str(info.value)


def test_basic_charges_record_label_epsilon_delta_and_a_stated_rho():
    acct = PrivacyAccountant(2.0, 1e-5, composition="basic")
    acct.charge(0.5, 1e-6, rho=0.3, label="pca")
    assert acct.charges == [Charge("pca", 0.5, 1e-6, 0.3)]
    assert acct.spent_rho == 0.3


def test_default_label_is_run():
    acct = PrivacyAccountant(1.0, 1e-5, composition="basic")
    acct.charge(0.5, 0.0)
    assert acct.charges[0].label == "run"
    with pytest.raises(PrivacyBudgetExceededError, match=r"^run needs \(epsilon=0\.9"):
        acct.charge(0.9, 0.0)


# -- delta of a charge ---------------------------------------------------------------------


@pytest.mark.parametrize("composition", ["basic", "zcdp"])
@pytest.mark.parametrize("bad", [1.0, 1, 1.5, -1e-9, math.nan])
def test_a_charge_delta_outside_zero_one_is_invalid_input_not_a_budget_overrun(composition, bad):
    acct = PrivacyAccountant(1.0, 1e-5, composition=composition)
    with pytest.raises(InputValidationError) as info:
        acct.charge(0.1, bad, rho=1e-4)
    assert not isinstance(info.value, PrivacyBudgetExceededError)
    assert f"delta={bad!r} must satisfy 0 <= delta < 1" in str(info.value)
    assert acct.charges == []


# -- zCDP composition ----------------------------------------------------------------------


def test_pure_dp_charge_under_zcdp_costs_half_epsilon_squared():
    acct = PrivacyAccountant(3.0, 1e-5)
    acct.charge(0.5, 0.0, label="laplace")
    assert acct.charges == [Charge("laplace", 0.5, 0.0, 0.125)]
    assert acct.spent_rho == 0.125
    assert acct.spent_epsilon == pytest.approx(zcdp_epsilon(0.125, 1e-5), rel=1e-15)


def test_zcdp_charges_record_label_epsilon_delta_and_rho():
    acct = PrivacyAccountant(3.0, 1e-5)
    acct.charge(0.7, 1e-6, rho=0.02, label="gauss")
    assert acct.charges == [Charge("gauss", 0.7, 1e-6, 0.02)]


def test_zcdp_without_rho_for_an_approximate_dp_charge_names_the_alternative():
    acct = PrivacyAccountant(3.0, 1e-5)
    with pytest.raises(InputValidationError) as info:
        acct.charge(0.5, 1e-6, label="opaque")
    message = str(info.value)
    assert message.startswith("opaque: zCDP accounting needs the mechanism's rho")
    assert message.endswith("; use composition='basic' for (epsilon, delta) mechanisms without one")


def test_a_stated_rho_of_zero_is_accepted_and_costs_nothing():
    acct = PrivacyAccountant(1.0, 1e-5)
    acct.charge(0.5, 1e-6, rho=0.0)
    acct.charge(0.5, 1e-6, rho=0)
    assert acct.spent_rho == 0.0
    assert len(acct.charges) == 2


@pytest.mark.parametrize("bad", [-0.1, -1, math.inf, True, "0.1"])
def test_rho_must_be_a_finite_non_negative_number(bad):
    acct = PrivacyAccountant(1.0, 1e-5)
    with pytest.raises(InputValidationError) as info:
        acct.charge(0.5, 1e-6, rho=bad)
    assert not isinstance(info.value, PrivacyBudgetExceededError)
    assert f"rho={bad!r} must be finite and >= 0" in str(info.value)
    assert acct.charges == []


def test_zcdp_budget_met_exactly_is_accepted():
    rho = 0.05
    acct = PrivacyAccountant(zcdp_epsilon(rho, 1e-5), 1e-5)
    acct.charge(0.9, 1e-6, rho=rho)
    assert acct.spent_rho == rho


def test_zcdp_budget_met_at_the_round_off_tolerance_is_accepted_and_a_hair_below_refused():
    rho = 0.05
    spent = zcdp_epsilon(rho, 1e-5)
    budget = spent / (1 + 1e-12)
    # the largest budget with budget * (1 + 1e-12) == spent exactly (found within a few ulps)
    candidates = [budget]
    for _ in range(4):
        candidates += [math.nextafter(candidates[-1], math.inf)]
        candidates.insert(0, math.nextafter(candidates[0], 0.0))
    at_limit = [b for b in candidates if b * (1 + 1e-12) == spent]
    assert at_limit
    PrivacyAccountant(min(at_limit), 1e-5).charge(0.9, 1e-6, rho=rho)
    below = math.nextafter(min(at_limit), 0.0)
    with pytest.raises(PrivacyBudgetExceededError):
        PrivacyAccountant(below, 1e-5).charge(0.9, 1e-6, rho=rho)


def test_zcdp_refusal_message_names_rho_total_and_budget():
    acct = PrivacyAccountant(1.0, 1e-5)
    acct.charge(0.2, 1e-6, rho=0.01)
    with pytest.raises(PrivacyBudgetExceededError) as info:
        acct.charge(1.0, 1e-6, rho=10.0, label="big")
    message = str(info.value)
    assert message.startswith("big needs rho=10, bringing the total to rho=10.01, i.e. epsilon=")
    assert "at delta=1e-05, beyond the budget epsilon=1 (zCDP composition; rho spent so far 0.01)" in message


# -- Gaussian helpers ----------------------------------------------------------------------


@pytest.mark.parametrize(("u", "rho"), [(0.5, 2.0), (1.0, 0.5), (2.0, 0.125), (10.0, 0.005)])
def test_gaussian_rho_is_one_over_two_u_squared(u, rho):
    assert gaussian_rho(u) == pytest.approx(rho, rel=1e-15)


@pytest.mark.parametrize("u", [0.0, -1.0])
def test_gaussian_rho_without_noise_is_infinite(u):
    assert gaussian_rho(u) == math.inf


def test_charge_gaussian_records_the_label_and_the_gaussian_rho():
    acct = PrivacyAccountant(3.0, 1e-5)
    charge_gaussian(acct, 1.0, 1e-6, 4.0, "pca release")
    assert acct.charges == [Charge("pca release", 1.0, 1e-6, 1.0 / 32.0)]


def test_charge_gaussian_refusal_names_the_label():
    acct = PrivacyAccountant(0.1, 1e-5)
    with pytest.raises(PrivacyBudgetExceededError, match=r"^cov release needs rho="):
        charge_gaussian(acct, 1.0, 1e-6, 1.0, "cov release")


def test_charge_gaussian_without_accountant_does_nothing_and_rejects_other_types():
    assert charge_gaussian(None, 1.0, 1e-6, 1.0, "x") is None
    with pytest.raises(
        InputValidationError, match=r"accountant must be a PrivacyAccountant or None, got 'acct'"
    ):
        charge_gaussian("acct", 1.0, 1e-6, 1.0, "x")
