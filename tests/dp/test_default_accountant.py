"""Every DP estimator keeps a default accountant of its own (issue 25), as diffprivlib's do.

Given no ``accountant``, an estimator charges one it creates on its first fit
and keeps across its fits, so two fits on the same data show in
``accountant_.spent_budget``. It is per instance (two estimators, or a clone,
never share it), never a parameter (``get_params`` and ``clone`` stay
scikit-learn's), and a fit refused by a given accountant's budget does not
make the estimator look fitted.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone

from mpc_pca import PPPCA, PooledPCA
from protocols.dp.accounting import PrivacyAccountant, PrivacyBudgetExceededError, fit_accountant
from protocols.errors import InputValidationError
from tests.dp.test_estimator_accounting import DP_ESTIMATORS, EPSILON, _parts
from tests.helpers.estimators import name_of


@pytest.mark.parametrize("estimator", DP_ESTIMATORS, ids=name_of)
def test_two_fits_without_an_accountant_show_in_the_estimators_own_spent_budget(estimator):
    model = clone(estimator)
    assert model.get_params()["accountant"] is None
    with pytest.raises(AttributeError, match="has charged no privacy accountant yet"):
        model.accountant_  # noqa: B018
    model.fit(_parts())
    own = model.accountant_
    assert isinstance(own, PrivacyAccountant) and own.unlimited_budget
    assert len(own.spent_budget) == 1 and own.spent_budget[0][0] == pytest.approx(EPSILON, rel=1e-12)
    model.fit(_parts())
    assert model.accountant_ is own and len(own.spent_budget) == 2
    assert own.spent_epsilon == pytest.approx(2 * EPSILON, rel=1e-12)
    assert model.get_params()["accountant"] is None  # the default is no parameter

    other = clone(model)  # scikit-learn's clone: same parameters, a fresh default on its first fit
    assert other.get_params() == model.get_params()
    with pytest.raises(AttributeError):
        other.accountant_  # noqa: B018
    other.fit(_parts())
    assert other.accountant_ is not own and len(other.accountant_.spent_budget) == 1
    assert len(own.spent_budget) == 2


def test_a_given_accountant_is_charged_instead_and_the_default_comes_back_without_it():
    model = clone(DP_ESTIMATORS[0])
    model.fit(_parts())
    own = model.accountant_
    given = PrivacyAccountant(10.0, 1e-3, composition="basic")
    model.set_params(accountant=given).fit(_parts())
    assert model.accountant_ is given and len(given.charges) == 1 and len(own.charges) == 1
    model.set_params(accountant=None).fit(_parts())
    assert model.accountant_ is own and len(own.charges) == 2


def test_a_fit_refused_by_the_budget_leaves_the_estimator_unfitted():
    model = clone(DP_ESTIMATORS[0]).set_params(accountant=PrivacyAccountant(EPSILON / 2, 1e-3, "basic"))
    with pytest.raises(PrivacyBudgetExceededError):
        model.fit(_parts())
    assert not hasattr(model, "components_")
    assert "accountant_" not in vars(model)  # no fitted attribute added


@pytest.mark.parametrize("estimator", [PPPCA(2), PooledPCA(2)], ids=name_of)
def test_estimators_that_are_not_dp_charge_no_accountant(estimator):
    model = clone(estimator).fit(_parts())
    with pytest.raises(AttributeError, match="only the DP estimators"):
        model.accountant_  # noqa: B018


def test_the_unlimited_accountant_records_every_run_even_one_without_privacy():
    acct = PrivacyAccountant.unlimited()
    acct.charge(1.0, 1e-6, rho=0.1, label="a")
    acct.charge(math.inf, 0.0, label="b")
    assert acct.spent_budget == [(1.0, 1e-6), (math.inf, 0.0)] and acct.spent_epsilon == math.inf
    assert repr(acct) == "PrivacyAccountant.unlimited(runs=2)"
    with pytest.raises(InputValidationError, match=r"delta=1\.5 must satisfy"):
        acct.charge(1.0, 1.5)
    with pytest.raises(InputValidationError, match="epsilon budget must be finite"):
        PrivacyAccountant(math.inf, 1e-5)


def test_fit_accountant_refuses_what_is_not_an_accountant():
    class Holder:
        accountant = "budget"

    with pytest.raises(InputValidationError, match="accountant must be a PrivacyAccountant or None"):
        fit_accountant(Holder())
    holder = Holder()
    holder.accountant = None  # type: ignore[assignment]
    first = fit_accountant(holder)
    assert fit_accountant(holder) is first and np.isinf(first.epsilon)
