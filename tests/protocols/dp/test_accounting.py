"""The privacy budget accountant and the local clipping warning."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mpc_pca import PPPCADP, AnalyzeGaussPCA, DPdisPCA
from mpc_pca.validation import RowsClippedWarning
from protocols.dp.accounting import PrivacyAccountant, PrivacyBudgetExceededError, gaussian_rho
from protocols.dp.calibration import analytic_gaussian_sigma
from protocols.errors import InputValidationError


def unit_parts(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 5))
    X /= 1.01 * np.linalg.norm(X, axis=1).max()
    return [X[:150], X[150:]]


def test_basic_composition_refuses_the_run_that_would_overspend():
    acct = PrivacyAccountant(1.0, 1e-5, composition="basic")
    parts = unit_parts()
    AnalyzeGaussPCA(2, epsilon=0.4, delta=4e-6, random_state=0, accountant=acct).fit(parts)
    DPdisPCA(2, epsilon=0.4, delta=4e-6, random_state=0, accountant=acct).fit(parts)
    assert acct.spent_epsilon == pytest.approx(0.8)
    with pytest.raises(PrivacyBudgetExceededError, match=r"needs \(epsilon=0.4.*only \(epsilon=0.2"):
        AnalyzeGaussPCA(2, epsilon=0.4, delta=1e-6, random_state=0, accountant=acct).fit(parts)
    assert len(acct.charges) == 2  # the refused run was not recorded
    AnalyzeGaussPCA(2, epsilon=0.2, delta=2e-6, random_state=0, accountant=acct).fit(parts)


def test_zcdp_composition_of_gaussian_runs_is_tighter_than_basic():
    eps, delta = 0.5, 1e-6
    rho = gaussian_rho(analytic_gaussian_sigma(1.0, eps, delta))
    zcdp = PrivacyAccountant(3.0, 1e-5, composition="zcdp")
    basic = PrivacyAccountant(3.0, 1e-5, composition="basic")
    runs_zcdp = runs_basic = 0
    for _ in range(200):
        try:
            zcdp.charge(eps, delta, rho=rho)
            runs_zcdp += 1
        except PrivacyBudgetExceededError:
            break
    for _ in range(200):
        try:
            basic.charge(eps, delta)
            runs_basic += 1
        except PrivacyBudgetExceededError:
            break
    assert runs_basic == 6
    assert runs_zcdp > runs_basic
    # zCDP arithmetic: total rho + 2 sqrt(rho ln(1/delta)) stays within the budget
    total = runs_zcdp * rho
    assert total + 2 * math.sqrt(total * math.log(1e5)) <= 3.0
    more = (runs_zcdp + 1) * rho
    assert more + 2 * math.sqrt(more * math.log(1e5)) > 3.0


def test_estimators_charge_rho_and_refuse_no_privacy():
    acct = PrivacyAccountant(2.0, 1e-5)
    PPPCADP(2, epsilon=0.5, delta=1e-6, accountant=acct).fit(unit_parts())
    assert acct.spent_rho == pytest.approx(gaussian_rho(analytic_gaussian_sigma(1.0, 0.5, 1e-6)), rel=1e-12)
    with pytest.raises(PrivacyBudgetExceededError, match="epsilon=inf"):
        PPPCADP(2, epsilon=math.inf, accountant=acct).fit(unit_parts())
    with pytest.raises(InputValidationError, match="needs the mechanism's rho"):
        acct.charge(0.5, 1e-6)
    with pytest.raises(InputValidationError, match="composition='renyi'"):
        PrivacyAccountant(1.0, 1e-5, composition="renyi")
    with pytest.raises(InputValidationError, match=r"delta=1\.0"):
        PrivacyAccountant(1.0, 1.0)


def test_dp_family_warns_when_a_site_clips_rows():
    parts = unit_parts()
    parts[0] = parts[0].copy()
    parts[0][:3] *= 10
    with pytest.warns(RowsClippedWarning, match="site 0: 3 of 150 rows had norm > 1"):
        AnalyzeGaussPCA(2, random_state=0).fit(parts)
